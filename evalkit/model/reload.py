"""``evalkit reload-check``: the shipped artifact, reloaded in a fresh process, gives the
scored tokens.

The parent (this module) verifies every hash ``run.json`` pins without
importing torch, then starts ``python -m evalkit.model.worker`` - a new
interpreter that loads the run's folders (or ``--merged DIR``), regenerates
N seeded control examples and compares their token ids with
``tokens.parquet`` - and reads its report back.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from evalkit.errors import ParameterError
from evalkit.model.records import ReloadReport

WORKER_MODULE = "evalkit.model.worker"


def reload_check(
    run_dir: Path | str,
    *,
    n: int = 16,
    seed: int = 0,
    merged: Path | str | None = None,
    device: str | None = None,
    dtype: str | None = None,
    progress: bool = False,
    debug: bool = False,
) -> ReloadReport:
    """Reload what ``run_dir/run.json`` pins in a new process and compare tokens.

    Every pinned hash is checked first (a changed file raises
    :class:`~evalkit.errors.ArtifactChanged`, exit 2); then ``n`` control
    examples chosen by ``seed`` are regenerated, each in its run batch, and
    compared id for id. ``merged`` loads a merged model folder instead of the
    run's base and adapter; ``device``/``dtype`` default to the run's.
    """
    from evalkit.model.folders import check_model_folder
    from evalkit.model.fresh import run_worker
    from evalkit.model.pins import merged_pins, read_run, verify_pins

    if n < 1:
        raise ParameterError("n", f"must be at least 1 (control examples checked), got {n}")
    folder = Path(run_dir)
    run = read_run(folder)
    merged_path = Path(merged) if merged is not None else None
    if merged_path is not None:
        check_model_folder(merged_path, "merged model")
    checked = verify_pins(run, folder, merged=merged_path)
    request = {
        "run_dir": str(folder),
        "n": n,
        "seed": seed,
        "merged": str(merged_path) if merged_path is not None else None,
        "merged_pins": (merged_pins(merged_path).model_dump() if merged_path is not None else None),
        "device": device,
        "dtype": dtype,
        "progress": progress,
        "debug": debug,
        "pins_checked": checked,
    }
    with tempfile.TemporaryDirectory(prefix="evalkit-reload-") as scratch:
        report = run_worker(WORKER_MODULE, request, Path(scratch), what="reload")
    return ReloadReport.model_validate(report)
