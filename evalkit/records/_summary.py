"""The persisted ``summary.json`` of ``evalkit score``, as typed models.

``docs/formats.md`` describes the file. One model writes it (``score``,
``rescore``) and reads it back (``compare``, ``gate``, ``rescore``): a key
added since format 1 has a default, so every result an earlier evalkit
wrote still reads, and a newer file is refused in one line by its
``format_version`` (:data:`SUMMARY_FORMAT`). The adapter card inside is the
card's own model, checked by the card's version.

A rate whose denominator is zero is null (there is nothing to measure),
except precision, which is 0.0 when a class is never predicted
(scikit-learn's ``zero_division=0``), so that F1 is always a number.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, ValidationError

from evalkit.errors import MalformedFile
from evalkit.io import source_field
from evalkit.records._base import Persisted
from evalkit.records._card import CARD_FORMAT, AdapterCard
from evalkit.records._versions import FileFormat

if TYPE_CHECKING:
    from evalkit.io import Table

FORMAT_VERSION = 1
SUMMARY_FORMAT = FileFormat("score summary", FORMAT_VERSION)
SUMMARY_FILE = "summary.json"
"""The summary's name in a result folder (its marker: a folder holding one is a result)."""
EXAMPLES_FILE = "examples.parquet"
"""The per-example verdicts' name in a result folder (beside :data:`SUMMARY_FILE`)."""
READ_HINT = "re-run evalkit score to write a complete result"


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class Evaluator(_Model):
    """What decided the verdicts (covered by the contract fingerprint)."""

    semantics_version: int
    """Version of evalkit's parsing and matching rules (docs/contracts.md)."""
    json_parser: str
    """Name and version of the JSON parser."""
    validator: str
    """Name and version of the JSON Schema validator that decides format validity."""
    regex: str
    """The regular-expression dialect of ``pattern`` (ECMA-262)."""
    format: str
    """How the ``format`` keyword is treated (``annotation``: never asserted)."""
    duplicate_keys: str
    """What an object with a repeated key is (``invalid_json``)."""
    max_depth: int
    """Deepest JSON nesting accepted; deeper is ``invalid_json``."""
    tool_calls: dict[str, Any] | None = Field(default=None, exclude_if=lambda value: value is None)
    """``parse: tool_calls`` only: the version of the rules that find, check and compare
    calls, and the order ``auto`` tries the syntaxes in (absent for other contracts)."""


class ContractInfo(_Model):
    """The contract the predictions were scored under."""

    name: str
    """The contract's name."""
    version: int
    """The contract's version."""
    fingerprint: str
    """``sha256:`` of the normalised contract plus the evaluator semantics."""
    path: str | None
    """The contract file as given (provenance only; not part of the fingerprint)."""
    normalized: dict[str, Any]
    """The whole normalised contract, gate included (compare and gate read it)."""
    evaluator: Evaluator
    """What decided the verdicts."""


class GoldInfo(_Model):
    """The gold file (or frame)."""

    path: str | None
    """The gold file as given (null for a frame)."""
    sha256: str
    """sha256 of the gold file's bytes (of every file, by relative name and content, for a
    dataset folder; of the content, for a frame: see docs/formats.md)."""
    source: Literal["frame"] | None = source_field()
    n: int
    """Number of gold items (rows)."""
    content_sha256: str | None = None
    """sha256 of the ids and gold values read (the test set's identity whatever its encoding:
    ``test.parquet`` and the same rows in ``test.jsonl`` share it; see docs/provenance.md)."""


