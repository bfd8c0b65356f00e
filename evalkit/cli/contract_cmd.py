"""``evalkit contract``: check a contract, print the contract format's JSON Schema."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._vocabulary import Command, Group, Output, quiet_option


@click.group("contract", cls=Group)
def contract_group() -> None:
    """Check evaluation contracts and print their format.

    \b
    evalkit contract check FILE   validate FILE; print its fingerprint and
                                  the normalised contract (every default
                                  explicit, the JSON Schema inline)
    evalkit contract schema       print the JSON Schema of the contract format
                                  (committed as contracts/contract.schema.json)

    Exit codes: 0 valid; 2 invalid contract (the message names the key).
    """


@contract_group.command("check", cls=Command)
@click.argument("file", type=click.Path(path_type=Path))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["yaml", "json"]),
    default="yaml",
    show_default=True,
    help="How to print the normalised contract.",
)
@quiet_option
def check_command(file: Path, fmt: str, quiet: bool) -> None:
    """Validate a contract; print its fingerprint and normalised form.

    The fingerprint covers the normalised contract and the evaluator
    semantics (parser, validator and their versions): two results are
    comparable only when their fingerprints are equal. With --quiet
    nothing is printed: the exit code says whether FILE is valid.

    \b
    Example:
      evalkit contract check contracts/ticket-triage.yaml
    """
    import orjson
    import yaml

    from evalkit.contract import contract_fingerprint, load_contract, normalized_contract

    contract = load_contract(file)
    normalized = normalized_contract(contract)
    output = Output(quiet=quiet)
    output.say(f"# {file}: valid contract {contract.name} v{contract.version}")
    output.say(f"# fingerprint: {contract_fingerprint(contract)}")
    if fmt == "json":
        output.say(orjson.dumps(normalized, option=orjson.OPT_INDENT_2).decode())
    else:
        output.say(yaml.safe_dump(normalized, sort_keys=False, allow_unicode=True).rstrip())


@contract_group.command("schema", cls=Command)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    help="Write the schema to this file (atomically) instead of printing it.",
)
@click.option("--force", is_flag=True, help="Overwrite an existing --out file.")
@quiet_option
def schema_command(out: Path | None, force: bool, quiet: bool) -> None:
    """Print the JSON Schema of the contract format.

    Editors use it to complete and check contract files; it is generated
    from the contract model and committed as contracts/contract.schema.json.
    With --out the path written is all that is printed (--quiet or not).

    \b
    Example:
      evalkit contract schema --out contracts/contract.schema.json --force
    """
    from evalkit.contract.schema import contract_json_schema_text

    text = contract_json_schema_text(out=out, force=force)
    if out is None:
        click.echo(text, nl=False)
        return
    Output(quiet=True).wrote([out])  # the path is the whole summary, quiet or not
