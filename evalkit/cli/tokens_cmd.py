"""``evalkit tokens``: the command-line face of :func:`evalkit.check_tokens`."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, json_option, quiet_option
from evalkit.tokens.options import TokensParams


@click.command("tokens", cls=Command)
@click.argument(
    "files", metavar="FILE...", nargs=-1, required=True, type=click.Path(path_type=Path)
)
@click.option(
    "--tokenizer",
    required=True,
    type=click.Path(path_type=Path),
    metavar="DIR",
    help="Local tokenizer or model folder (loaded offline; nothing is downloaded).",
)
@params_options(TokensParams)
@json_option("Write the whole report as JSON (docs/schemas/tokens-report.schema.json)")
@click.option(
    "--html",
    "html_path",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write a page showing sampled examples token by token.",
)
@click.option("--force", is_flag=True, help="Overwrite the --json and --html files if they exist.")
@quiet_option
def tokens_command(
    files: tuple[Path, ...],
    tokenizer: Path,
    params: TokensParams,
    json_path: Path | None,
    html_path: Path | None,
    force: bool,
    quiet: bool,
) -> None:
    """Check the data as the model will see it, before any GPU is rented.

    Each FILE (JSONL, CSV, Parquet, .json, or a Hugging Face Dataset folder)
    is a split, named by its file stem; a folder written by `evalkit split`, or
    a Hugging Face DatasetDict folder, stands for its splits. Conversations
    are rendered with the tokenizer's chat template and encoded as
    apply_chat_template(messages, tools=tools, tokenize=True) does (tool
    calls, tool answers and the row's --tools column reach the template);
    the loss mask is on every assistant turn as the template writes it (its
    text, its tool calls and the end-of-turn token that closes it) except
    turns marked weight: 0 or training: false, taken from the template's
    {% generation %} markers when it has them, else from each turn's span
    after its header.

    \b
    Checks (each pass, warn or fail, with a count and example ids):
      template                conversations but no chat template (fail)
      render_parity           the inference prompt is not a token prefix
                              of the training sequence (fail)
      double_bos              the ids start with two BOS tokens (fail)
      stop_token              a supervised turn does not end with a token
                              generation stops on (fail)
      pad_is_eos              the pad token is a stop token (warn)
      special_tokens_in_text  text holds a special token's string (warn)
      empty_mask              an example has no supervised token (fail)
      truncation              --seq-len cuts a whole answer or its
                              stop token (fail), or only the prompt (warn)

    Exit codes: 0 no check failed, 1 a check failed, 2 bad input (a missing
    folder or column, no tokenizer files, --seq-len <= 0).

    \b
    Example:
      evalkit tokens split/ --tokenizer model/ --text messages --id ticket_id \\
        --seq-len 512 --json tokens.json --html tokens.html
    """
    from evalkit.errors import UsageError
    from evalkit.report.html.tokens import tokens_page
    from evalkit.report.tokens_summary import render_tokens_summary
    from evalkit.tokens.api import check_tokens

    if params.sample is not None and html_path is None:
        raise UsageError("--sample: the sampled examples are shown in --html FILE; give it too")
    output = Output(json_path, quiet)
    result = check_tokens(
        list(files),
        params,
        tokenizer=tokenizer,
        json=output.json_file,
        html=html_path,
        html_page=tokens_page,
        force=force,
    )
    report = result.report
    output.print_json(report.model_dump_json(indent=2) + "\n")
    output.say(
        render_tokens_summary(report, output.json_name, str(html_path) if html_path else None)
    )
    output.wrote([json_path, html_path])
    click.get_current_context().exit(1 if result.failed else 0)
