"""The options of a tokens check: ``evalkit.check_tokens``'s and ``evalkit tokens``'s.

Light on purpose (stdlib and :mod:`evalkit.options` only): ``evalkit tokens
--help`` builds its options from :class:`TokensParams` without loading
pydantic or polars. The report's record of what was asked
(:class:`~evalkit.records._tokens.TokensOptions`) is written from it, with the
defaults resolved against the data.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from evalkit import params
from evalkit.options import Params, option
from evalkit.records import Encode, Loss, TruncationMode
from evalkit.vocabulary import id_field, seed_field, system_field, text_field, tools_field


@dataclass(frozen=True, kw_only=True)
class TokensParams(Params):
    """What to check and how: every option of a tokens check but its inputs (the splits and
    the tokenizer folder).

    ``None`` means the default the data decides: ``loss`` and ``encode`` follow
    what ``text`` holds, ``sample`` is 0 (no examples kept for the page).
    """

    text: tuple[str, ...] = text_field(
        "Conversation or text column; twice for prompt and completion columns, three times "
        "for Alpaca (--text instruction --text input --text output)."
    )
    system: str | None = system_field()
    tools: str | None = tools_field("passed to the chat template")
    id_column: str | None = id_field("Id column naming examples (default: row).")
    seq_len: int | None = option(
        None,
        aliases=("--max-seq-length",),
        renamed=("max_seq_length",),
        metavar="N",
        check=functools.partial(params.positive, unit="tokens"),
        help="Training length limit: count what it cuts (answers, stop tokens).",
    )
    loss: Loss | None = option(
        None,
        help="Supervised tokens: assistant turns, calls included, less those marked weight: 0 "
        "or training: false (default for conversations), the completion column (default for "
        "two columns), or all (default for one text column).",
    )
    encode: Encode | None = option(
        None,
        help="template: the chat template's render as apply_chat_template(tokenize=True) "
        "encodes it (default for conversations); text: tokenizer(text), special tokens added.",
    )
    truncation_mode: TruncationMode = option(
        "keep_start", help="What --seq-len keeps (TRL's names): the start, or the end."
    )
    sample: int | None = option(
        None,
        metavar="N",
        check=lambda value, parameter: params.at_least(value, 0, parameter, "examples per split"),
        help="Examples per split shown in --html (default 5).",
    )
    seed: int = seed_field("Seed of the sample.")
