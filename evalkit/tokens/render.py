"""Rendering conversations with a chat template, and encoding the renders.

This is the one place where messages become the text and the token ids a
model sees, for training (the whole conversation) and for inference (the
prompt, ``add_generation_prompt=True``). Encoding follows what
``apply_chat_template(tokenize=True)`` does - the render tokenized without
adding special tokens, since the template writes its own - but in batches:
rendering once and encoding many renders at a time is far faster than one
``apply_chat_template`` call per example, and gives the same ids.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from evalkit.errors import EvalkitError, UsageError
from evalkit.tokens.load import chat_template
from evalkit.tokens.time_limit import Watch, time_limit

Messages = Sequence[dict[str, Any]]
Tools = list[dict[str, Any]] | None
"""A conversation's tools, as ``apply_chat_template(…, tools=…)`` takes them."""
# CPU seconds one conversation's render may take: real templates take milliseconds on
# the longest conversations; a template that loops for ever is stopped after this.
RENDER_SECONDS = 10.0


class TemplateFailure(EvalkitError):
    """The chat template refused a conversation (e.g. roles that do not alternate)."""


def require_template(tokenizer: Any, where: str) -> str:
    """The tokenizer's chat template, or a clear error naming where it was looked for."""
    template = chat_template(tokenizer)
    if template is None:
        raise UsageError(
            f"{where}: the tokenizer has no chat template (neither 'chat_template' in "
            "tokenizer_config.json nor chat_template.jinja), so conversations cannot be "
            "rendered; add the model family's template, or pass text columns"
        )
    return template


GENERATION_MARKER = re.compile(r"\{%-?\s*generation\s*-?%\}")


def has_generation_markers(template: str | None) -> bool:
    """Whether a chat template marks the assistant's tokens with ``{% generation %}``."""
    return template is not None and GENERATION_MARKER.search(template) is not None


def render(tokenizer: Any, messages: Messages, *, add_generation_prompt: bool = False) -> str:
    """One conversation rendered by the tokenizer's chat template, as text."""
    with _limited(tokenizer, lambda _: "the conversation") as watch:
        watch.at(0)
        text = tokenizer.apply_chat_template(
            list(messages), tokenize=False, add_generation_prompt=add_generation_prompt
        )
    assert isinstance(text, str)
    return text


# Message keys transformers copies under other names before rendering (reasoning aliases).
_ALIASED = frozenset(("reasoning_content", "thinking", "reasoning"))


def _is_json(value: Any) -> bool:
    """Built of exact JSON types only (str, int, float, bool, None, list, str-keyed dict)."""
    kind = type(value)
    if value is None or kind is str or kind is int or kind is float or kind is bool:
        return True
    if kind is list:
        return all(_is_json(item) for item in value)
    if kind is dict:
        return all(type(key) is str and _is_json(item) for key, item in value.items())
    return False


def _is_plain(messages: Messages) -> bool:
    """Messages of exact JSON values (strings, and tool calls of strings and parsed
    arguments), without reasoning fields: what transformers' input conversion
    (``_plain_template_data``, ``_alias_reasoning_fields``) leaves as it is."""
    return type(messages) is list and all(
        type(message) is dict
        and all(
            type(key) is str and key not in _ALIASED and (type(value) is str or _is_json(value))
            for key, value in message.items()
        )
        for message in messages
    )


def _direct_renders(
    tokenizer: Any,
    conversations: Sequence[Messages],
    add_generation_prompt: bool,
    watch: Watch,
    tools: Tools = None,
) -> list[str] | None:
    """The renders from transformers' compiled template itself, or None where that is unsafe.

    ``render_jinja_template`` first rebuilds every message out of plain JSON
    values (so that rich objects never reach the sandbox) and aliases
    reasoning fields; for messages that are plain strings already (what
    evalkit.chat produces) both leave them unchanged, and skipping them halves
    the cost of a render. The first conversation is rendered both ways, and
    any difference sends the whole batch down the general path.
    """
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template
    except ImportError:  # a transformers without it: the general path
        return None
    if not conversations or not all(_is_plain(messages) for messages in conversations):
        return None
    listed = list(tools) if tools is not None else None
    if not _is_json(listed):
        return None
    compiled = _compile_jinja_template(chat_template(tokenizer))
    variables = dict(tokenizer.special_tokens_map)

    def one(messages: Messages) -> str:
        return str(
            compiled.render(
                messages=messages,
                tools=listed,
                documents=None,
                add_generation_prompt=add_generation_prompt,
                **variables,
            )
        )

    watch.at(0)
    first = one(conversations[0])
    general, _ = _render_batch(
        tokenizer,
        conversations[:1],
        add_generation_prompt=add_generation_prompt,
        spans=False,
        tools=tools,
    )
    if general != [first]:
        return None
    renders = [first]
    for row in range(1, len(conversations)):
        watch.at(row)
        renders.append(one(conversations[row]))
    return renders


