"""``card.json``: the adapter card, as typed models (its JSON Schema is committed).

A card says what an adapter is without loading it: the base it was trained
on and whether that base is pinned, the LoRA settings that define the
experiment, every adapted module with its size, the trainable parameter
count, a hash of the weights, and the problems found. ``evalkit score
--card`` stores it in ``summary.json``; ``compare``/``gate`` read the
``base``, ``lora`` and ``training`` blocks to refuse a comparison across bases
and to check an ablation.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from evalkit.records._base import Persisted
from evalkit.records._versions import FileFormat

CARD_VERSION = 2


def _card_1_to_2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 2 adds ``servable``; a version-1 card never assessed it (null)."""
    return {**data, "servable": None}


CARD_FORMAT = FileFormat(
    "adapter card", CARD_VERSION, key="card_version", migrations={1: _card_1_to_2}
)

Severity = Literal["error", "warning"]


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class BaseInfo(_Model):
    """The base model the adapter applies to."""

    id: str | None
    """``base_model_name_or_path`` of adapter_config.json (a hub id or a local path)."""
    revision: str | None
    """The base's commit: adapter_config.json's ``revision``, ``--base-revision``, or the
    name of a Hugging Face cache snapshot folder; null when none is known."""
    pinned: bool
    """Whether ``revision`` is a 40-hex commit (a branch or tag name moves)."""
    config_sha256: str | None
    """sha256 of the base folder's config.json (with ``--base``)."""
    quantization: str | None
    """How the base was quantized, from its config (``bitsandbytes-4bit-nf4``, …); null when
    not quantized or unknown (without ``--base``)."""
    path: str | None = None
    """The local base folder the checks ran against (``--base``)."""


class LoraSettings(_Model):
    """The settings that define a LoRA experiment (peft's defaults filled in)."""

    r: int
    """The rank of every module not named by ``rank_pattern``."""
    lora_alpha: float
    """The alpha of every module not named by ``alpha_pattern``."""
    scaling_rule: Literal["alpha/r", "alpha/sqrt(r)"]
    """How the update is scaled: classic LoRA, or rsLoRA (``use_rslora``)."""
    scaling: float
    """``lora_alpha / r`` (or ``/ sqrt(r)``) for the default r and alpha."""
    lora_dropout: float
    """Dropout on the LoRA input during training."""
    init_lora_weights: bool | str
    """``true`` (B = 0), ``false`` (random), or a method: ``gaussian``, ``pissa``, ``olora``, …"""
    use_dora: bool
    """DoRA: a trained magnitude vector per module (d_out parameters each)."""
    use_rslora: bool
    """rsLoRA: scaling alpha/sqrt(r)."""
    bias: str
    """Which biases train: ``none``, ``lora_only`` or ``all``."""
    target_modules: list[str] | str | None
    """Module names (sorted) or one regular expression (``all-linear`` included)."""
    rank_pattern: dict[str, int]
    """Per-module r, by pattern (peft matches a pattern at the end of a module name)."""
    alpha_pattern: dict[str, float]
    """Per-module alpha, by pattern."""
    modules_to_save: list[str] | None
    """Modules trained and saved in full (a classification head, lm_head, …)."""
    layers_to_transform: list[int] | int | None
    """Layer indices the targets are restricted to."""
    layers_pattern: list[str] | str | None
    """Name of the layer list that ``layers_to_transform`` indexes."""
    exclude_modules: list[str] | str | None
    """Modules excluded from the targets."""
    fan_in_fan_out: bool
    """Whether the base stores weights as (in, out), as GPT-2's Conv1D does."""
    lora_bias: bool
    """Whether lora_B has a bias (d_out parameters per module)."""