class PredictionsInfo(_Model):
    """The predictions file (or frame) and what was found in it."""

    path: str | None
    """The predictions file or folder as given (null for a frame)."""
    sha256: str
    """sha256 of the file (of the sorted file names and contents for a folder; of the bytes
    read, for a pipe; of the content, for a frame)."""
    source: Literal["frame"] | None = source_field()
    n: int
    """Number of prediction records read."""
    format: str
    """The format read (``jsonl``, ``json``, ``csv``, ``parquet``, ``openai-batch``, ``lm-eval``,
    ``hf``; ``frame`` for a frame)."""
    unknown_ids: int
    """Records whose id is not in the gold file (ignored for scoring)."""
    unknown_id_example: str | None
    """The smallest such id, to look at."""
    duplicate_ids: int
    """Ids with more than one record (an error unless ``--on-duplicate`` was given)."""
    on_duplicate: str
    """How duplicates were treated: ``error``, ``first`` or ``last``."""
    request_errors: int
    """Records whose request failed (OpenAI Batch), scored as ``missing``."""
    id_col: str | None = None
    """The id column as given (null: the default), so the outputs can be read again."""
    output_col: str | None = None
    """The output column as given (null: the default), so the outputs can be read again."""
    answers_sha256: str | None = None
    """sha256 of the answers judged (per gold id with a prediction, the id and its output
    text): what a look is keyed on, whatever file or column held them (docs/provenance.md)."""


class Rates(_Model):
    """Format validity and content accuracy over a set of gold items."""

    n: int
    """Gold items in the set."""
    missing: int
    """Items without an output (no prediction, or a failed request)."""
    format_valid: int
    """Items whose output was found, parsed and schema-valid."""
    format_validity: float | None
    """``format_valid / n``."""
    content_correct: int
    """Items with a valid format whose ``correct`` fields all match."""
    content_accuracy: float | None
    """``content_correct / n``: over all items, so a broken format counts as wrong."""
    content_accuracy_given_valid: float | None
    """``content_correct / format_valid``: content quality where the format held."""


class FieldStats(_Model):
    """How often one field matched."""

    matched: int
    """Items whose field matched (never for an invalid output)."""
    accuracy: float | None
    """``matched / n``."""
    accuracy_given_valid: float | None
    """``matched / format_valid``."""
    mean_f1: float | None = None
    """``set`` fields: mean set F1 over format-valid items (a non-list counts 0)."""


class ClassStats(Rates):
    """Rates of the items of one gold class, and precision/recall of the class field."""

    support: int
    """Gold items of this class (equals ``n``)."""
    rare: bool
    """At most ``rare.max_support`` items: judged by the rare-class gate threshold."""
    predicted: int
    """Format-valid outputs that predict this class."""
    precision: float
    """Of the items predicted as this class, the share that are of it (0.0 if none)."""
    recall: float
    """Of the items of this class, the share predicted as it (invalid outputs count as misses)."""
    f1: float
    """Harmonic mean of precision and recall (0.0 when both are 0)."""


class ErrorStats(_Model):
    """One error category."""

    count: int
    """Items with this error."""
    example_id: str
    """The smallest id with this error, to look at."""
    example_detail: str | None = None
    """The scorer's one-line reason for that example's error."""


class ConfusionCell(_Model):
    """How many items of one gold class got one predicted class."""

    gold: str
    """The gold class."""
    predicted: str | None
    """The predicted class; null when the output was missing or invalid (no class predicted)."""
    count: int
    """Items of ``gold`` predicted as ``predicted`` (never 0: empty cells are left out)."""


class ConfusionMatrix(_Model):
    """Gold class against predicted class, stored sparsely (only non-empty cells).

    Rows are gold classes and columns predicted classes; a row's cells add up
    to the class's support, the null column counting the items whose output
    predicted no class. Sparse, because a matrix of k classes has k² cells
    but a useful classifier fills few of them.
    """

    labels: list[str]
    """Every class that is a gold class or a predicted class, sorted."""
    cells: list[ConfusionCell]
    """The non-empty cells, by gold class, then predicted class (null last)."""


