"""The options of a split's prompt file: ``evalkit.prompts``'s and ``evalkit prompts``'s.

Light on purpose (stdlib and :mod:`evalkit.options` only): ``evalkit prompts
--help`` builds its options from :class:`PromptsParams` without loading
polars. The checks of one value are here; that ``model``, ``max_tokens``
and ``temperature`` belong to ``openai-batch`` requests is checked by
:func:`evalkit.chat.prompts.prompts`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real
from typing import Literal

from evalkit.errors import ParameterError
from evalkit.options import Params, option
from evalkit.vocabulary import hf_split_field, id_field, system_field, text_field, tools_field

PromptFormat = Literal["openai-batch", "jsonl"]
MAX_TEMPERATURE = 2.0  # the Chat Completions API's range is [0, 2]


def _max_tokens(value: object, parameter: str) -> int:
    """A request's ``max_tokens``: a whole number >= 1 (the API refuses 0)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParameterError(parameter, f"must be at least 1, got {value!r}")
    return value


def _temperature(value: object, parameter: str) -> float:
    """A request's ``temperature``, in the API's range; kept as given (1 stays 1 in JSON)."""
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterError(parameter, f"must be between 0 and 2, got {value}")
    if not (math.isfinite(value) and 0.0 <= float(value) <= MAX_TEMPERATURE):
        raise ParameterError(parameter, f"must be between 0 and 2, got {value}")
    return value  # type: ignore[return-value]


@dataclass(frozen=True, kw_only=True)
class PromptsParams(Params):
    """What to write and how: every option of a prompt file but the split it reads.

    ``openai-batch`` needs ``model``; ``temperature`` defaults to 0 (greedy)
    and ``max_tokens`` is sent only when given. ``hf_split`` picks the split
    of a Hugging Face DatasetDict folder.
    """

    id_column: str = id_field("Id column of the split.", required=True)
    text: tuple[str, ...] = text_field(
        "Conversation column (messages, ShareGPT; nested or as JSON text) or text "
        "column; twice for prompt-completion (--text prompt --text completion), three times "
        "for Alpaca (--text instruction --text input --text output)."
    )
    system: str | None = system_field()
    tools: str | None = tools_field("sent as body.tools")
    format: PromptFormat = option(
        "openai-batch", help="OpenAI Batch requests, or {<id>, messages} lines."
    )
    model: str | None = option(
        None, metavar="NAME", help="Model of every Batch request (openai-batch)."
    )
    max_tokens: int | None = option(
        None,
        metavar="N",
        check=_max_tokens,
        help="max_tokens of every Batch request (default: not sent, the server's limit).",
    )
    temperature: float | None = option(
        None,
        metavar="T",
        check=_temperature,
        help="temperature of every Batch request [default: 0, greedy].",
    )
    hf_split: str | None = hf_split_field()