class ModuleInfo(_Model):
    """One adapted module and its size."""

    name: str
    """The module's name in the base model (``model.layers.0.self_attn.q_proj``)."""
    kind: Literal["linear", "embedding", "conv"]
    """The layer type, from the tensor names and shapes."""
    d_in: int
    """Input size (for an embedding: the number of rows; for a conv: in_channels × kernel)."""
    d_out: int
    """Output size."""
    r: int
    """The rank found in the tensors."""
    lora_alpha: float
    """The module's alpha (``alpha_pattern`` applied)."""
    scaling: float
    """The module's scaling (its r and alpha, by the scaling rule)."""
    params: int
    """Parameters of its tensors: r·(d_in+d_out), plus d_out for DoRA or a LoRA bias."""


class FullTensor(_Model):
    """A tensor saved whole rather than as a low-rank pair."""

    name: str
    """The tensor's name, ``base_model.model.`` removed."""
    shape: list[int]
    """Its shape."""
    dtype: str
    """Its safetensors dtype."""
    params: int
    """Its element count."""
    role: Literal["modules_to_save", "bias", "trainable_tokens", "saved_embedding", "adapter"]
    """Why it is saved: a module trained in full, a trained bias, trainable tokens, an
    embedding peft saved beside the adapter (not trained: targeted or resized), or a
    tensor of a peft method other than LoRA (trained)."""
    trainable: bool
    """Whether peft trains it (counted in ``trainable_params``)."""


class TokenizerInfo(_Model):
    """The tokenizer saved in the adapter folder."""

    sha256: str
    """sha256 over ``<file>:<sha256>`` lines of the tokenizer files present, in name order."""
    chat_template_sha256: str | None
    """sha256 of the chat template text (chat_template.jinja or tokenizer_config.json)."""
    added_tokens: int
    """Tokens in tokenizer.json's ``added_tokens``."""
    length: int | None
    """Distinct token ids, as ``len(tokenizer)`` counts them (null without tokenizer.json)."""


class Problem(_Model):
    """Something wrong or unaccounted for."""

    code: str
    """``unpinned_base``, ``empty_adapter``, ``rank_mismatch``, ``unknown_config_key``,
    ``shape_mismatch``, ``coverage``, ``vocab_mismatch``, ``unsupported_peft_type``."""
    severity: Severity
    """``error`` makes ``evalkit card`` exit 1; ``warning`` does not."""
    message: str
    """One line that names the key, module or tensor and what to do."""


class ServingProblem(_Model):
    """One reason a server refuses the adapter, or serves something else than was scored."""

    code: str
    """``not_lora``, ``modules_to_save``, ``trainable_tokens``, ``rank_above_max``, ``dora``,
    ``lora_bias``, ``bias``, ``init_weights``, ``unsupported_feature``, ``unsupported_module``,
    ``saved_embedding``, ``resized_embedding`` (see ``docs/provenance.md``)."""
    message: str
    """One line that names the key, module or tensor, what the server does, and what to do."""


class Servability(_Model):
    """Whether vLLM serves the adapter as it is, by the rules of the vLLM release named."""

    vllm: bool
    """``true`` when none of the rules below refuses it (vLLM may still refuse a module the
    base's architecture lacks in vLLM: ``generate --backend vllm`` reports that)."""
    problems: list[ServingProblem]
    """Every rule the adapter breaks (empty when ``vllm`` is true)."""
    max_lora_rank: int | None
    """The ``max_lora_rank`` to start vLLM with: the adapter's largest rank rounded up to a
    rank vLLM allows (1, 8, 16, 32, 64, 128, 256, 320, 512); null above 512 or not LoRA."""
    rules: str
    """The vLLM release whose source the rules were read from (``vllm 0.32.0``)."""


