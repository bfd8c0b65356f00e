"""``evalkit.model.resume_api.resume_check``: the resume check alone, from Python.

``evalkit smoke --trainer hf --resume-at K`` measures smoke's phases and then
runs the resume check; this runs the check alone on the same inputs (the
same rows, the same TrainingArguments), for a caller who wants only to know
whether a checkpoint of this setup resumes its run.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.model.options import SmokeParams
from evalkit.options import takes

if TYPE_CHECKING:
    from evalkit.io import TableLike
    from evalkit.records._resume import ResumeCheck


@takes(SmokeParams)
def resume_check(
    base: Path | str,
    data: TableLike,
    params: SmokeParams | None = None,
    /,
    *,
    progress: bool = False,
    debug: bool = False,
    **values: Any,
) -> ResumeCheck:
    """Run A, A' and B (killed after checkpoint ``resume_at``, resumed) with transformers'
    Trainer, each in a fresh process, and compare them (see ``docs/resume.md``).

    ``params`` is smoke's :class:`~evalkit.model.options.SmokeParams` (with
    ``trainer="hf"`` and ``resume_at``), or its fields as keywords. Bad input
    raises an ``EvalkitError`` (exit 2) before any model loads.
    """
    from evalkit.model.resume import plan_resume, run_resume_check
    from evalkit.model.smoke_prepare import one_table, prepare

    given = SmokeParams.build(params, values)
    prepared = prepare(base, one_table(data, given.hf_split), given)
    plan = plan_resume(prepared, given)
    if plan is None:  # SmokeParams refuses trainer="hf" without resume_at
        raise AssertionError("resume_at is required")
    return run_resume_check(prepared, plan, progress=progress, debug=debug)
