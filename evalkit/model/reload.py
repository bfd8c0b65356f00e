"""``evalkit reload-check``: the shipped artifact, reloaded in a fresh process, gives the
scored tokens.

The parent (this module) verifies every hash ``run.json`` pins without
importing torch, then starts ``python -m evalkit.model.worker`` - a new
interpreter that loads the run's folders (or ``--merged DIR``), regenerates
N seeded control examples and compares their token ids with
``tokens.parquet`` - and reads its report back.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from evalkit.model.options import ReloadCheckParams
from evalkit.options import takes
from evalkit.records._run import ReloadReport

WORKER_MODULE = "evalkit.model.worker"


@takes(ReloadCheckParams)
def reload_check(
    run_dir: Path | str,
    params: ReloadCheckParams | None = None,
    /,
    *,
    progress: bool = False,
    debug: bool = False,
    json: str | os.PathLike[str] | None = None,
    force: bool = False,
    **values: Any,
) -> ReloadReport:
    """Reload what ``run_dir/run.json`` pins in a new process and compare tokens.

    Every pinned hash is checked first (a changed file raises
    :class:`~evalkit.errors.ArtifactChanged`, exit 2); then ``n`` control
    examples chosen by ``seed`` are regenerated, each in its run batch, and
    compared id for id. ``merged`` loads a merged model folder instead of the
    run's base and adapter; ``device``/``dtype`` default to the run's.
    ``backend`` regenerates with ``hf`` or ``vllm`` (default: the run's), so
    the adapter as vLLM serves it is checked against the tokens that were
    scored; the check passes when the exact-match rate of the controls' token
    ids is at least ``min_match``.
    ``params`` is a :class:`~evalkit.model.options.ReloadCheckParams` (the
    command's options), or its fields as keywords.

    With ``json`` the report is written there too, as ``evalkit reload-check
    --json`` writes it (which is this call): atomically, never over the run
    folder, a file or folder its ``run.json`` pins, or ``merged``, and over
    an existing file only with ``force`` (checked before anything loads).
    """
    from evalkit.io import ReportFile

    given = ReloadCheckParams.build(params, values)
    read = [*run_inputs(Path(run_dir)), given.merged]
    target = ReportFile.checked(json, force=force, inputs=read)
    report = _reload_check(Path(run_dir), given, progress, debug)
    target.write(report.model_dump_json(indent=2) + "\n")
    return report


def _reload_check(
    folder: Path, given: ReloadCheckParams, progress: bool, debug: bool
) -> ReloadReport:
    """The reload check of the run in ``folder`` (see :func:`reload_check`)."""
    from evalkit.model.backends import require_backend
    from evalkit.model.folders import check_model_folder
    from evalkit.model.fresh import run_worker
    from evalkit.model.pins import merged_pins, verify_pins
    from evalkit.records._run import read_run

    run = read_run(folder)
    backend = given.backend or run.backend
    require_backend(backend)
    merged_path = given.merged
    if merged_path is not None:
        check_model_folder(merged_path, "merged model")
    checked = verify_pins(run, folder, merged=merged_path)
    rank = None
    if backend == "vllm" and merged_path is None and run.adapter is not None:
        from evalkit.model.vllm_generate import servable_rank
        from evalkit.provenance.card import adapter_card

        adapter = Path(run.adapter.path)  # verified above: the adapter that was scored
        rank = servable_rank(adapter_card(adapter, base=Path(run.base.path)), adapter)
    request = {
        "run_dir": str(folder),
        "n": given.n,
        "seed": given.seed,
        "backend": backend,
        "min_match": given.min_match,
        "max_lora_rank": rank,
        "merged": str(merged_path) if merged_path is not None else None,
        "merged_pins": (merged_pins(merged_path).model_dump() if merged_path is not None else None),
        "device": given.device,
        "dtype": given.dtype,
        "progress": progress,
        "debug": debug,
        "pins_checked": checked,
    }
    with tempfile.TemporaryDirectory(prefix="evalkit-reload-") as scratch:
        log = Path(scratch) / "engine.log" if backend == "vllm" else None
        request["log"] = str(log) if log is not None else None
        report = run_worker(
            WORKER_MODULE, request, Path(scratch), what="reload", log=log, debug=debug
        )
    return ReloadReport.model_validate(report)


def _recorded(value: Any, folder: Path) -> list[Path]:
    """A path a file recorded: as written (relative to the working folder) and from ``folder``."""
    if not isinstance(value, str) or not value:
        return []
    path = Path(value)
    return [path] if path.is_absolute() else [path, folder / path]


def run_inputs(run_dir: Path) -> list[Path]:
    """What a reload check reads: the run folder and every folder and file its run.json pins.

    Read cheaply and tolerantly, for checking an output against them before
    the run is read for real: a ``run.json`` that cannot be read here is
    reported by :func:`reload_check` itself, in its own words.
    """
    from evalkit.records._run import PREDICTIONS_FILE, RUN_FILE, TOKENS_FILE, peek_run

    record = peek_run(run_dir)
    found = [run_dir / name for name in (RUN_FILE, PREDICTIONS_FILE, TOKENS_FILE)]
    found.append(run_dir)
    for key in ("base", "adapter", "tokenizer", "data"):
        block = record.get(key)
        if isinstance(block, dict):
            found += _recorded(block.get("path"), run_dir)
    return found
