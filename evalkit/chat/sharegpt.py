"""ShareGPT ``conversations`` (axolotl, LLaMA-Factory): ``{from, value}`` messages.

``function_call`` is the assistant's call (LLaMA-Factory's ``function_tag``,
its Role.FUNCTION, trained on like any assistant turn), its value the JSON
text of ``{name, arguments}``; ``observation`` the tool's answer
(``observation_tag``): src/llamafactory/data/parser.py and converter.py.
"""

from __future__ import annotations

from evalkit.chat.dialect import MessageDialect

SHAREGPT = MessageDialect(
    name="sharegpt",
    label="ShareGPT",
    role_key="from",
    content_key="value",
    roles={
        "system": "system",
        "human": "user",
        "user": "user",
        "gpt": "assistant",
        "assistant": "assistant",
        "tool": "tool",
        "function_call": "assistant",
        "observation": "tool",
    },
    call_turns=frozenset({"function_call"}),
)
