"""From the tensors of an adapter file to its modules, full tensors and trainable count.

peft saves, per adapted module, ``<module>.lora_A.weight`` (r × d_in) and
``<module>.lora_B.weight`` (d_out × r); an embedding gets
``lora_embedding_A`` (r × rows) and ``lora_embedding_B`` (dim × r); DoRA adds
``lora_magnitude_vector`` (d_out), ``lora_bias`` a ``lora_B.bias`` (d_out).
Every name starts with ``base_model.model.``. Tensors saved whole are the
modules of ``modules_to_save``, trained biases (``bias: all|lora_only``),
trainable tokens, and embeddings peft saves beside the adapter when they are
targeted or were resized: those last are a copy of the base's, not trained.
The trainable count is then exactly what ``get_nb_trainable_parameters()``
reports on the model peft builds, and is checked against it in the tests.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

from evalkit.provenance.adapter_config import AdapterConfig, pattern_key
from evalkit.provenance.safetensors_file import SafetensorsHeader, TensorInfo, all_zero
from evalkit.records._card import FullTensor, ModuleInfo, Problem

PREFIX = "base_model.model."
# suffix -> part of a LoRA module
_PARTS = {
    ".lora_A.weight": "A",
    ".lora_B.weight": "B",
    ".lora_B.bias": "B_bias",
    ".lora_embedding_A": "A",
    ".lora_embedding_B": "B",
    ".lora_magnitude_vector": "magnitude",
    ".lora_magnitude_vector.weight": "magnitude",
}
MAX_NAMED = 3


@dataclass
class _Parts:
    embedding: bool = False
    tensors: dict[str, TensorInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class ModuleReport:
    """The modules, full tensors and problems read from the tensors."""

    modules: list[ModuleInfo]
    full_tensors: list[FullTensor]
    trainable_params: int
    problems: list[Problem]


def short_name(name: str) -> str:
    """A tensor's name without peft's ``base_model.model.`` prefix."""
    return name.removeprefix(PREFIX)


def _split(name: str) -> tuple[str, str] | None:
    for suffix, part in _PARTS.items():
        if name.endswith(suffix):
            return name[: -len(suffix)], part
    return None


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def _full_role(name: str, config: AdapterConfig) -> tuple[str, bool]:
    for module in config.modules_to_save or []:
        if re.match(rf"(^|.*\.){re.escape(module)}($|\..*)", name):
            return "modules_to_save", True
    if "trainable_tokens" in name:
        return "trainable_tokens", True
    if name.endswith(".bias") and config.bias in ("all", "lora_only"):
        return "bias", True
    return "saved_embedding", False


def _module(
    name: str, parts: _Parts, config: AdapterConfig, problems: list[Problem]
) -> ModuleInfo | None:
    a, b = parts.tensors.get("A"), parts.tensors.get("B")
    if a is None or b is None:
        missing = "lora_A" if a is None else "lora_B"
        problems.append(
            Problem(
                code="rank_mismatch",
                severity="error",
                message=f"module {name} has no {missing} tensor; the file is incomplete, "
                "save the adapter again",
            )
        )
        return None
    kind: Literal["linear", "embedding", "conv"] = (
        "embedding" if parts.embedding else ("conv" if len(a.shape) > 2 else "linear")
    )
    r = a.shape[0] if a.shape else 0
    d_in = 1
    for size in a.shape[1:]:
        d_in *= size
    d_out = b.shape[0] if b.shape else 0
    expected_r, alpha = config.rank_and_alpha(name)
    b_rank = b.shape[1] if len(b.shape) > 1 else None
    if b_rank != r:
        problems.append(
            Problem(
                code="rank_mismatch",
                severity="error",
                message=f"module {name}: lora_A has rank {r} but lora_B {list(b.shape)}; "
                "the two halves do not fit, save the adapter again",
            )
        )
    elif config.is_lora and r != expected_r:
        in_pattern = pattern_key(config.rank_pattern, name) in config.rank_pattern
        source = "rank_pattern" if in_pattern else "r"
        problems.append(
            Problem(
                code="rank_mismatch",
                severity="error",
                message=f"module {name}: the tensors have rank {r}, but adapter_config.json "
                f"says {expected_r} ({source}); the config does not describe these weights",
            )
        )
    magnitude = parts.tensors.get("magnitude")
    if magnitude is not None and magnitude.numel != d_out:
        problems.append(
            Problem(
                code="rank_mismatch",
                severity="error",
                message=f"module {name}: the DoRA magnitude vector has {magnitude.numel} values "
                f"for {d_out} outputs",
            )
        )
    return ModuleInfo(
        name=name,
        kind=kind,
        d_in=d_in,
        d_out=d_out,
        r=r,
        lora_alpha=alpha,
        scaling=config.scaling(r, alpha),
        params=sum(info.numel for info in parts.tensors.values()),
    )


def read_modules(
    header: SafetensorsHeader, view: memoryview, config: AdapterConfig
) -> ModuleReport:
    """Group the tensors into modules and full tensors; check ranks and emptiness."""
    if not config.is_lora:  # what another peft method saves is what it trains
        tensors = [
            FullTensor(name=short_name(key), shape=list(info.shape), dtype=info.dtype,
                       params=info.numel, role="adapter", trainable=True)
            for key, info in header.tensors.items()
        ]  # fmt: skip
        return ModuleReport([], tensors, sum(t.params for t in tensors), [])
    grouped: dict[str, _Parts] = {}
    full: list[FullTensor] = []
    problems: list[Problem] = []
    for key, info in header.tensors.items():
        name = short_name(key)
        split = _split(name)
        if split is not None:
            module, part = split
            parts = grouped.setdefault(module, _Parts())
            parts.tensors[part] = info
            parts.embedding = parts.embedding or "lora_embedding_" in name
            continue
        role, trainable = _full_role(name, config)
        if "lora_" in name:  # a LoRA tensor of a kind this card does not know
            role, trainable = "modules_to_save", True
            problems.append(
                Problem(
                    code="unknown_config_key",
                    severity="warning",
                    message=f"tensor {name} is a LoRA tensor of an unknown kind; it is counted "
                    "as trainable but its module is not described",
                )
            )
        full.append(
            FullTensor(
                name=name,
                shape=list(info.shape),
                dtype=info.dtype,
                params=info.numel,
                role=role,  # type: ignore[arg-type]
                trainable=trainable,
            )
        )
    modules = []
    for module_name in sorted(grouped):
        found = _module(module_name, grouped[module_name], config, problems)
        if found is not None:
            modules.append(found)
    problems += _emptiness(grouped, header, view)
    count = sum(m.params for m in modules) + sum(t.params for t in full if t.trainable)
    return ModuleReport(modules, full, count, problems)


def _emptiness(
    grouped: dict[str, _Parts], header: SafetensorsHeader, view: memoryview
) -> list[Problem]:
    """``empty_adapter``: no LoRA tensors, or every module's update B·A is zero."""
    if not grouped:
        return [
            Problem(
                code="empty_adapter",
                severity="error",
                message="the weights file holds no LoRA tensor (lora_A/lora_B); nothing adapts "
                "the base",
            )
        ]
    zero = []
    for name, parts in grouped.items():
        halves = [parts.tensors[p] for p in ("A", "B") if p in parts.tensors]
        if any(all_zero(view, header, info) for info in halves):
            zero.append(name)
    if len(zero) == len(grouped):
        return [
            Problem(
                code="empty_adapter",
                severity="error",
                message=f"every one of the {len(grouped)} modules has an all-zero lora_B (or "
                "embedding A), so the adapter changes nothing: it was saved before training",
            )
        ]
    return []
