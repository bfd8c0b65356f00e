"""Pinning a run's inputs in ``run.json``, and verifying the pins later (no torch).

A score is only worth the artifact it was measured on, so ``generate``
records the sha256 of every file that decided the outputs (base config and
weights, adapter config and weights, tokenizer files, the data) and
``reload-check`` recomputes them before it loads anything: a file that
changed is exit 2 naming it, not a silent comparison of another artifact.
"""

from __future__ import annotations

from pathlib import Path

from evalkit.errors import ArtifactChanged, UsageError
from evalkit.io import sha256_file
from evalkit.model.folders import (
    ADAPTER_WEIGHTS,
    adapter_pins,
    changed_pins,
    combined_sha256,
    has_tokenizer,
    model_pins,
    read_json,
    tokenizer_pins,
)
from evalkit.provenance.artifacts import inside
from evalkit.records._run import (
    PREDICTIONS_FILE,
    RUN_FILE,
    TOKENS_FILE,
    AdapterPins,
    BasePins,
    FolderPins,
    RunRecord,
)


def base_pins(folder: Path) -> BasePins:
    """The base (or merged) folder's config, generation config and weights, hashed."""
    pins = model_pins(folder)
    weights = {name: sha for name, sha in pins.files.items() if not name.endswith("config.json")}
    return BasePins(
        path=pins.folder,
        files=pins.files,
        config_sha256=pins.files["config.json"],
        weights_sha256=combined_sha256(weights),
    )


def adapter_record(folder: Path, base: Path) -> AdapterPins:
    """The adapter folder's config and weights, hashed, and its card checked against ``base``."""
    from evalkit.provenance.card import adapter_card

    pins = adapter_pins(folder)
    weights = next(pins.files[name] for name in ADAPTER_WEIGHTS if name in pins.files)
    config = read_json(folder / "adapter_config.json")
    declared = config.get("base_model_name_or_path")
    return AdapterPins(
        path=pins.folder,
        files=pins.files,
        weights_sha256=weights,
        base_model_name_or_path=declared if isinstance(declared, str) else None,
        card=adapter_card(folder, base=base),
    )


def tokenizer_files(folder: Path) -> dict[str, str]:
    """The tokenizer files of ``folder`` with their sha256."""
    return tokenizer_pins(folder).files


def merged_pins(folder: Path) -> FolderPins:
    """A merged folder's model files, hashed (recorded by a check, not verified)."""
    pins = model_pins(folder)
    return FolderPins(path=pins.folder, files=pins.files)


def _check(problem: str | None, what: str) -> None:
    if problem is not None:
        raise ArtifactChanged(
            f"{problem}; the run's {what} is not what was scored: restore it, or run "
            "evalkit generate again"
        )


def _reachable(path: Path, what: str) -> None:
    """A relative path of run.json that is not there from here: the wrong folder, not a change.

    run.json records each path as it was given to generate, so a relative
    one is relative to the folder generate ran in; from another folder it
    is not found although nothing changed.
    """
    if not path.is_absolute() and not path.exists():
        raise UsageError(
            f"{path}: not found from {Path.cwd()} (run.json records the run's {what} "
            "relative to the folder evalkit generate ran in); run reload-check from that "
            "folder, or restore it"
        )


def verify_pins(run: RunRecord, run_dir: Path, *, merged: Path | None) -> list[str]:
    """Check every pinned hash the reload depends on; the files checked, in order.

    Always the run's own outputs and the data; the base and adapter unless a
    merged folder replaces them; the tokenizer unless the merged folder has
    one of its own (then the prompt ids it gives are compared instead).
    Every pinned name must lie in the folder the run recorded beside it (a
    name like ``../../x`` is refused before any file is read). Raises
    :class:`~evalkit.errors.ArtifactChanged` naming the first file that
    changed or disappeared.
    """
    record = run_dir / RUN_FILE
    folders: list[tuple[str, str, dict[str, str], bool]] = []
    if merged is None:
        folders.append(("base model", run.base.path, run.base.files, True))
        if run.adapter is not None:
            folders.append(("adapter", run.adapter.path, run.adapter.files, False))
    if merged is None or not has_tokenizer(merged):
        folders.append(("tokenizer", run.tokenizer.path, run.tokenizer.files, False))
    for what, folder, files, _ in folders:
        for name in files:
            inside(Path(folder), name, f"{record} ({what} files)")
    checked: list[str] = []
    outputs = {
        PREDICTIONS_FILE: run.outputs.predictions_sha256,
        TOKENS_FILE: run.outputs.tokens_sha256,
    }
    _check(changed_pins(run_dir, outputs, where=str(record)), "output")
    checked += [str(run_dir / name) for name in sorted(outputs)]
    if run.data.path is None:
        raise UsageError(
            f'{record}: the run generated from an in-memory frame (data.source "frame"), '
            "whose rows cannot be read again; write the data to a file and generate from it"
        )
    data = Path(str(run.data.path))
    _reachable(data, "data")
    if not data.is_file():
        _check(f"{data}: the data the run read no longer exists", "data")
    now = sha256_file(data)
    if now != run.data.sha256:
        _check(
            f"{data}: changed since the run (sha256 {run.data.sha256[:12]}… then, {now[:12]}… now)",
            "data",
        )
    checked.append(str(data))
    for what, folder, files, weights in folders:
        _reachable(Path(folder), what)
        where = f"{record} ({what} files)"
        _check(changed_pins(Path(folder), files, weights=weights, where=where), what)
        checked += [str(Path(folder) / name) for name in sorted(files)]
    return checked