class _Ticking(list[Any]):
    """The conversations as transformers iterates them, telling the watch which one renders."""

    def __init__(self, conversations: Sequence[Messages], watch: Watch | None, first: int) -> None:
        super().__init__(list(messages) for messages in conversations)
        self.watch, self.first = watch, first

    def __iter__(self) -> Iterator[Any]:
        for row, messages in enumerate(super().__iter__()):
            if self.watch is not None:
                self.watch.at(self.first + row)
            yield messages


def _render_batch(
    tokenizer: Any,
    conversations: Sequence[Messages],
    *,
    add_generation_prompt: bool,
    spans: bool,
    watch: Watch | None = None,
    first: int = 0,
    tools: Tools = None,
) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """transformers' own renderer over the whole batch: what apply_chat_template renders.

    ``render_jinja_template`` is the function ``apply_chat_template`` calls,
    with the tokenizer's special tokens as template variables; calling it
    once for all conversations skips the per-call set-up of
    ``apply_chat_template``, which costs as much as the render itself.
    """
    try:
        from transformers.utils.chat_template_utils import render_jinja_template
    except ImportError:  # pragma: no cover - transformers older than the extra asks for
        raise UsageError(
            "rendering chat templates needs transformers >= 4.51: "
            "pip install -U 'evalkit[tokenize]'"
        ) from None
    template = chat_template(tokenizer)
    rendered: Any = render_jinja_template(
        conversations=_Ticking(conversations, watch, first),
        tools=list(tools) if tools is not None else None,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        return_assistant_tokens_mask=spans,
        **tokenizer.special_tokens_map,
    )
    renders, indices = rendered
    found = [[(int(s), int(e)) for s, e in row] for row in indices] if spans else []
    return list(renders), found


def _template_file(tokenizer: Any) -> str:
    """Where the tokenizer's chat template is written, to name it in an error."""
    folder = Path(str(getattr(tokenizer, "name_or_path", "") or "."))
    jinja = folder / "chat_template.jinja"
    if jinja.is_file():
        return str(jinja)
    return f"{folder / 'tokenizer_config.json'} ('chat_template')"


def _limited(tokenizer: Any, where: Callable[[int], str]) -> Any:
    """The renders of the block under :data:`RENDER_SECONDS` each (read at call time)."""
    return time_limit(RENDER_SECONDS, _template_file(tokenizer), where)


def _uncompilable(tokenizer: Any) -> TemplateFailure | None:
    """The template's own fault, when it does not compile: no conversation is to blame."""
    try:
        from transformers.utils.chat_template_utils import _compile_jinja_template
    except ImportError:  # a transformers without it: the rows say what they can
        return None
    template = chat_template(tokenizer)
    if template is None:
        return None
    try:
        _compile_jinja_template(template)
    except ImportError:
        raise
    except Exception as error:  # jinja2's syntax and assertion errors, and what else it raises
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        line = getattr(error, "lineno", None)
        at = f", line {line}" if isinstance(line, int) else ""
        return TemplateFailure(
            f"{_template_file(tokenizer)}{at}: the chat template does not compile "
            f"({type(error).__name__}: {first[:200]}); fix the template"
        )
    return None


def _failing_row(
    tokenizer: Any,
    conversations: Sequence[Messages],
    add_generation_prompt: bool,
    where: Callable[[int], str],
    tools: Tools = None,
) -> TemplateFailure | None:
    """The first conversation the template refuses, as an error naming its row."""
    for row, messages in enumerate(conversations):
        try:
            with _limited(tokenizer, where) as watch:
                _render_batch(
                    tokenizer,
                    [messages],
                    add_generation_prompt=add_generation_prompt,
                    spans=False,
                    watch=watch,
                    first=row,
                    tools=tools,
                )
        except EvalkitError:
            raise
        except Exception as error:  # a template may raise anything; the user needs one line
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            return TemplateFailure(
                f"{where(row)}: the chat template refused this conversation "
                f"({type(error).__name__}: {first[:200]})"
            )
    return None