class AdapterCard(_Model):
    """The whole ``card.json``."""

    card_version: int = CARD_VERSION
    """Bumped on any incompatible change of this format."""
    evalkit_version: str
    """The evalkit that wrote it."""
    path: str
    """The adapter folder as given."""
    peft_type: str
    """``LORA`` (the card describes it fully), or another peft method (counted only)."""
    peft_version: str | None
    """The peft that saved it (adapter_config.json's ``peft_version``, written since 0.14)."""
    task_type: str | None
    """``CAUSAL_LM``, ``SEQ_CLS``, … (null when not given)."""
    base: BaseInfo
    """The base model."""
    lora: LoraSettings | None
    """The LoRA settings; null for another peft method."""
    modules: list[ModuleInfo]
    """Every adapted module, by name."""
    full_tensors: list[FullTensor]
    """Tensors saved whole, by name."""
    trainable_params: int
    """What peft's ``get_nb_trainable_parameters()`` reports for this adapter."""
    weights_file: str
    """The weights file read (``adapter_model.safetensors``)."""
    weights_dtype: list[str]
    """The dtypes of its tensors, sorted."""
    weights_sha256: str
    """Canonical sha256 of the tensors: name order, each name, dtype, shape and bytes
    (independent of the header's layout)."""
    files: dict[str, str]
    """sha256 of every file in the folder, by name."""
    tokenizer: TokenizerInfo | None
    """The tokenizer saved with the adapter, if any."""
    training: dict[str, Any] | None
    """Training settings: ``--training``, training_args.json, trainer_state.json."""
    problems: list[Problem]
    """Errors first, then warnings."""
    servable: Servability | None
    """Whether vLLM serves it as it is (null in a card of version 1, which did not ask)."""

    @property
    def errors(self) -> list[Problem]:
        """The problems of severity ``error``."""
        return [problem for problem in self.problems if problem.severity == "error"]


def read_card_data(data: Mapping[str, Any], source: object, hint: str) -> AdapterCard:
    """The card a ``card.json`` document holds, its ``card_version`` checked first.

    Used for a card file (``score --card``), a card inside ``summary.json``
    and a card passed to :func:`evalkit.score` as JSON data; a problem is a
    :class:`~evalkit.errors.MalformedFile` naming ``source`` and the key,
    ending with ``hint``.
    """
    from pydantic import ValidationError

    from evalkit.errors import MalformedFile

    upgraded = CARD_FORMAT.upgrade(dict(data), source, hint)
    try:
        return AdapterCard.model_validate(upgraded)
    except ValidationError as error:
        detail = error.errors()[0]
        key = ".".join(str(part) for part in detail["loc"]) or "(top level)"
        raise MalformedFile(f"{source}: key {key!r}: {detail['msg'].lower()}; {hint}") from error


def card_json(card: AdapterCard) -> bytes:
    """The bytes of ``card.json``: indented, keys in model order, a final newline."""
    import orjson

    return orjson.dumps(card.model_dump(mode="json"), option=orjson.OPT_INDENT_2) + b"\n"


def read_card(path: str | os.PathLike[str]) -> AdapterCard:
    """Read a ``card.json`` written by ``evalkit card`` (one clear error when it is not one)."""
    from evalkit.errors import MalformedFile, NotAnAdapter, UsageError
    from evalkit.io import load_json

    file = Path(path)
    if file.is_dir():
        raise UsageError(
            f"{file}: is a folder; {{card}} takes a card.json written by evalkit card "
            "(pass an adapter folder with {adapter})",
            refs=["card", "adapter"],
        )
    if not file.is_file():
        raise NotAnAdapter(
            f"{file}: no such file; write one with evalkit card ADAPTER_DIR (its JSON report)"
        )
    try:
        raw = load_json(file)
    except MalformedFile as error:
        raise MalformedFile(f"{error.message}; write the card again with evalkit card") from error
    if not isinstance(raw, dict):
        raise MalformedFile(
            f"{file}: expected a JSON object; write the card again with evalkit card"
        )
    return read_card_data(raw, file, "write the card again with evalkit card")


def write_card(path: str | os.PathLike[str], card: AdapterCard, *, force: bool = False) -> None:
    """Write ``card.json`` (:func:`card_json`) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), card_json(card), force=force)
