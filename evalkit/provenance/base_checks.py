"""``evalkit card --base DIR``: the adapter checked against a local base model folder.

Only the base's config.json and its weights' safetensors headers are read (a
7B base's headers are a few hundred kilobytes), never its tensors. The
module names of the base are those of its weights with at least two
dimensions; peft's target matching (``check_target_module_exists``: a list
entry matches a name or its end after a dot, a string is a full regular
expression; ``exclude_modules``, ``modules_to_save`` and
``layers_to_transform`` applied) is repeated on them to say which modules the
adapter should adapt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import CorruptWeights, NotAnAdapter, UnreadableFile
from evalkit.provenance.adapter_config import INCLUDE_LINEAR_LAYERS, AdapterConfig
from evalkit.provenance.artifacts import weight_files
from evalkit.provenance.folder_files import read_json_file, tokenizer_info
from evalkit.provenance.safetensors_file import (
    ADAPTER_REPAIR,
    FLOAT_DTYPES,
    SafetensorsHeader,
    read_header,
)
from evalkit.records._card import ModuleInfo, Problem, TokenizerInfo

EMBEDDING_NAMES = ("embed_tokens", "wte", "word_embeddings", "embed_in", "embeddings")
OUTPUT_NAMES = ("lm_head", "embed_out")
MAX_NAMED = 3


@dataclass(frozen=True)
class BaseWeight:
    """Shape and dtype of one weight of the base."""

    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class BaseFolder:
    """What the checks need from a local base model folder."""

    path: Path
    config: dict[str, Any]
    config_sha256: str
    quantization: str | None
    weights: dict[str, BaseWeight]
    """Every ``<module>.weight`` with at least two dimensions, by module name."""
    tokenizer: TokenizerInfo | None


def quantization_of(config: dict[str, Any]) -> str | None:
    """A short name of a config's ``quantization_config`` (null when there is none)."""
    quant = config.get("quantization_config")
    if not isinstance(quant, dict):
        return None
    method = str(quant.get("quant_method") or "unknown")
    if method == "bitsandbytes":
        if quant.get("load_in_4bit"):
            name = f"bitsandbytes-4bit-{quant.get('bnb_4bit_quant_type') or 'fp4'}"
            return name + ("-dq" if quant.get("bnb_4bit_use_double_quant") else "")
        if quant.get("load_in_8bit"):
            return "bitsandbytes-8bit"
    bits = quant.get("bits")
    return f"{method}-{bits}bit" if bits else method


BASE_REPAIR = "the base's weights are damaged: copy or save the base model again"


def _weight_files(folder: Path) -> list[Path]:
    """The base's safetensors weight files, as transformers finds them (index or single)."""
    return [path for path in weight_files(folder) if path.suffix == ".safetensors"]


def _base_header(path: Path) -> SafetensorsHeader:
    """A base weight file's header; a damaged one is the base's to fix, not the adapter's."""
    try:
        return read_header(path)
    except CorruptWeights as error:
        raise CorruptWeights(error.message.replace(ADAPTER_REPAIR, BASE_REPAIR)) from error


def read_base(folder: Path) -> BaseFolder:
    """Read a base model folder's config, weight headers and tokenizer."""
    from evalkit.io import sha256_file
    from evalkit.provenance.folder_files import hash_files

    if not folder.is_dir():
        raise UnreadableFile(
            f"{folder}: no such folder; {{base}} takes a local model folder (config.json and "
            "*.safetensors), never a hub id: nothing is downloaded",
            refs=["base"],
        )
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise NotAnAdapter(
            f"{folder}: no config.json, so {{base}} is not a model folder", refs=["base"]
        )
    config = read_json_file(config_path)
    files = _weight_files(folder)
    if not files:
        raise NotAnAdapter(
            f"{folder}: no *.safetensors weights; {{base}} needs a model saved with safetensors "
            "(save_pretrained's default)",
            refs=["base"],
        )
    weights = {}
    for path in files:
        if not path.is_file():
            raise UnreadableFile(f"{path}: listed in model.safetensors.index.json but missing")
        for name, info in _base_header(path).tensors.items():
            if name.endswith(".weight") and len(info.shape) >= 2:
                weights[name.removesuffix(".weight")] = BaseWeight(info.shape, info.dtype)
    return BaseFolder(
        path=folder,
        config=config if isinstance(config, dict) else {},
        config_sha256=sha256_file(config_path),
        quantization=quantization_of(config) if isinstance(config, dict) else None,
        weights=weights,
        tokenizer=tokenizer_info(folder, hash_files(folder)),
    )


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _layer_allowed(config: AdapterConfig, key: str) -> bool:
    indexes = config.layers_to_transform
    if indexes is None or indexes == []:
        return True
    patterns = config.layers_pattern
    match = None
    if not patterns:
        match = re.match(r".*?\.[^.]*\.(?P<idx>\d+)\.", key)
    else:
        for pattern in [patterns] if isinstance(patterns, str) else patterns:
            match = re.match(rf"(?:^|.*?\.){pattern}\.(?P<idx>\d+)\.", key)
            if match:
                break
    if match is None:
        return False
    index = int(match.group("idx"))
    return index == indexes if isinstance(indexes, int) else index in indexes


