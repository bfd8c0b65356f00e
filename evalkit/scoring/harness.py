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

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from evalkit.errors import MalformedFile, UsageError
from evalkit.scoring.records import Row, clean_text, dig, iter_json_lines, records_frame, require_id

STRUCTURED_CALLS = "tool_calls"
"""The optional prediction column of structured tool calls (JSON text; null: none)."""

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


def _openai_calls(body: dict[str, Any]) -> Any:
    """The structured tool calls of a response body, as written (None: it has none).

    Chat Completions: ``choices[0].message.tool_calls`` (or the older single
    ``function_call``); Responses: the ``function_call`` items of ``output``.
    vLLM's OpenAI-compatible server writes the same shapes.
    """
    choices = body.get("choices")
    if isinstance(choices, list) and choices:
        message = (choices[0] or {}).get("message")
        if not isinstance(message, dict):
            return None
        if message.get("tool_calls") is not None:
            return message["tool_calls"]
        call = message.get("function_call")
        return [call] if isinstance(call, dict) else None
    items = [
        item
        for item in body.get("output") or []
        if isinstance(item, dict) and item.get("type") == "function_call"
    ]
    return items or None


def structured_text(value: Any) -> str | None:
    """Structured tool calls as the JSON text scoring reads (a string is kept as written)."""
    import orjson

    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _openai_row(name: str, number: int, record: Any) -> Row:
    identifier = require_id(
        f"{name}:{number}", "custom_id" in record, record.get("custom_id"), "custom_id"
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


def read_openai_batch(data: bytes, name: str) -> pl.DataFrame:
    """OpenAI Batch API output (one request per line) in evalkit's prediction shape.

    When any response answers with tool calls, a ``tool_calls`` column holds
    each row's calls as JSON text (null: none), read by ``parse: tool_calls``.
    """
    import polars as pl

    rows: list[Row] = []
    calls: list[Any] = []
    for number, record in iter_json_lines(data, name):
        rows.append(_openai_row(name, number, record))
        if rows[-1][2] is not None:  # a failed request: no output, no call
            calls.append(None)
            continue
        body = record["response"].get("body")
        calls.append(_openai_calls(body) if isinstance(body, dict) else None)
    frame = records_frame(rows)
    if any(call is not None for call in calls):
        texts = [structured_text(call) for call in calls]
        frame = frame.with_columns(pl.Series(STRUCTURED_CALLS, texts, dtype=pl.String))
    return frame


def json_array(data: bytes, name: str, what: str) -> list[Any]:
    """A ``.json`` file's array (text that is not UTF-8 kept as surrogate escapes)."""
    from evalkit.io import parse_json

    document = parse_json(data.decode("utf-8", errors="surrogateescape"), name)
    if not isinstance(document, list):
        raise MalformedFile(f"{name}: expected a JSON array of {what}")
    return document


def _lm_eval_records(data: bytes, name: str, array: bool) -> Iterator[tuple[str, Any]]:
    if array:
        for number, record in enumerate(json_array(data, name, "lm-eval samples"), start=1):
            yield f"{name}, sample {number}", record
    else:
        for number, record in iter_json_lines(data, name):
            yield f"{name}:{number}", record


def read_lm_eval(data: bytes, name: str, id_col: str, *, array: bool = False) -> pl.DataFrame:
    """lm-evaluation-harness samples (JSONL, or an older JSON array) as predictions."""
    rows = []
    for where, record in _lm_eval_records(data, name, array):
        found, value = dig(record, id_col)
        identifier = require_id(where, found, value, id_col)
        ok, raw = dig(record, "resps.0.0")
        if ok and not isinstance(raw, str | type(None)):
            raise UsageError(
                f"{where}: resps[0][0] is not generated text (a loglikelihood task?); "
                "evalkit scores generate_until tasks"
            )
        text, invalid = clean_text(raw if ok else None)
        rows.append((identifier, text, None, invalid))
    return records_frame(rows)
