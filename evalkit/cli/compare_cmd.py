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
    from evalkit.comparison.outputs import flip_outputs
    from evalkit.comparison.recorded import result_inputs
    from evalkit.io import CommandFiles, atomic_directory, atomic_write_text
    from evalkit.records._compare_files import (
        JUNIT_FILE,
        REPORT_FILE,
        REPORT_HTML_FILE,
        REPORT_MARKDOWN_FILE,
        write_report,
    )
    from evalkit.report.html.compare import render_comparison_html
    from evalkit.report.json_report import render_json
    from evalkit.report.junit import render_junit
    from evalkit.report.markdown import render_comparison_markdown

    output = Output(json_path, quiet)
    files = CommandFiles(force=force).reads_all(result_inputs([baseline, *candidates]))
    files.reads(params.ledger).writes(out, option="--out", marker=REPORT_FILE)
    files.writes(output.json_file, option="--json").check()
    report = compare(baseline, *candidates, params=params)
    for candidate in report.candidates:
        warn_unpaired(candidate)
    for candidate in report.candidates:
        if candidate.test_set is not None:
            files.reads(candidate.test_set.ledger)  # the ledger the verdicts read
    files.check()
    report_json = render_json(report)
    if out is not None:
        with atomic_directory(out, force, inputs=files.inputs, marker=REPORT_FILE) as staging:
            write_report(staging / REPORT_FILE, report)
            atomic_write_text(staging / REPORT_MARKDOWN_FILE, render_comparison_markdown(report))
            html = render_comparison_html(report, flip_outputs(report.candidates))
            atomic_write_text(staging / REPORT_HTML_FILE, html)
            atomic_write_text(staging / JUNIT_FILE, render_junit(report.candidates))
    output.write_json(report_json)
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
