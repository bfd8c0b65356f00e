"""``evalkit compare``: a paired regression report of candidates against a baseline."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._comparison_options import (
    RESULT_FOLDER,
    suspect_line,
    verdict_lines,
    warn_unpaired,
)
from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.comparison.options import CompareParams


@click.command("compare", cls=Command)
@click.argument("baseline", type=RESULT_FOLDER)
@click.argument("candidates", type=RESULT_FOLDER, nargs=-1, required=True)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Folder for report.json, report.md, report.html and junit.xml (without it, only print).",
)
@json_option("Write the report as JSON (report.json of --out)")
@click.option(
    "--force", is_flag=True, help="Replace the --out folder and the --json file if they exist."
)
@params_options(CompareParams)
@quiet_option
def compare_command(
    baseline: str,
    candidates: tuple[str, ...],
    out: Path | None,
    json_path: Path | None,
    force: bool,
    params: CompareParams,
    quiet: bool,
) -> None:
    """Compare CANDIDATES with BASELINE example by example, rank them and decide.

    Every argument is a folder written by `evalkit score` under the same
    contract and gold file (otherwise: exit 2). For each candidate: accuracy
    and format-validity deltas with paired-bootstrap 95% intervals, negative
    and positive flips, exact McNemar p-values (Holm-adjusted across classes),
    Wilson intervals, overall, per class and per slice, and the contract's
    gate verdict. With several candidates they are ranked (passing first,
    then by accuracy gain) and the report names the one to adopt, or says
    that none passes or none gains more than --min-gain. The decision record
    names the test split and its groups, the known regressions, the test
    set's ledger state and what a reload needs (base id and commit, adapter
    weights hash). --factor, --allow-base-change and --ledger work as for
    `evalkit gate`.

    Suspect gold labels: items whose gold class the baseline and every
    candidate contradict with the same format-valid answer, ranked by how
    many results agree, with the first words of each input (--text) and,
    for predictions written by `evalkit generate`, the answer's probability.
    A hint to read those labels again, never a verdict (docs/compare.md).

    \b
    Writes DIR/report.json, DIR/report.md, DIR/report.html (charts, one
    self-contained page) and DIR/junit.xml with --out; --json FILE writes
    the report.json alone (- for stdout).
    Exit codes: 0 done (whatever the verdicts; use `evalkit gate` in CI),
    2 bad input.

    \b
    Example:
      evalkit compare runs/baseline runs/cand-a runs/cand-b --out reports/
    """
    from evalkit.comparison.api import compare
    from evalkit.report.comparison_files import COMPARE_FILES
    from evalkit.report.json_report import render_json

    output = Output(json_path, quiet)
    report = compare(
        baseline,
        *candidates,
        params=params,
        out=out,
        json=output.json_file,
        render=COMPARE_FILES,
        force=force,
    )
    for candidate in report.candidates:
        warn_unpaired(candidate)
    output.print_json(render_json(report))
    for entry, candidate in zip(report.ranking, report.candidates, strict=True):
        output.say(f"{entry.rank}. " + "\n".join(verdict_lines(candidate)))
    output.say(f"Decision: {report.decision.reason}")
    suspects = suspect_line(report)
    if suspects:
        output.say(suspects)
    if out is not None:
        output.say(f"wrote {out}/report.json, report.md, report.html, junit.xml")
    if json_path is not None and not output.json_to_stdout:
        output.say(f"wrote {json_path}")
    output.wrote([out, json_path])
