"""Prediction files written by harnesses and APIs: OpenAI Batch and lm-evaluation-harness.

* OpenAI Batch API output: one record per request, ``custom_id`` the id, the
  text in ``response.body.choices[0].message.content`` (Chat Completions),
  ``choices[0].text`` (Completions) or the ``output_text`` parts (Responses).
  A failed request (``error`` set, or a non-200 status) has no output and is
  scored ``missing`` with its error kept.
* lm-evaluation-harness ``--log_samples``: ``samples_<task>_<date>.jsonl`` (or
  an older JSON array); the id is a dotted path into the record (default
  ``doc.<contract id>``), the text ``resps[0][0]``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.errors import MalformedFile, UsageError
from evalkit.scoring.records import Row, clean_text, dig, iter_json_lines, records_frame, require_id

if TYPE_CHECKING:
    import polars as pl


def _openai_text(body: dict[str, Any]) -> Any:
    """The assistant text of a Chat Completions, Completions or Responses API body."""
    choices = body.get("choices")
    if isinstance(choices, list) and choices:
        first = choices[0] or {}
        message = first.get("message")
        return message.get("content") if isinstance(message, dict) else first.get("text")
    if isinstance(body.get("output_text"), str):
        return body["output_text"]
    parts = [
        piece.get("text", "")
        for item in body.get("output") or []
        if isinstance(item, dict)
        for piece in item.get("content") or []
        if isinstance(piece, dict) and piece.get("type") == "output_text"
    ]
    return "".join(parts) if parts else None


def _openai_row(path: Path, number: int, record: Any) -> Row:
    if not isinstance(record, dict):
        raise MalformedFile(f"{path}:{number}: expected a JSON object; fix or remove the line")
    identifier = require_id(
        path, number, "custom_id" in record, record.get("custom_id"), "custom_id"
    )
    error, response = record.get("error"), record.get("response")
    if error:
        detail = error.get("message", error) if isinstance(error, dict) else error
        code = f"{error.get('code')}: " if isinstance(error, dict) and error.get("code") else ""
        return identifier, None, f"request failed: {code}{detail}", False
    if not isinstance(response, dict):
        return identifier, None, "request failed: no response", False
    body: dict[str, Any] = response["body"] if isinstance(response.get("body"), dict) else {}
    status = response.get("status_code", 200)
    if status != 200:
        reason = (body.get("error") or {}).get("message", "") if isinstance(body, dict) else ""
        return identifier, None, f"request failed: HTTP {status} {reason}".strip(), False
    text, invalid = clean_text(_openai_text(body))
    # A successful request with no text (content null) produced an empty output.
    return identifier, "" if text is None and not invalid else text, None, invalid


def read_openai_batch(path: Path) -> pl.DataFrame:
    return records_frame([_openai_row(path, n, r) for n, r in iter_json_lines(path)])


def _lm_eval_records(path: Path) -> Iterator[tuple[int, Any]]:
    if path.suffix.lower() == ".json":
        try:
            document = json.loads(path.read_bytes().decode("utf-8", errors="surrogateescape"))
        except json.JSONDecodeError as error:
            raise MalformedFile(f"{path}:{error.lineno}: not valid JSON ({error.msg})") from error
        if not isinstance(document, list):
            raise MalformedFile(f"{path}: expected a JSON array of lm-eval samples")
        yield from enumerate(document, start=1)
    else:
        yield from iter_json_lines(path)


def read_lm_eval(path: Path, id_col: str) -> pl.DataFrame:
    rows = []
    for number, record in _lm_eval_records(path):
        found, value = dig(record, id_col)
        identifier = require_id(path, number, found, value, id_col)
        ok, raw = dig(record, "resps.0.0")
        if ok and not isinstance(raw, str | type(None)):
            raise UsageError(
                f"{path}:{number}: resps[0][0] is not generated text (a loglikelihood task?); "
                "evalkit scores generate_until tasks"
            )
        text, invalid = clean_text(raw if ok else None)
        rows.append((identifier, text, None, invalid))
    return records_frame(rows)