def _targeted(config: AdapterConfig, key: str, output_layers: set[str]) -> bool:
    """peft's check_target_module_exists, on a module name."""
    exclude = config.exclude_modules
    if exclude and (
        re.fullmatch(exclude, key)
        if isinstance(exclude, str)
        else key in exclude or any(key.endswith(f".{e}") for e in exclude)
    ):
        return False
    if any(re.match(rf"(^|.*\.){re.escape(m)}($|\..*)", key) for m in config.modules_to_save or []):
        return False
    targets = config.target_modules
    if targets is None:
        return False
    if targets == INCLUDE_LINEAR_LAYERS:
        last = _last(key)
        return key not in output_layers and not any(e in last for e in EMBEDDING_NAMES)
    if isinstance(targets, str):
        return re.fullmatch(targets, key) is not None
    if key in targets:
        return True
    return any(key.endswith(f".{t}") for t in targets) and _layer_allowed(config, key)


def resolve_targets(config: AdapterConfig, base: BaseFolder) -> set[str]:
    """The base modules the adapter's ``target_modules`` name."""
    output_layers = {name for name in base.weights if _last(name) in OUTPUT_NAMES}
    candidates = base.weights
    if config.target_modules == INCLUDE_LINEAR_LAYERS:  # 2-D weights only: Linear and Conv1D
        candidates = {k: w for k, w in base.weights.items() if len(w.shape) == 2}
    return {name for name in candidates if _targeted(config, name, output_layers)}


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def _expected_shape(module: ModuleInfo, config: AdapterConfig, ndim: int) -> tuple[int, int]:
    """(first, second) dimension the base weight should have for this module."""
    if module.kind == "embedding" or config.fan_in_fan_out:
        return module.d_in, module.d_out
    return module.d_out, module.d_in


def shape_problems(
    modules: list[ModuleInfo], config: AdapterConfig, base: BaseFolder
) -> list[Problem]:
    """``shape_mismatch``: a module's d_in/d_out differ from the base weight's header."""
    problems = []
    for module in modules:
        weight = base.weights.get(module.name)
        if weight is None or weight.dtype not in FLOAT_DTYPES:
            continue  # absent: a coverage problem; packed (quantized): no comparable shape
        expected = _expected_shape(module, config, len(weight.shape))
        if module.kind == "conv":
            actual: tuple[int, ...] = (weight.shape[0], _prod(weight.shape[1:]))
        else:
            actual = weight.shape[:2]
        if tuple(actual) != expected:
            problems.append(
                Problem(
                    code="shape_mismatch",
                    severity="error",
                    message=f"module {module.name}: the adapter is {module.d_in} in × "
                    f"{module.d_out} out, but the base weight is {list(weight.shape)}; this "
                    f"adapter was trained on another base (or another size of it)",
                )
            )
    return problems


def _prod(values: tuple[int, ...]) -> int:
    total = 1
    for value in values:
        total *= value
    return total


def coverage_problems(
    modules: list[ModuleInfo], config: AdapterConfig, base: BaseFolder
) -> list[Problem]:
    """``coverage``: the targets resolved on the base differ from the adapted modules."""
    adapted = {module.name for module in modules}
    absent = sorted(adapted - set(base.weights))
    problems = []
    if absent:
        problems.append(
            Problem(
                code="coverage",
                severity="error",
                message=f"{len(absent)} adapted modules are not in the base: {_named(absent)}; "
                "the base has another architecture or naming",
            )
        )
    if config.target_modules is None:
        return problems
    resolved = resolve_targets(config, base)
    untouched = sorted(resolved - adapted)
    extra = sorted(adapted - resolved - set(absent))
    if untouched:
        problems.append(
            Problem(
                code="coverage",
                severity="error",
                message=f"target_modules names {len(untouched)} modules of the base that the "
                f"weights do not adapt: {_named(untouched)}",
            )
        )
    if extra:
        problems.append(
            Problem(
                code="coverage",
                severity="error",
                message=f"the weights adapt {len(extra)} modules that target_modules does not "
                f"name on this base: {_named(extra)}",
            )
        )
    return problems


def base_embedding_rows(base: BaseFolder) -> int | None:
    """Rows of the base's input embedding (its header, else config.json's vocab_size)."""
    for name, weight in sorted(base.weights.items()):
        if _last(name) in EMBEDDING_NAMES[:4]:
            return weight.shape[0]
    size = base.config.get("vocab_size")
    return size if isinstance(size, int) else None
