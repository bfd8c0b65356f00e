"""``evalkit gate``: the CI verdict on one candidate (exit 0 pass, 1 fail, 2 bad input)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from evalkit.cli._comparison_options import RESULT_FOLDER, verdict_lines, warn_unpaired
from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.comparison.options import GateParams

OUTPUT_FILE = click.Path(dir_okay=False, path_type=Path)


@click.command("gate", cls=Command)
@click.argument("baseline", type=RESULT_FOLDER)
@click.argument("candidate", type=RESULT_FOLDER)
@click.option(
    "--junit", type=OUTPUT_FILE, help="Write JUnit XML: one test case per rule and scope."
)
@click.option("--markdown", type=OUTPUT_FILE, help="Write the Markdown report.")
@click.option(
    "--html",
    type=OUTPUT_FILE,
    help="Write the HTML report: charts and the flipped examples, one self-contained page.",
)
@json_option("Write the report as JSON")
@click.option("--force", is_flag=True, help="Overwrite report files that exist already.")
@params_options(GateParams)
@quiet_option
def gate_command(
    baseline: str,
    candidate: str,
    junit: Path | None,
    markdown: Path | None,
    html: Path | None,
    json_path: Path | None,
    force: bool,
    params: GateParams,
    quiet: bool,
) -> None:
    """Judge CANDIDATE against BASELINE with the contract's gate rules.

    BASELINE and CANDIDATE are folders written by `evalkit score` under the
    same contract and gold file (otherwise: exit 2). Examples are paired by
    id; every rule of the contract's `gate` block is checked overall, per
    class and per slice. A rare class is judged by its own threshold alone;
    with `vs_baseline.significance` set, an overall or non-rare class drop
    fails only if its (Holm-adjusted) exact McNemar p is also below it.

    Provenance: results that record different bases (id, revision,
    quantization) are refused (exit 2) unless --allow-base-change. Every
    setting of the adapter cards that differs is listed; with --factor KEY
    (e.g. --factor r) any other difference fails as confounded_ablation
    (for r, fixed lora_alpha and fixed lora_alpha/r are both accepted and
    named). The test set's ledger state is printed; with
    `require_fresh_test: true` in the gate block, a burned test fails; with
    `require_servable: vllm`, a candidate whose adapter card says vLLM does
    not serve it as it is (or that records no card) fails.

    \b
    Exit codes: 0 the candidate passes, 1 it fails a rule, 2 bad input.
    Under GitHub Actions, failures are printed as ::error annotations and the
    Markdown report is appended to $GITHUB_STEP_SUMMARY.

    \b
    Example:
      evalkit gate runs/baseline runs/candidate --junit gate.xml --html gate.html
    """
    from evalkit.cli._warnings import deferred_warnings
    from evalkit.cli._workflow_guard import emit_command, under_github_actions
    from evalkit.comparison.api import gate
    from evalkit.report.comparison_files import GATE_FILES
    from evalkit.report.github import error_annotations
    from evalkit.report.json_report import render_json

    output = Output(json_path, quiet)
    outputs = [path for path in (junit, markdown, html, output.json_file) if path is not None]
    with deferred_warnings() as later:
        report = gate(
            baseline,
            candidate,
            params,
            junit=junit,
            markdown=markdown,
            html=html,
            json=output.json_file,
            step_summary=os.environ.get("GITHUB_STEP_SUMMARY") or None,
            render=GATE_FILES,
            force=force,
        )
    warn_unpaired(report)
    output.print_json(render_json(report))
    for line in verdict_lines(report):
        output.say(line)
    for path in outputs:
        output.say(f"wrote {path}")
    output.wrote(outputs)
    if under_github_actions():
        for line in error_annotations(report):
            emit_command(line)
    for line in later:
        click.echo(line, err=True)
    click.get_current_context().exit(0 if report.verdict == "pass" else 1)
