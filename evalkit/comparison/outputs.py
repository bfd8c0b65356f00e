"""The raw model outputs of the examples a comparison points at, read back from the predictions.

A result folder keeps verdicts, not outputs (they would double its size and
the scorer's memory), but ``summary.json`` records the predictions file, its
sha256 and how it was read. The HTML report shows the outputs of the flipped
examples and of one example per error category; this module reads just those
from the predictions files, and says why when it cannot (the file moved, or
changed since it was scored) instead of showing outputs that may not be the
scored ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from evalkit.errors import EvalkitError
from evalkit.records._compare import CandidateReport

if TYPE_CHECKING:
    from evalkit.records._summary import ScoreSummary


class SideOutputs(BaseModel):
    """The outputs found for one result, or why there are none."""

    model_config = ConfigDict(frozen=True)

    outputs: dict[str, str | None]
    """Raw output text by example id (null: the id had no prediction)."""
    note: str | None
    """Why the outputs are not shown, when they are not."""


class FlipOutputs(BaseModel):
    """The outputs of both sides of one candidate report."""

    model_config = ConfigDict(frozen=True)

    baseline: SideOutputs
    candidate: SideOutputs


def wanted_ids(report: CandidateReport) -> set[str]:
    """Ids whose outputs a report shows: its flipped examples and error examples."""
    ids = {flip.id for flip in report.flips}
    ids |= {error.example_id for error in report.format_errors}
    ids |= {error.example_id for error in report.new_errors}
    return ids


def _summary(folder: Path, summary_sha256: str) -> ScoreSummary | str:
    """The summary compared (the same bytes), read again with its model; else why not."""
    import hashlib

    from evalkit.records._summary import SUMMARY_FILE, summary_from_bytes

    path = folder / SUMMARY_FILE
    try:
        data = path.read_bytes()
    except OSError as error:
        return f"{path}: cannot read ({error.strerror})"
    if hashlib.sha256(data).hexdigest() != summary_sha256:
        return f"{path} changed since it was compared"
    try:
        return summary_from_bytes(data, path, "re-run evalkit score")[1]
    except EvalkitError as error:
        return error.message


def read_outputs(folder: Path, summary_sha256: str, ids: Iterable[str]) -> SideOutputs:
    """The raw outputs for ``ids`` from the predictions file a result was scored from."""
    from evalkit.comparison.recorded import locate
    from evalkit.scoring.predictions import predictions_sha256, read_predictions

    summary = _summary(folder, summary_sha256)
    if isinstance(summary, str):
        return SideOutputs(outputs={}, note=summary)
    predictions = summary.predictions
    source = predictions.path
    id_column = summary.contract.normalized.get("id")
    if not source or not id_column or not predictions.sha256:
        return SideOutputs(outputs={}, note="the result does not record its predictions file")
    path = locate(source, folder)
    if path is None:
        return SideOutputs(
            outputs={},
            note=f"{source}: not found from here (the path is as given to evalkit score)",
        )
    try:
        if predictions_sha256(path) != predictions.sha256:
            return SideOutputs(outputs={}, note=f"{source} changed since it was scored")
        table = read_predictions(
            path,
            pred_format=predictions.format or "auto",
            default_id=str(id_column),
            id_column=predictions.id_col,  # summary.json's keys, kept
            output_column=predictions.output_col,
        )
    except (EvalkitError, OSError) as error:
        return SideOutputs(outputs={}, note=f"{source}: cannot read it again ({error})")
    wanted = sorted(set(ids))
    import polars as pl

    keep: Literal["first", "last"] = "last" if predictions.on_duplicate == "last" else "first"
    found = table.frame.filter(pl.col("id").is_in(wanted)).unique("id", keep=keep)
    outputs: dict[str, str | None] = dict.fromkeys(wanted)
    outputs.update(dict(zip(found["id"].to_list(), found["output"].to_list(), strict=True)))
    return SideOutputs(outputs=outputs, note=None)


def _side_outputs(folder: str | None, summary_sha256: str, ids: Iterable[str]) -> SideOutputs:
    if folder is None:
        return SideOutputs(outputs={}, note="the result was compared in memory, not written")
    return read_outputs(Path(folder), summary_sha256, ids)


def flip_outputs(reports: Sequence[CandidateReport]) -> dict[str, FlipOutputs]:
    """Per candidate name, the outputs its report shows, from both sides' predictions.

    Each result's predictions are read once, for the ids every report that
    uses it needs.
    """
    needs: dict[tuple[str | None, str], set[str]] = {}
    for report in reports:
        ids = wanted_ids(report)
        for side in (report.baseline, report.candidate):
            needs.setdefault((side.path, side.summary_sha256), set()).update(ids)
    read = {key: _side_outputs(key[0], key[1], ids) for key, ids in needs.items()}
    return {
        report.candidate.name: FlipOutputs(
            baseline=read[(report.baseline.path, report.baseline.summary_sha256)],
            candidate=read[(report.candidate.path, report.candidate.summary_sha256)],
        )
        for report in reports
    }
