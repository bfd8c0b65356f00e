"""``adapter_config.json`` of any peft version, read into the settings the card reports.

peft has added keys release after release (``rank_pattern`` 0.7, ``use_rslora``
0.8, ``use_dora`` 0.9, ``lora_bias`` and ``exclude_modules`` 0.14, …) and never
writes an absent one, so every key is read with the default peft uses for it.
Keys the card does not account for are checked against the defaults peft
gives them: at their default they change nothing; otherwise the card cannot
say what the adapter does, and says so (``unknown_config_key``).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import MalformedFile, NotAnAdapter, UnreadableFile
from evalkit.provenance.records import HEX_COMMIT

CONFIG_NAME = "adapter_config.json"
LORA_TYPES = {"LORA"}
LORA_BIAS = {"none", "all", "lora_only"}
INCLUDE_LINEAR_LAYERS = "all-linear"

# Keys the card reads and reports (the ``lora`` and ``base`` blocks, and identity).
ACCOUNTED = {
    "peft_type", "task_type", "peft_version", "base_model_name_or_path", "revision",
    "r", "lora_alpha", "lora_dropout", "init_lora_weights", "use_dora", "use_rslora",
    "bias", "target_modules", "rank_pattern", "alpha_pattern", "modules_to_save",
    "layers_to_transform", "layers_pattern", "exclude_modules", "fan_in_fan_out", "lora_bias",
}  # fmt: skip
# Keys that change nothing about the weights or what a reload computes.
BOOKKEEPING = {"auto_mapping", "inference_mode", "megatron_core", "runtime_config"}
# Keys the card does not account for, with the default peft writes for them.
KNOWN_DEFAULTS: dict[str, Any] = {
    "megatron_config": None, "loftq_config": {}, "eva_config": None, "corda_config": None,
    "lora_ga_config": None, "velora_config": None, "monteclora_config": None,
    "alora_invocation_tokens": None, "use_qalora": False, "qalora_group_size": 16,
    "layer_replication": None, "target_parameters": None, "use_bdlora": None,
    "arrow_config": None, "kasa_config": None, "trainable_token_indices": None,
    "ensure_weight_tying": False, "enable_lora": None, "merge_weights": False,
}  # fmt: skip


@dataclass(frozen=True)
class AdapterConfig:
    """The settings of one adapter folder, every key at peft's default when absent."""

    path: Path
    raw: dict[str, Any]
    peft_type: str
    task_type: str | None
    peft_version: str | None
    base_id: str | None
    revision: str | None
    r: int
    lora_alpha: float
    lora_dropout: float
    init_lora_weights: bool | str
    use_dora: bool
    use_rslora: bool
    bias: str
    target_modules: list[str] | str | None
    rank_pattern: dict[str, int]
    alpha_pattern: dict[str, float]
    modules_to_save: list[str] | None
    layers_to_transform: list[int] | int | None
    layers_pattern: list[str] | str | None
    exclude_modules: list[str] | str | None
    fan_in_fan_out: bool
    lora_bias: bool

    @property
    def is_lora(self) -> bool:
        """A LoRA-family adapter (LoRA, rsLoRA, DoRA, PiSSA, …), which the card describes fully."""
        return self.peft_type in LORA_TYPES

    @property
    def scaling_rule(self) -> str:
        """``alpha/sqrt(r)`` under rsLoRA, else the classic ``alpha/r``."""
        return "alpha/sqrt(r)" if self.use_rslora else "alpha/r"

    def rank_and_alpha(self, module: str) -> tuple[int, float]:
        """r and alpha of one module, ``rank_pattern``/``alpha_pattern`` applied as peft does."""
        r_key = pattern_key(self.rank_pattern, module)
        alpha_key = pattern_key(self.alpha_pattern, module)
        return self.rank_pattern.get(r_key, self.r), self.alpha_pattern.get(
            alpha_key, self.lora_alpha
        )

    def scaling(self, r: int, alpha: float) -> float:
        """The factor LoRA's update is multiplied by."""
        if r <= 0:
            return 0.0
        return alpha / math.sqrt(r) if self.use_rslora else alpha / r

    def unknown_values(self) -> list[tuple[str, Any]]:
        """Keys the card does not account for that hold a value other than peft's default."""
        found = []
        for key, value in sorted(self.raw.items()):
            if key in ACCOUNTED or key in BOOKKEEPING:
                continue
            if key in KNOWN_DEFAULTS:
                if value != KNOWN_DEFAULTS[key] and value not in (None, {}, []):
                    found.append((key, value))
            elif value not in (None, False, {}, [], ""):
                found.append((key, value))
        return found