def _rendered(
    tokenizer: Any,
    conversations: Sequence[Messages],
    *,
    add_generation_prompt: bool,
    spans: bool,
    where: Callable[[int], str],
    tools: Sequence[Tools] | None = None,
) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Every conversation rendered, each with its own tools (``tools[row]``).

    transformers renders a batch with one tools list, so rows are rendered in
    groups that share theirs (the same list object: evalkit.chat parses each
    distinct tools value once), and put back in order.
    """
    if tools is None or all(row_tools is None for row_tools in tools):
        return _rendered_group(
            tokenizer,
            conversations,
            add_generation_prompt=add_generation_prompt,
            spans=spans,
            where=where,
            tools=None,
        )
    groups: dict[int, list[int]] = {}
    for row, row_tools in enumerate(tools):
        groups.setdefault(id(row_tools), []).append(row)
    renders: list[str] = [""] * len(conversations)
    found: list[list[tuple[int, int]]] = [[] for _ in conversations]
    for rows in groups.values():
        group_renders, group_spans = _rendered_group(
            tokenizer,
            [conversations[row] for row in rows],
            add_generation_prompt=add_generation_prompt,
            spans=spans,
            where=lambda k, rows=rows: where(rows[k]),  # type: ignore[misc]
            tools=tools[rows[0]],
        )
        for k, row in enumerate(rows):
            renders[row] = group_renders[k]
            if spans:
                found[row] = group_spans[k]
    return renders, found if spans else []


def _rendered_group(
    tokenizer: Any,
    conversations: Sequence[Messages],
    *,
    add_generation_prompt: bool,
    spans: bool,
    where: Callable[[int], str],
    tools: Tools,
) -> tuple[list[str], list[list[tuple[int, int]]]]:
    if not conversations:
        return [], []
    try:
        with _limited(tokenizer, where) as watch:
            if not spans:
                direct = _direct_renders(
                    tokenizer, conversations, add_generation_prompt, watch, tools
                )
                if direct is not None:
                    return direct, []
            return _render_batch(
                tokenizer,
                conversations,
                add_generation_prompt=add_generation_prompt,
                spans=spans,
                watch=watch,
                tools=tools,
            )
    except EvalkitError:
        raise
    except Exception as error:  # find the row that broke the batch, and name it
        broken = _uncompilable(tokenizer)
        if broken is not None:
            raise broken from None
        failure = _failing_row(tokenizer, conversations, add_generation_prompt, where, tools)
        if failure is not None:
            raise failure from None
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        raise TemplateFailure(
            f"the chat template failed ({type(error).__name__}: {first[:200]})"
        ) from None


def render_all(
    tokenizer: Any,
    conversations: Sequence[Messages],
    *,
    add_generation_prompt: bool = False,
    where: Callable[[int], str] = lambda row: f"row {row + 1}",
    tools: Sequence[Tools] | None = None,
) -> list[str]:
    """Every conversation rendered (with its ``tools[row]``); a template error names the row
    (``where``)."""
    renders, _ = _rendered(
        tokenizer,
        conversations,
        add_generation_prompt=add_generation_prompt,
        spans=False,
        where=where,
        tools=tools,
    )
    return renders


def render_with_generation_spans(
    tokenizer: Any,
    conversations: Sequence[Messages],
    *,
    where: Callable[[int], str] = lambda row: f"row {row + 1}",
    tools: Sequence[Tools] | None = None,
) -> tuple[list[str], list[list[tuple[int, int]]]]:
    """Training renders and, per render, the character spans of its ``{% generation %}`` blocks.

    These spans are what ``apply_chat_template(return_assistant_tokens_mask=True)``
    turns into its assistant mask: the template says which text is the model's.
    """
    return _rendered(
        tokenizer, conversations, add_generation_prompt=False, spans=True, where=where, tools=tools
    )


def encode_renders(
    tokenizer: Any, renders: Sequence[str], *, offsets: bool = False
) -> list[list[int]] | Any:
    """Token ids of rendered texts, as ``apply_chat_template(tokenize=True)`` gives them.

    With ``offsets`` the whole batch encoding is returned (``input_ids`` and
    ``offset_mapping``), for mapping characters of the render to tokens.
    """
    encoded = tokenizer(
        list(renders),
        add_special_tokens=False,
        return_offsets_mapping=offsets,
        return_attention_mask=False,
    )
    return encoded if offsets else encoded["input_ids"]


def prompt_renders(
    tokenizer: Any,
    prompts: Sequence[Messages],
    *,
    where: Callable[[int], str] = lambda row: f"row {row + 1}",
    tools: Sequence[Tools] | None = None,
) -> list[str]:
    """The inference prompts: each conversation's prompt with the generation prompt added."""
    return render_all(tokenizer, prompts, add_generation_prompt=True, where=where, tools=tools)
