"""The lines ``evalkit prompts`` prints: what was written, and how to score the answers."""

from __future__ import annotations

from evalkit.chat.prompts import PromptFile


def render_prompts_summary(prompts: PromptFile, out: str) -> str:
    """What the prompt file holds and, for a Batch file, the command that scores its output."""
    what = "conversations" if prompts.kind == "conversation" else "texts (one user turn each)"
    shape = f" ({prompts.shape})" if prompts.kind == "conversation" else ""
    lines = [f"prompts: {prompts.n:,} {what}{shape} from {prompts.source}"]
    if prompts.kind == "conversation":
        lines.append(
            f"  reference answers left out: {prompts.answers_left_out:,} "
            "(the last assistant turn of each conversation)"
        )
    if prompts.tool_calls or prompts.with_tools:
        line = (
            f"  tools: {prompts.with_tools:,} prompts send the row's tools (column "
            f"{prompts.tools_column}); {prompts.tool_calls:,} tool calls kept, each answered "
            "by its tool message"
            if prompts.tools_column is not None
            else f"  tools: {prompts.tool_calls:,} tool calls kept, each answered by its tool "
            "message"
        )
        lines.append(line)
    if prompts.ids_made_up:
        lines.append(
            f"  call ids made up: {prompts.ids_made_up:,} (the data has none; "
            "call_<message>_<call>, tool answers matched in order)"
        )
    if prompts.tools_wrapped:
        lines.append(
            f"  tool schemas wrapped: {prompts.tools_wrapped:,} bare {{name, ...}} schemas sent "
            'as {"type": "function", "function": ...}'
        )
    if prompts.format == "openai-batch":
        lines.append(f"wrote {out} (openai-batch requests, model {prompts.model})")
        lines.append(
            "next: run it as a Batch job (or on an OpenAI-compatible server), then score the "
            "output file with: evalkit score --pred-format openai-batch --pred OUTPUT.jsonl ..."
        )
    else:
        what = "id, messages and tools" if prompts.with_tools else "id and messages"
        lines.append(f"wrote {out} (jsonl: {what} per line)")
    return "\n".join(lines)