class BaseModelInfo(_Model):
    """The base model the predictions came from (compare/gate refuse to mix bases)."""

    id: str | None
    """A hub id or a local path (``--base-model``, or the card's ``base.id``)."""
    revision: str | None
    """The base's commit (``--base-revision``, or the card's ``base.revision``)."""
    pinned: bool
    """Whether ``revision`` is a 40-hex commit."""
    quantization: str | None
    """How the base was quantized, when known (the card's ``base.quantization``)."""
    source: str
    """``card`` (from the adapter card) or ``options`` (``--base-model``, a prompt-only run)."""


class RescoredFrom(_Model):
    """The result a re-score replaces (``evalkit rescore``): its contract and its folder."""

    name: str
    """The replaced contract's name."""
    version: int
    """The replaced contract's version."""
    fingerprint: str
    """The replaced contract's fingerprint."""
    result: str
    """The replaced result folder, as given to ``evalkit rescore``."""
    summary_sha256: str
    """sha256 of that folder's ``summary.json`` when it was re-scored."""


class LookRef(_Model):
    """Where a result's look is in the ledger: its line, named by number and hash."""

    line: int
    """The line's 1-based number among the ledger's non-blank lines when it was appended."""
    sha256: str
    """The line's ``sha256`` (of its canonical JSON): finds it again after a merge moved it."""


class ScoreSummary(_Model):
    """The whole ``summary.json``."""

    format_version: int = FORMAT_VERSION
    """Bumped on any incompatible change of this file."""
    evalkit_version: str
    """The evalkit that wrote it."""
    name: str
    """The result's name (``--name``, else the predictions file's stem)."""
    contract: ContractInfo
    """The contract, normalised and fingerprinted."""
    gold: GoldInfo
    """The gold file."""
    predictions: PredictionsInfo
    """The predictions file."""
    overall: Rates
    """All gold items."""
    fields: dict[str, FieldStats]
    """Per contract field."""
    classes: dict[str, ClassStats]
    """Per gold class (sorted by label); empty without a ``class`` column."""
    slices: dict[str, Rates]
    """Per contract slice."""
    errors: dict[str, ErrorStats]
    """Per error category that occurred (sorted)."""
    confusion: ConfusionMatrix | None = None
    """Gold class against predicted class (null without a ``class`` column)."""
    base: BaseModelInfo | None = None
    """The base model of the predictions (``--card``/``--adapter`` or ``--base-model``)."""
    card: AdapterCard | None = None
    """The adapter card (``evalkit card``; schema ``docs/schemas/adapter-card.schema.json``)
    of the adapter that produced the predictions (``--card`` or ``--adapter``)."""
    ledger: str | None = None
    """The test-set ledger this look was recorded in (null with ``--no-ledger``)."""
    rescored_from: RescoredFrom | None = None
    """The result and contract this one replaces (``evalkit rescore``); null when scored
    from scratch. Everything else is what scoring from scratch writes."""
    warnings: list[str] = Field(default=[], exclude_if=lambda warnings: not warnings)
    """What scored but deserves a look: a slice that matches no gold item (its
    figures are empty and its gate rules judge nothing). The key is written only
    when there is a warning."""
    look: LookRef | None = None
    """This result's line in that ledger, appended before the result was written (null
    without a ledger): gate finds it there, or reads the test set as burned."""
    examples_sha256: str | None = None
    """sha256 of ``examples.parquet`` beside it (compare and gate check it, and recompute
    the figures they use from that file)."""


def first_error(error: ValidationError) -> str:
    """The first problem of a validation error, as ``key 'a.b': …`` (one line)."""
    detail = error.errors()[0]
    key = ".".join(str(part) for part in detail["loc"]) or "(top level)"
    if detail["type"] == "missing":
        return f"missing key {key!r}"
    if detail["type"] == "extra_forbidden":
        return f"unknown key {key!r} (score summary {FORMAT_VERSION} has no such key)"
    return f"key {key!r}: {detail['msg'].lower()}"


