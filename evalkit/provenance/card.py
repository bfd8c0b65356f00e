"""``evalkit.adapter_card``: a PEFT adapter folder -> its card, without torch.

Read -> check -> assemble: the config (any peft version), the weights
file's header and tensors (memory-mapped; hashed and checked for all-zero
halves in place), the folder's other files, optionally a local base folder,
then every problem found, errors first. The card is written even when it
holds errors: it is the record of what the adapter is.
"""

from __future__ import annotations

import hashlib
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evalkit._version import __version__
from evalkit.errors import NotAnAdapter, UsageError
from evalkit.options import takes
from evalkit.provenance.adapter_config import (
    HEX_COMMIT,
    AdapterConfig,
    names_local_path,
    read_config,
    revision_from_path,
)
from evalkit.provenance.base_checks import (
    BaseFolder,
    base_embedding_rows,
    coverage_problems,
    read_base,
    shape_problems,
)
from evalkit.provenance.card_options import CardParams
from evalkit.provenance.folder_files import hash_files, tokenizer_info, training_settings
from evalkit.provenance.modules import read_modules
from evalkit.provenance.safetensors_file import canonical_sha256, mapped, read_header
from evalkit.provenance.servable import vllm_servability
from evalkit.records._card import (
    AdapterCard,
    BaseInfo,
    FullTensor,
    LoraSettings,
    ModuleInfo,
    Problem,
    TokenizerInfo,
    read_card,
)
from evalkit.records._card import card_json as card_json  # evalkit card writes these bytes

WEIGHTS_NAME = "adapter_model.safetensors"
LEGACY_WEIGHTS_NAME = "adapter_model.bin"
EMBEDDING_ENDINGS = ("embed_tokens", "lm_head", "wte", "word_embeddings", "embed_in", "embed_out")


def _commit_case(revision: str | None) -> str | None:
    """A 40-hex commit in lower case (git's spelling), so that a pasted upper-case
    commit pins the base and compares equal to the same commit; other names as given."""
    if revision is not None and HEX_COMMIT.match(revision.lower()):
        return revision.lower()
    return revision


def _revision(
    config: AdapterConfig, base_revision: str | None, base_dir: Path | None
) -> str | None:
    given = _commit_case(config.revision)
    base_revision = _commit_case(base_revision)
    if base_revision is not None:
        if given and given != base_revision:
            raise UsageError(
                f"{config.path}: revision is {given!r} but {{base_revision}} says "
                f"{base_revision!r}; the adapter was saved against the first, drop the option "
                "or fix the config",
                refs=["base_revision"],
            )
        return base_revision
    return given or revision_from_path(config.base_id) or revision_from_path(base_dir)


def _base_info(config: AdapterConfig, revision: str | None, base: BaseFolder | None) -> BaseInfo:
    return BaseInfo(
        id=config.base_id,
        revision=revision,
        pinned=bool(revision and HEX_COMMIT.match(revision)),
        config_sha256=base.config_sha256 if base else None,
        quantization=base.quantization if base else None,
        path=str(base.path) if base else None,
    )


def _lora(config: AdapterConfig) -> LoraSettings | None:
    if not config.is_lora:
        return None
    return LoraSettings(
        r=config.r,
        lora_alpha=config.lora_alpha,
        scaling_rule="alpha/sqrt(r)" if config.use_rslora else "alpha/r",
        scaling=config.scaling(config.r, config.lora_alpha),
        lora_dropout=config.lora_dropout,
        init_lora_weights=config.init_lora_weights,
        use_dora=config.use_dora,
        use_rslora=config.use_rslora,
        bias=config.bias,
        target_modules=config.target_modules,
        rank_pattern=config.rank_pattern,
        alpha_pattern=config.alpha_pattern,
        modules_to_save=config.modules_to_save,
        layers_to_transform=config.layers_to_transform,
        layers_pattern=config.layers_pattern,
        exclude_modules=config.exclude_modules,
        fan_in_fan_out=config.fan_in_fan_out,
        lora_bias=config.lora_bias,
    )


def _unpinned_message(base: BaseInfo) -> str:
    """Why the base is not pinned, and what pins it: a Hub id and a local folder differ.

    A Hub id without a commit loads the repo's moving main branch; a local
    folder has no branch, but nothing records which weights it held, and
    ``--base-revision`` helps only when the folder is a copy of a Hub commit.
    """
    what = f"revision {base.revision!r} is not a commit" if base.revision else "no revision"
    if names_local_path(base.id):
        return (
            f"base {base.id} is a local folder with {what.replace(' is not', ', not')}, so a "
            "reload takes whatever weights that folder holds then; pin them by their sha256 "
            "(evalkit generate --base records them in run.json), or pass --base-revision "
            "<40-hex commit> if the folder is a copy of a Hub model"
        )
    return (
        f"base {base.id or '(unnamed)'} has {what}, so a reload takes whatever the base's "
        "main branch is then; pass --base-revision <40-hex commit>"
    )


def _config_problems(config: AdapterConfig, base: BaseInfo) -> list[Problem]:
    problems = []
    if not base.pinned:
        problems.append(
            Problem(code="unpinned_base", severity="error", message=_unpinned_message(base))
        )
    if not config.is_lora:
        problems.append(
            Problem(
                code="unsupported_peft_type",
                severity="warning",
                message=f"peft_type {config.peft_type}: the card counts its tensors but "
                "describes LoRA settings only for LORA",
            )
        )
        return problems
    for key, value in config.unknown_values():
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        problems.append(
            Problem(
                code="unknown_config_key",
                severity="warning",
                message=f"{config.path.name}: {key} = {shown} is not at its default, and the "
                "card cannot account for its effect",
            )
        )
    return problems


