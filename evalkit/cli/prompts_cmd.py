"""``evalkit prompts``: the command line of :func:`evalkit.prompts` (which writes --out)."""

from __future__ import annotations

from pathlib import Path

import click

from evalkit.chat.prompt_options import PromptsParams
from evalkit.cli._params import params_options
from evalkit.cli._vocabulary import Command, Output, quiet_option


@click.command("prompts", cls=Command)
@click.argument("split", metavar="SPLIT", type=click.Path(path_type=Path))
@params_options(PromptsParams)
@click.option(
    "--out",
    required=True,
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="The prompt file to write (JSONL).",
)
@click.option("--force", is_flag=True, help="Overwrite --out if it exists.")
@quiet_option
def prompts_command(
    split: Path, params: PromptsParams, out: Path, force: bool, quiet: bool
) -> None:
    """Write the inference inputs of SPLIT: each conversation without its answer.

    SPLIT is one split file (JSONL, CSV, Parquet or .json), e.g. the test split
    of `evalkit split`, or a Hugging Face save_to_disk folder (a DatasetDict
    with --hf-split NAME). Every conversation loses its last assistant turn (the
    reference answer, which `evalkit score` reads back as gold with the
    contract key gold_answer); a text column becomes one user turn. Messages
    are written as the Chat Completions API takes them: {role, content},
    ShareGPT speakers mapped (function_call -> an assistant tool call,
    observation -> its tool answer), tool calls, tool_call_id and name kept,
    and the row's tools sent as body.tools. Every request is checked against
    the API's rules (each tool message answers a call of the assistant message
    before it, no empty assistant turn): a row that breaks them is exit 2,
    naming its line and message. Call ids the data lacks are made up
    (call_<message>_<call>) and said so.

    openai-batch lines are OpenAI Batch requests to /v1/chat/completions
    (custom_id = the id); run them as a Batch job or on an OpenAI-compatible
    server such as vLLM, and score the output file with
    `evalkit score --pred-format openai-batch`. jsonl lines are
    {<id column>: id, messages: [...]}.

    \b
    Example:
      evalkit prompts chat-split/test.jsonl --id ticket_id --text messages \\
        --out test.batch.jsonl --model my-finetuned-model --max-tokens 200
    """
    from evalkit.chat.prompts import prompts
    from evalkit.report.prompts_summary import render_prompts_summary

    result = prompts(split, params, out=out, force=force)
    output = Output(quiet=quiet)
    output.say(render_prompts_summary(result, str(out)))
    output.wrote([out])
