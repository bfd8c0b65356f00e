"""The tokens report: typed, versioned, and the exact shape of ``--json``.

Every field is documented because the JSON file is an interface: a CI step
reads ``checks`` and the exit code, a notebook reads the figures. New
versions may add fields, never rename or remove one without bumping
``format_version``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit._version import __version__
from evalkit.io import source_field
from evalkit.records._base import Persisted
from evalkit.records._kinds import Encode, Loss, TruncationMode

TOKENS_FORMAT_VERSION = 1
CheckName = Literal[
    "template",
    "render_parity",
    "double_bos",
    "stop_token",
    "pad_is_eos",
    "special_tokens_in_text",
    "empty_mask",
    "truncation",
]
CHECK_NAMES: tuple[CheckName, ...] = (
    "template",
    "render_parity",
    "double_bos",
    "stop_token",
    "pad_is_eos",
    "special_tokens_in_text",
    "empty_mask",
    "truncation",
)
Status = Literal["pass", "warn", "fail", "skip"]


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class TokenizerInfo(_Model):
    """The tokenizer folder the data was measured with."""

    path: str = Field(description="The local tokenizer (or model) folder.")
    sha256: str = Field(
        description="sha256 over the folder's tokenizer files, as the adapter card computes it."
    )
    chat_template_sha256: str | None = Field(
        description="sha256 of the chat template's text; null when the tokenizer has none."
    )
    generation_markers: bool = Field(
        description="Whether the template marks assistant text with {% generation %}."
    )
    bos_token: str | None = Field(description="The BOS token, if any.")
    eos_token: str | None = Field(description="The eos token, if any.")
    pad_token: str | None = Field(description="The pad token, if any.")
    stop_tokens: list[str] = Field(
        description="Tokens generation stops on: the eos and generation_config.json's eos ids."
    )


class TokensOptions(_Model):
    """What the check was asked to do."""

    text: list[str] = Field(description="The --text column(s): one, or prompt and completion.")
    id: str | None = Field(description="Id column naming the examples; null: row numbers.")
    kind: Literal["text", "conversation"] = Field(description="What the column(s) hold.")
    encode: Encode = Field(
        description="template: the render tokenized as apply_chat_template(tokenize=True) "
        "does; text: tokenized as tokenizer(text) does, special tokens added."
    )
    loss: Loss = Field(description="Which tokens are supervised.")
    max_seq_length: int | None = Field(description="Training length limit; null: no limit.")
    truncation_mode: TruncationMode = Field(
        description="keep_start cuts the end of a long example, keep_end its start."
    )
    sample: int = Field(description="Examples per split shown in the HTML page.")
    seed: int = Field(description="Seed of the sample.")
    system: str | None = Field(
        default=None, description="--system: the column of system prompts, when given."
    )
    tools: str | None = Field(
        default=None, description="--tools: the column of tools passed to the template, when given."
    )


class Quantiles(_Model):
    """Token counts over a split's examples (numpy's linear percentiles)."""

    p50: float
    p95: float
    p99: float
    max: int


class TokenCounts(_Model):
    """Per-example token counts of a split, before truncation."""

    prompt: Quantiles = Field(description="Tokens the loss is not on (total - answer).")
    answer: Quantiles = Field(description="Supervised tokens (under --loss).")
    total: Quantiles = Field(description="Tokens of the whole training sequence.")


class Truncation(_Model):
    """What the length limit (``max_seq_length``) does to a split."""

    max_seq_length: int = Field(description="The limit.")
    over_limit: int = Field(description="Examples longer than the limit.")
    answer_cut_partly: int = Field(
        description="Examples keeping some but not all supervised tokens."
    )
    answer_cut_fully: int = Field(description="Examples with supervised tokens that keep none.")
    eos_lost: int = Field(
        description="Examples where a kept assistant turn loses the stop token that closes it."
    )


class ArgumentsHanded(_Model):
    """How the tool calls' arguments were handed to the chat template, counted over a split."""

    parsed: int = Field(
        description="Arguments written as a JSON string holding an object, handed over as that "
        "object (HF templates write arguments with tojson)."
    )
    text: int = Field(
        description="Arguments written as a string that is not a JSON object, handed over as "
        "written."
    )
    as_written: int = Field(
        description="Arguments written as a JSON value (TRL, LLaMA-Factory), handed over as "
        "that value."
    )


class SplitTokens(_Model):
    """The figures of one split (one input file)."""

    path: str | None = Field(description="The file the split was read from (null for a frame).")
    sha256: str = Field(
        description="sha256 of that file's bytes "
        "(of every file, by relative name and content, for a dataset folder; of the content, "
        "for a frame)."
    )
    source: Literal["frame"] | None = source_field()
    n: int = Field(description="Examples in the split.")
    tokens: TokenCounts | None = Field(description="Token count quantiles; null without examples.")
    supervised_ratio: float | None = Field(
        description="Supervised tokens over all tokens, before truncation; null without tokens."
    )
    total_tokens: int | None = Field(
        description="Tokens of every training sequence, summed, before truncation; null when "
        "nothing could be measured (no chat template).",
    )
    supervised_tokens: int | None = Field(
        description="Supervised tokens (under --loss), summed, before truncation; null when "
        "nothing could be measured.",
    )
    excluded_turns: int = Field(
        description="Assistant turns --loss assistant leaves out because their training flag "
        "says so (weight: 0, training: false); 0 under the other losses.",
    )
    tool_calls: int = Field(description="Tool calls in the split's conversations.")
    empty_tool_lists: int | None = Field(
        default=None,
        exclude_if=lambda value: not value,
        description="Rows whose tools value is an empty list, rendered without tools (as "
        "the OpenAI API and TRL read it: no tools, not a function-calling preamble that "
        "lists none). Absent when there is none.",
    )
    arguments: ArgumentsHanded | None = Field(
        description="How those calls' arguments reached the chat template; null for text data.",
    )
    truncation: Truncation | None = Field(
        description="Null without a length limit (max_seq_length)."
    )


class ExampleRef(_Model):
    """One example a check found."""

    split: str
    id: str


class CheckResult(_Model):
    """One check over every split."""

    name: CheckName = Field(description="The check (see docs/tokens.md).")
    status: Status = Field(description="pass, warn, fail, or skip (could not run: see detail).")
    count: int = Field(description="Examples it fired on, summed over the splits.")
    counts: dict[str, int] = Field(description="The count per split.")
    examples: list[ExampleRef] = Field(description="Up to 5 of those examples, in input order.")
    detail: str = Field(description="What was found, or why the check passed or was skipped.")


class TokensReport(_Model):
    """Everything ``evalkit tokens`` found, as written by ``--json``."""

    format_version: int = Field(
        default=TOKENS_FORMAT_VERSION, description="Bumped on any incompatible change."
    )
    evalkit_version: str = Field(default=__version__, description="evalkit that wrote it.")
    tokenizer: TokenizerInfo
    options: TokensOptions
    splits: dict[str, SplitTokens] = Field(description="Per split, in input order.")
    checks: list[CheckResult] = Field(description="Every check, in a fixed order.")
    status: Literal["pass", "warn", "fail"] = Field(
        description="fail when a check fails (exit 1), warn when one warns, else pass."
    )

    def check(self, name: CheckName) -> CheckResult:
        """The result of the check ``name``."""
        return next(check for check in self.checks if check.name == name)