def _embedding_rows(modules: list[ModuleInfo], full: list[FullTensor]) -> list[tuple[str, int]]:
    rows = [(m.name, m.d_in) for m in modules if m.kind == "embedding"]
    for tensor in full:
        stem = tensor.name.removesuffix(".weight").removesuffix(".base_layer")
        if stem.rsplit(".", 1)[-1] in EMBEDDING_ENDINGS and len(tensor.shape) == 2:
            rows.append((tensor.name, tensor.shape[0]))
    return rows


def _vocab_problems(
    modules: list[ModuleInfo],
    full: list[FullTensor],
    own: TokenizerInfo | None,
    base: BaseFolder | None,
) -> list[Problem]:
    """``vocab_mismatch``: embedding rows that do not fit the tokenizer's length."""
    tokenizer = own or (base.tokenizer if base else None)
    if tokenizer is None or tokenizer.length is None:
        return []
    length = tokenizer.length
    where = "the adapter's tokenizer" if own else "the base's tokenizer"
    problems = []
    saved = _embedding_rows(modules, full)
    for name, rows in saved:
        if rows < length:
            problems.append(
                Problem(
                    code="vocab_mismatch",
                    severity="error",
                    message=f"{name} has {rows} rows but {where} has {length} tokens: ids "
                    f"{rows}..{length - 1} have no embedding; resize the embeddings and save them",
                )
            )
        elif rows > length:
            problems.append(
                Problem(
                    code="vocab_mismatch",
                    severity="warning",
                    message=f"{name} has {rows} rows for {length} tokens of {where} (padding to "
                    "a multiple is common; the extra rows are never used)",
                )
            )
    base_rows = base_embedding_rows(base) if base else None
    if not saved and own is not None and base_rows is not None and base_rows < length:
        problems.append(
            Problem(
                code="vocab_mismatch",
                severity="error",
                message=f"the adapter's tokenizer has {length} tokens but the base's embeddings "
                f"{base_rows} rows, and the adapter saves no embeddings: the new tokens have "
                "none; save the resized embeddings (modules_to_save or save_embedding_layers)",
            )
        )
    return problems


def _weights_path(folder: Path) -> Path:
    path = folder / WEIGHTS_NAME
    if path.is_file():
        return path
    if (folder / LEGACY_WEIGHTS_NAME).is_file():
        return folder / LEGACY_WEIGHTS_NAME
    raise NotAnAdapter(
        f"{folder}: no {WEIGHTS_NAME} (nor {LEGACY_WEIGHTS_NAME}), so the folder holds no adapter "
        "weights; pass the folder save_pretrained wrote"
    )


def _sha256_view(view: memoryview) -> str:
    return hashlib.sha256(view).hexdigest()


@takes(CardParams)
def adapter_card(
    adapter: str | os.PathLike[str], params: CardParams | None = None, /, **values: Any
) -> AdapterCard:
    """The card of a PEFT adapter folder (see ``docs/provenance.md``).

    ``base`` is a local model folder to check shapes, coverage and
    vocabulary against; ``base_revision`` pins the base when the adapter's
    config does not; ``training`` is a JSON or YAML file of training settings.
    ``params`` is a :class:`~evalkit.provenance.card_options.CardParams` (the
    command's options), or its fields as keywords.
    Bad input raises an :class:`~evalkit.errors.EvalkitError`; problems of the
    adapter itself are listed in the card.
    """
    given = CardParams.build(params, values)
    folder = Path(adapter)
    config = read_config(folder)
    base_dir = given.base
    base_folder = read_base(base_dir) if base_dir is not None else None
    weights = _weights_path(folder)
    if weights.name == LEGACY_WEIGHTS_NAME:
        from evalkit.provenance.torch_pickle import read_legacy_weights

        header, view_context = read_legacy_weights(weights)
    else:
        header, view_context = read_header(weights), mapped(weights)
    with view_context as view, ThreadPoolExecutor(1) as pool:
        file_hash = pool.submit(_sha256_view, view) if weights.suffix == ".safetensors" else None
        report = read_modules(header, view, config)
        weights_sha256 = canonical_sha256(view, header)
        known = {weights.name: file_hash.result()} if file_hash else {}
    files = hash_files(folder, known)
    own_tokenizer = tokenizer_info(folder, files)
    base_info = _base_info(config, _revision(config, given.base_revision, base_dir), base_folder)
    problems = _config_problems(config, base_info) + report.problems
    if base_folder is not None:
        problems += shape_problems(report.modules, config, base_folder)
        problems += coverage_problems(report.modules, config, base_folder)
    problems += _vocab_problems(report.modules, report.full_tensors, own_tokenizer, base_folder)
    problems.sort(key=lambda problem: problem.severity != "error")
    return AdapterCard(
        evalkit_version=__version__,
        path=str(folder),
        peft_type=config.peft_type,
        peft_version=config.peft_version,
        task_type=config.task_type,
        base=base_info,
        lora=_lora(config),
        modules=report.modules,
        full_tensors=sorted(report.full_tensors, key=lambda tensor: tensor.name),
        trainable_params=report.trainable_params,
        weights_file=weights.name,
        weights_dtype=sorted({info.dtype for info in header.tensors.values()}),
        weights_sha256=weights_sha256,
        files=files,
        tokenizer=own_tokenizer,
        training=training_settings(folder, given.training),
        problems=problems,
        servable=vllm_servability(
            config,
            report.modules,
            report.full_tensors,
            base_rows=base_embedding_rows(base_folder) if base_folder is not None else None,
        ),
    )


def load_card(path: str | os.PathLike[str]) -> AdapterCard:
    """Read a ``card.json`` written by ``evalkit card`` (one clear error when it is not one)."""
    return read_card(path)
