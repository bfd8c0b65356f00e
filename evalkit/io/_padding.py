"""What a columnar container adds to nested values, and taking it away again.

Arrow (so polars, Parquet and a Hugging Face dataset) gives a column one
type: a struct holds every key that any row's object has, and a row that
lacked a key holds null there. Built from records whose objects differ by row
(tool schemas with other properties, messages with and without
``tool_calls``), every object comes back with the other rows' keys as null:
``"location": null`` in a tool's ``properties``, ``"tool_calls": null`` in a
user message. A chat template renders them (``tools | tojson``), so a
trainer given such a container trains on them.

In such a container a null object member is therefore read as absent: a
``properties`` entry that is null is no JSON Schema, a JSON Schema keyword
that is null (``"enum": null``) is none, and a message key that is null
(``tool_calls``, ``weight``, ``name``) means what the OpenAI API reads it as,
absent; a message's null ``content`` stays (a message always has content,
and templates read the key). The one value this cannot tell from padding is a
member written as null on purpose (a ``"default": null``, a tool-call argument passed as
null); such data keeps it only in a container that holds each row as written
(JSON Lines, ``.json``, JSON text in a CSV or Parquet column, or a pandas
frame of dicts).
"""

from __future__ import annotations

from typing import Any


def strip_padding(value: Any) -> tuple[Any, bool]:
    """``value`` without null object members, at any depth; and whether it had any.

    A message (an object with a ``role``) keeps its ``content`` when null: a message
    always has content, null is how the API writes none (beside ``tool_calls``), and
    chat templates read the key.
    """
    if isinstance(value, dict):
        stripped: dict[str, Any] = {}
        padded = False
        message = "role" in value
        for key, item in value.items():
            if item is None:
                if message and key == "content":
                    stripped[key] = None
                    continue
                padded = True
                continue
            stripped[key], inner = strip_padding(item)
            padded = padded or inner
        return stripped, padded
    if isinstance(value, list):
        items = [strip_padding(item) for item in value]
        return [item for item, _ in items], any(inner for _, inner in items)
    return value, False


def same_value(written: Any, held: Any) -> bool:
    """Whether ``held`` is the JSON value ``written``: same keys, same types, same values.

    Key order does not matter (JSON objects are unordered); a boolean is not
    the number 1, and 1 is the same value as 1.0 only where JSON says so (a
    number); a struct field added as null makes the two differ.
    """
    if isinstance(written, dict):
        return (
            isinstance(held, dict)
            and written.keys() == held.keys()
            and all(same_value(written[key], held[key]) for key in written)
        )
    if isinstance(written, list | tuple):
        return (
            isinstance(held, list | tuple)
            and len(written) == len(held)
            and all(same_value(a, b) for a, b in zip(written, held, strict=True))
        )
    if isinstance(written, bool) or isinstance(held, bool):
        return type(written) is type(held) and written == held
    if isinstance(written, str) or isinstance(held, str):
        return type(written) is type(held) and written == held
    return bool(written == held)
