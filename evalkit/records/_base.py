"""The one base class of the models of files evalkit writes and reads back.

Every report, record and summary evalkit persists is a pydantic model on
this base, with the same settings: an unknown key is refused when a file is
read (a typo or a newer format is never silently dropped), a model read or
built is immutable (what was read is what is written back), and each
field's docstring is its description in the JSON Schema of docs/schemas/.
Each file's format version is checked when it is read (evalkit/versions.py).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Persisted(BaseModel):
    """Base of every persisted model: extra keys refused, frozen, docstrings described."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)
