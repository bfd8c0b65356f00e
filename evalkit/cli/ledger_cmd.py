"""``evalkit ledger``: how often each test set was looked at, and what that costs."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option


@click.command("ledger", cls=Command)
@click.argument("path", required=False, default=".", type=click.Path(path_type=Path))
@json_option("Write the report as JSON")
@click.option("--force", is_flag=True, help="Overwrite the --json file if it exists.")
@quiet_option
def ledger_command(path: Path, json_path: Path | None, force: bool, quiet: bool) -> None:
    """Report the looks at each gold file recorded in a test-set ledger.

    Every `evalkit score` appends a line to evalkit-ledger.jsonl beside the
    gold file (or --ledger FILE). PATH is that ledger, the folder holding
    it, or a gold file (its ledger, that file only); default: the current
    folder. A look is a distinct pair of the answers judged (ids and outputs)
    and the contract's rules: scoring the same answers again (from any file
    or column) adds a line but no look; another output column is another look.

    \b
    States:
      fresh   no look
      seen    one look: unbiased, if nothing was chosen on it
      reused  2-4 looks: a choice made on it may inflate every figure by up to
              0.45·√L standard errors (keeping what beat the baseline)
      burned  5+ looks, or a contract first used after another (the rules
              changed after the test was seen), or an edited/removed line,
              or lines cut from the end (its head, evalkit-ledger.head,
              records more)
    A burned test should be retired: freeze a new test split. A test set is
    its rows: the same ids and gold values in another file (test.parquet,
    test.jsonl) count together.

    \b
    Example:
      evalkit ledger demo-out/split/test.parquet
      evalkit ledger demo-out/split --json ledger.json

    Exit codes: 0 reported (whatever the states; `gate` with
    require_fresh_test enforces), 2 no such ledger or bad input.
    """
    from evalkit.provenance.ledger_state import ledger_report
    from evalkit.report.ledger_summary import render_ledger

    output = Output(json_path, quiet)
    report = ledger_report(path, json=output.json_file, force=force)
    output.print_json(report.model_dump_json(indent=2) + "\n")
    output.say(render_ledger(report))
    if output.json_file is not None:
        output.say(f"wrote {json_path}")
    output.wrote([json_path])