def read_summary_data(data: dict[str, Any], source: object, hint: str) -> ScoreSummary:
    """The summary a ``summary.json`` document holds, its and its card's versions checked.

    An older format is brought up to date (:data:`SUMMARY_FORMAT`, and the
    card's own :data:`~evalkit.records._card.CARD_FORMAT`); a newer one,
    an unknown or missing key or a wrong type is a
    :class:`~evalkit.errors.MalformedFile` naming ``source`` and the key,
    ending with ``hint`` (what to do).
    """
    data = SUMMARY_FORMAT.upgrade(data, source, hint)
    card = data.get("card")
    if isinstance(card, dict):
        data = {**data, "card": CARD_FORMAT.upgrade(card, f"{source}: card", hint)}
    try:
        return ScoreSummary.model_validate(data)
    except ValidationError as error:
        raise MalformedFile(f"{source}: {first_error(error)}; {hint}") from error


def summary_json(summary: ScoreSummary) -> bytes:
    """The bytes of ``summary.json``: indented, keys in model order, a final newline."""
    import orjson

    data = summary.model_dump(mode="json")
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"


def summary_from_bytes(
    data: bytes, source: object, hint: str = READ_HINT
) -> tuple[dict[str, Any], ScoreSummary]:
    """A ``summary.json``'s bytes read: its document (brought up to date) and its model.

    The document is what the file writes (the figures are verified as it
    writes them); an unparsable file, one that is not an object, a newer
    version or a key the model refuses is a :class:`~evalkit.errors.MalformedFile`
    naming ``source`` and ending with ``hint``.
    """
    from evalkit.io import DocumentError, parse_json

    try:
        raw = parse_json(data, str(source))
    except DocumentError as error:
        raise MalformedFile(f"{error.message}; {hint}") from error
    if not isinstance(raw, dict):
        raise MalformedFile(f"{source}: expected a JSON object; {hint}")
    raw = SUMMARY_FORMAT.upgrade(raw, source, hint)
    return raw, read_summary_data(raw, source, hint)


def summary_path(path: str | os.PathLike[str]) -> Path:
    """The ``summary.json`` of a result folder (or the file itself)."""
    file = Path(path)
    return file / SUMMARY_FILE if file.is_dir() else file


def read_summary_document(
    path: str | os.PathLike[str], hint: str = READ_HINT
) -> tuple[dict[str, Any], ScoreSummary]:
    """``summary.json`` of a result folder (or the file): its document and its model."""
    from evalkit.errors import UnreadableFile
    from evalkit.io import read_bytes

    file = summary_path(path)
    if not file.is_file():
        raise UnreadableFile(f"{file}: no such file; pass a folder written by evalkit score")
    return summary_from_bytes(read_bytes(file, "JSON file"), file, hint)


def read_summary(path: str | os.PathLike[str], hint: str = READ_HINT) -> ScoreSummary:
    """``summary.json`` of a result folder (or the file itself), its version checked."""
    return read_summary_document(path, hint)[1]


def peek_summary(folder: str | os.PathLike[str]) -> dict[str, Any]:
    """A result folder's summary read tolerantly (``{}`` when it cannot be), for its paths."""
    from evalkit.records._files import peek_object

    return peek_object(Path(folder) / SUMMARY_FILE)


def write_summary(
    path: str | os.PathLike[str], summary: ScoreSummary, *, force: bool = False
) -> None:
    """Write ``summary.json`` (:func:`summary_json`) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), summary_json(summary), force=force)


def read_examples(path: str | os.PathLike[str]) -> Table:
    """``examples.parquet`` of a result, as read (the feature checks its columns and rows)."""
    from evalkit.errors import UnreadableFile
    from evalkit.io import read_table

    file = Path(path)
    if not file.is_file():
        raise UnreadableFile(f"{file}: no such file; pass a folder written by evalkit score")
    return read_table(file, name="examples", fmt="parquet")


def write_examples(path: str | os.PathLike[str], data: bytes, *, force: bool = False) -> None:
    """Write ``examples.parquet``'s bytes (as the scorer encoded them) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), data, force=force)