def pattern_key(patterns: dict[str, Any], module: str) -> str:
    """The ``rank_pattern``/``alpha_pattern`` key that names a module (peft's get_pattern_key).

    A key matches when it is a regular expression for the module name's end
    after a dot (``v_proj``, ``layers.0.self_attn.q_proj``); the first
    matching key in the file's order wins. No match returns the module name.
    """
    for key in patterns:
        try:
            if re.match(rf"(.*\.)?({key})$", module):
                return key
        except re.error:
            continue
    return module


def _bad(path: Path, key: str, expected: str, value: Any) -> MalformedFile:
    """A key of the wrong type: a hand edit, or a file peft did not write (and would misread)."""
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return MalformedFile(
        f"{path}: key {key!r} must be {expected}, not {shown}; fix the value or save the "
        "adapter again"
    )


def _number(path: Path, raw: dict[str, Any], key: str, default: float) -> float:
    value = raw.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _bad(path, key, "a number", value)
    return value


def _flag(path: Path, raw: dict[str, Any], key: str) -> bool:
    """A true/false key (absent or null: false); the string "false" is not false."""
    value = raw.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise _bad(path, key, "true or false", value)
    return value


def _text(path: Path, raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is not None and not isinstance(value, str):
        raise _bad(path, key, "a string or null", value)
    return value


def _pattern(path: Path, raw: dict[str, Any], key: str) -> dict[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, dict) or not all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in value.values()
    ):
        raise _bad(path, key, "a mapping of module patterns to numbers", value)
    return dict(value)


def _regex(path: Path, key: str, pattern: str) -> str:
    """A pattern peft matches with ``re``: an invalid one would stop peft from loading."""
    try:
        re.compile(pattern)
    except re.error as error:
        raise MalformedFile(
            f"{path}: key {key!r} is not a valid regular expression ({pattern!r}: {error}); "
            "fix the pattern or save the adapter again"
        ) from error
    return pattern


def _names(path: Path, raw: dict[str, Any], key: str) -> list[str] | str | None:
    value = raw.get(key)
    if value is None:
        return value
    if isinstance(value, str):
        return value if value == INCLUDE_LINEAR_LAYERS else _regex(path, key, value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return sorted(set(value))
    raise _bad(path, key, "a list of module names or a regex string", value)


def _name_list(path: Path, raw: dict[str, Any], key: str) -> list[str] | None:
    """``modules_to_save``: a list (a bare string would be read letter by letter)."""
    value = raw.get(key)
    if not value:
        return None
    if not (isinstance(value, list) and all(isinstance(item, str) for item in value)):
        raise _bad(path, key, "a list of module names", value)
    return sorted(value)


def _layers(path: Path, raw: dict[str, Any]) -> list[int] | int | None:
    value = raw.get("layers_to_transform")
    if value is None or (type(value) is int and value >= 0):
        return value
    if isinstance(value, list) and all(type(item) is int and item >= 0 for item in value):
        return value
    raise _bad(path, "layers_to_transform", "a layer index or a list of them", value)


def _layers_pattern(path: Path, raw: dict[str, Any]) -> list[str] | str | None:
    value = raw.get("layers_pattern")
    if value is None:
        return value
    if isinstance(value, str):
        return _regex(path, "layers_pattern", value)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return [_regex(path, "layers_pattern", item) for item in value]
    raise _bad(path, "layers_pattern", "a module name or a list of them", value)


def _lora_checks(path: Path, raw: dict[str, Any], r: float, bias: str) -> None:
    """What peft itself refuses in a LoRA config: a rank below 1, an unknown bias mode."""
    if not float(r).is_integer() or r < 1:
        raise _bad(path, "r", "a positive integer", raw.get("r"))
    if bias not in LORA_BIAS:
        raise _bad(path, "bias", "one of " + ", ".join(sorted(LORA_BIAS)), bias)


def read_config(folder: Path) -> AdapterConfig:
    """Read and check ``adapter_config.json`` in an adapter folder."""
    if not folder.exists():
        raise UnreadableFile(f"{folder}: no such folder; pass a PEFT adapter folder")
    if not folder.is_dir():
        raise NotAnAdapter(
            f"{folder}: is a file; pass the adapter folder (with {CONFIG_NAME}), "
            "as save_pretrained writes it"
        )
    path = folder / CONFIG_NAME
    if not path.is_file():
        hint = (
            " (a full model folder? pass it as {base})" if (folder / "config.json").exists() else ""
        )
        raise NotAnAdapter(
            f"{folder}: no {CONFIG_NAME}, so this is not a PEFT adapter folder{hint}; "
            "pass the folder that save_pretrained wrote",
            refs=["base"],
        )
    from evalkit.io import DocumentError, load_json

    try:
        raw = load_json(path)
    except DocumentError as error:
        raise MalformedFile(f"{error.message}; save the adapter again") from error
    if not isinstance(raw, dict):
        raise MalformedFile(
            f"{path}: expected a JSON object of settings, as save_pretrained writes it; "
            "save the adapter again"
        )
    peft_type = raw.get("peft_type")
    if not isinstance(peft_type, str):
        raise NotAnAdapter(f"{path}: no 'peft_type', so this is not a PEFT adapter config")
    r = _number(path, raw, "r", 8)
    init = raw.get("init_lora_weights", True)
    if not isinstance(init, bool | str):
        raise _bad(path, "init_lora_weights", "true, false or a method name", init)
    bias = _text(path, raw, "bias") or "none"
    if peft_type.upper() in LORA_TYPES:
        _lora_checks(path, raw, r, bias)
    return AdapterConfig(
        path=path,
        raw=raw,
        peft_type=peft_type.upper(),
        task_type=_text(path, raw, "task_type"),
        peft_version=_text(path, raw, "peft_version"),
        base_id=_text(path, raw, "base_model_name_or_path"),
        revision=_text(path, raw, "revision"),
        r=int(r),
        lora_alpha=_number(path, raw, "lora_alpha", 8),
        lora_dropout=_number(path, raw, "lora_dropout", 0.0),
        init_lora_weights=init,
        use_dora=_flag(path, raw, "use_dora"),
        use_rslora=_flag(path, raw, "use_rslora"),
        bias=bias,
        target_modules=_names(path, raw, "target_modules"),
        rank_pattern={k: int(v) for k, v in _pattern(path, raw, "rank_pattern").items()},
        alpha_pattern=_pattern(path, raw, "alpha_pattern"),
        modules_to_save=_name_list(path, raw, "modules_to_save"),
        layers_to_transform=_layers(path, raw),
        layers_pattern=_layers_pattern(path, raw),
        exclude_modules=_names(path, raw, "exclude_modules"),
        fan_in_fan_out=_flag(path, raw, "fan_in_fan_out"),
        lora_bias=_flag(path, raw, "lora_bias"),
    )


# A Hub repo id: a name, or an owner and a name, of letters, digits, ``-``, ``_``, ``.``.
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?$")


def names_local_path(base_id: str | None) -> bool:
    """Whether ``base_model_name_or_path`` names a local folder rather than a Hub repo.

    A string no Hub id can be (absolute, ``./``/``~``, more than one ``/``, a
    backslash) is a path; so is a Hub-shaped one that is a folder here, since
    transformers then loads that folder and never the Hub.
    """
    if not base_id:
        return False
    if not _HUB_ID.match(base_id) or ".." in base_id or "--" in base_id:
        return True
    return Path(base_id).is_dir()


def revision_from_path(path: str | Path | None) -> str | None:
    """The commit of a Hugging Face cache snapshot folder (``…/snapshots/<40 hex>``), if any."""
    if not path:
        return None
    parts = Path(path).parts
    for index in range(len(parts) - 1, 0, -1):
        if parts[index - 1] == "snapshots" and HEX_COMMIT.match(parts[index]):
            return parts[index]
    return None
