"""The split manifest: what was asked, what was produced, and how well it holds.

The manifest is the record a later reader trusts without re-running the
split: it names the input by sha256, keeps every option and the seed, and
states the quality figures (count deviation, class-share deviation, leaked
groups) computed from the final assignment itself, not from the algorithm's
bookkeeping.

These frozen dataclasses are the format's one definition: what
:func:`evalkit.split` builds, :attr:`SplitResult.manifest` returns,
:func:`manifest_text` writes and :func:`read_manifest` reads back. They are
plain dataclasses, not pydantic models, because a split run only *writes*
a manifest, and importing pydantic and building models cost ~0.1 s, a fifth
of a whole ``evalkit split`` of 100k items (bench/RESULTS.md). pydantic
reads the same classes where it is needed, lazily: their JSON Schema in
docs/schemas (:func:`manifest_schema`) and the validation of a manifest
read back. They carry the settings of the persisted base
(:mod:`evalkit.records._base`) for it: an unknown key is refused, and each
field's docstring is its description in the schema.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from evalkit.io import source_metadata
from evalkit.records._versions import FileFormat

if TYPE_CHECKING:
    import polars as pl
    from pydantic import GetCoreSchemaHandler, TypeAdapter
    from pydantic_core import CoreSchema

    from evalkit.io import Table

MANIFEST_FORMAT_VERSION = 1
MANIFEST_FORMAT = FileFormat("split manifest", MANIFEST_FORMAT_VERSION)
MANIFEST_FILE = "manifest.json"
"""The manifest's name in a split folder."""
ASSIGNMENTS_FILE = "assignments.parquet"
"""The assignments' name in a split folder (one row per item: id, group, split)."""
READ_HINT = "pass the manifest.json that evalkit split wrote"

# The settings of evalkit.records._base.Persisted, as pydantic reads them from a dataclass.
_PERSISTED = {"extra": "forbid", "use_attribute_docstrings": True}


class _AuditWithin:
    """A ``within`` entry: plain data here, the audit's ``WithinSplit`` to pydantic.

    ``evalkit split --near-dup`` writes the entries
    :func:`evalkit.leakage.within.summarize` computes, in the shape the audit
    report's model :class:`evalkit.records._audit.WithinSplit` defines; the
    schema and the validation of a manifest read back use that model, and the
    value read stays the plain data a split holds.
    """

    @staticmethod
    def __get_pydantic_core_schema__(source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        from pydantic_core import core_schema

        from evalkit.records._audit import WithinSplit

        def as_data(model: WithinSplit) -> dict[str, object]:
            return model.model_dump(mode="json")

        return core_schema.no_info_after_validator_function(
            as_data,
            handler.generate_schema(WithinSplit),
            serialization=core_schema.plain_serializer_function_ser_schema(lambda value: value),
        )


def _is_none(value: object) -> bool:
    return value is None


@dataclass(frozen=True, kw_only=True)
class InputInfo:
    """The input the split was made from."""

    __pydantic_config__ = _PERSISTED

    path: str | None
    """Input file as given (null for an in-memory table)."""
    sha256: str | None
    """sha256 of the input file's bytes (of every file, by relative name and content, for a dataset folder; of the content, for a frame)."""  # noqa: E501
    n_items: int
    """Rows in the input."""
    n_groups: int
    """Groups after null handling and duplicate merging."""
    source: Literal["frame"] | None = field(default=None, metadata=source_metadata())
    padded_rows: int | None = field(
        default=None,
        metadata={
            "exclude_if": _is_none,
            "description": "Rows whose nested values carried null padding (a Parquet file, a "
            "Hugging Face folder or a polars or pyarrow frame gives every row's objects every "
            "key any row has, as null), read as absent: a trainer given that container renders "
            "the padding; store such a column as JSON text. Absent when there was none.",
        },
    )


@dataclass(frozen=True, kw_only=True)
class SplitOptions:
    """The options that produced the split (everything needed to reproduce it)."""

    __pydantic_config__ = _PERSISTED

    group: list[str]
    """Group columns; their values together form the key."""
    stratify: str | None = None
    """Class column balanced across splits."""
    sizes: list[int] | None = None
    """Requested items per split."""
    ratios: list[float] | None = None
    """Requested share per split."""
    names: list[str]
    """Split names, in the order of sizes/ratios."""
    seed: int
    """Seed of the random generator."""
    id: str | None = None
    """Id column (unique per row)."""
    text: str | None = None
    """--text column: length statistics and the --near-dup comparison; text or a conversation (the prompt column of the prompt-completion form)."""  # noqa: E501
    completion: str | None = None
    """A second --text column: the completion of TRL's prompt-completion form."""
    alpaca: list[str] | None = field(
        default=None,
        metadata={
            "exclude_if": _is_none,
            "description": "Three text columns: Alpaca's instruction, input and output, in "
            "that order (`text` is then the instruction). Absent otherwise.",
        },
    )
    roles: list[str] | None = None
    """--roles as given: the conversation turns compared for --near-dup (null: the default, every role but system)."""  # noqa: E501
    null_group: str
    """What a null group key means: error or singleton."""
    tolerance: int | None = None
    """Largest allowed count deviation per split, in items."""
    near_dup: float | None = None
    """Jaccard threshold for merging near-duplicate texts."""
    freeze: str | None = None
    """Assignments file of an earlier split."""
    tokenizer: str | None = None
    """Tokenizer folder (counted as evalkit tokens counts) or tokenizer.json file whose token counts are the lengths."""  # noqa: E501
    system: str | None = None
    """--system: the column of system prompts, when given."""
    tools: str | None = None
    """--tools: the column of tools, when given."""
    engine: str = "local"
    """Where the --near-dup search ran: local (one process) or ray (a Ray cluster); both give the same split."""  # noqa: E501


@dataclass(frozen=True, kw_only=True)
class TextInfo:
    """What the --text column(s) held, as recognised from the values."""

    __pydantic_config__ = _PERSISTED

    columns: list[str]
    """The --text columns: one, prompt and completion, or Alpaca's instruction, input and output."""
    kind: str
    """text (plain strings) or conversation (lists of messages)."""
    shape: str
    """How the (first) column is written: text, messages ({role, content}), sharegpt ({from, value}) or alpaca."""  # noqa: E501
    compared_roles: list[str] | None
    """Roles whose turns --near-dup compares (null for text, compared whole)."""
    skipped_parts: int
    """Non-text content parts (images, audio) left out of the text."""
    json_text: bool = False
    """The conversations were the JSON text of message lists in a string column."""
    system_column: str | None = None
    """The column of system prompts put first, if any."""
    system_added: int = 0
    """Conversations that got the system column's prompt first."""
    system_kept: int = 0
    """Conversations that start with their own system message, kept (the system column's value unused, as LLaMA-Factory and axolotl do)."""  # noqa: E501
    tools_column: str | None = None
    """The column of tools, if any."""
    tool_calls: int = 0
    """Tool calls over every conversation."""
    empty_tool_lists: int | None = field(
        default=None,
        metadata={
            "exclude_if": _is_none,
            "description": "Rows whose tools value is an empty list, read as no tools (the "
            "chat template is called without tools, as the OpenAI API and TRL read it). "
            "Absent when there is none.",
        },
    )
    untrained_turns: int = 0
    """Turns flagged not to train on (OpenAI weight 0, axolotl training false)."""


@dataclass(frozen=True, kw_only=True)
class LengthStats:
    """Text length: min, median, 95th percentile (linear interpolation), max.

    A conversation's length is the characters of every turn's content, the
    system prompt included.
    """

    __pydantic_config__ = _PERSISTED

    min: int
    p50: float
    p95: float
    max: int
    unit: str = "chars"
    """chars, or tokens with --tokenizer."""


@dataclass(frozen=True, kw_only=True)
class SplitReport:
    """One split as produced."""

    __pydantic_config__ = _PERSISTED

    target: int
    """Requested number of items."""
    n_items: int
    """Items placed in the split."""
    n_groups: int
    """Groups placed in the split."""
    count_deviation: int
    """n_items - target."""
    class_counts: dict[str, int]
    """Items per class (every class listed)."""
    class_shares: dict[str, float]
    """Share of the split's items per class."""
    class_share_deviation_pp: dict[str, float]
    """Class share minus the class's share of the whole input, in points."""
    classes_missing: list[str]
    """Classes of the input absent from the split."""
    length: LengthStats | None = None
    """Length of --text, if given."""


@dataclass(frozen=True, kw_only=True)
class Leakage:
    """Group leakage, checked on the final assignment."""

    __pydantic_config__ = _PERSISTED

    groups_in_several_splits: int
    """Groups with items in two or more splits."""


@dataclass(frozen=True, kw_only=True)
class Quality:
    """How close the split came to what was asked."""

    __pydantic_config__ = _PERSISTED

    max_count_deviation: int
    """Largest |n_items - target| over the splits."""
    max_class_share_deviation_pp: float
    """Largest |class share deviation| over splits and classes, in points."""
    max_class_share_deviation_pp_major: float
    """The same over classes holding at least 5% of the input's items."""
    required_classes: list[str]
    """Classes found in at least as many groups as there are splits."""
    required_classes_missing: dict[str, list[str]]
    """Per split, required classes it still lacks (empty when all are covered)."""
    leakage: Leakage


@dataclass(frozen=True, kw_only=True)
class Merging:
    """Groups merged because their texts are exact or near duplicates."""

    __pydantic_config__ = _PERSISTED

    threshold: float
    """Jaccard threshold used."""
    merged_groups: int
    """Key groups merged into another group."""
    largest_merged_group: int
    """Items in the largest merged group."""


@dataclass(frozen=True, kw_only=True)
class Freezing:
    """Groups kept where an earlier split put them."""

    __pydantic_config__ = _PERSISTED

    path: str
    """The assignments file given to --freeze."""
    sha256: str
    """sha256 of that file."""
    frozen_groups: int
    """Groups of the input found in the file (kept in place)."""
    new_groups: int
    """Groups placed anew."""
    conflicts: int
    """Merged groups whose parts were frozen in different splits."""


@dataclass(frozen=True, kw_only=True)
class SplitManifest:
    """``manifest.json``: the record of one ``evalkit split`` run."""

    __pydantic_config__ = _PERSISTED

    format_version: int = MANIFEST_FORMAT_VERSION
    """Manifest format."""
    evalkit_version: str
    """evalkit version that wrote the manifest."""
    seed: int
    """Seed of the random generator."""
    input: InputInfo
    options: SplitOptions
    targets: dict[str, int]
    """Requested items per split."""
    splits: dict[str, SplitReport]
    unused: int
    """Items left out because the sizes add up to less."""
    text: TextInfo | None = None
    """The --text column(s), if given."""
    null_groups: int
    """Rows with a null group key made their own group."""
    merging: Merging | None = None
    freezing: Freezing | None = None
    quality: Quality
    within: dict[str, Annotated[dict[str, object], _AuditWithin]] | None = None
    """With --near-dup: per split, how much of it repeats itself (its own exact and near-duplicate clusters, which --near-dup keeps whole, and repeated openings); the audit's `within`."""  # noqa: E501
    json_text_columns: list[str] = field(default_factory=list)
    """Columns written to the Parquet and CSV split files (and held by `SplitResult.frames`) as the JSON text of each row's value as the input wrote it: their objects' keys or types differ from row to row, and a Parquet struct would give every row every key. JSONL split files hold the values themselves."""  # noqa: E501

    def to_json(self) -> dict[str, object]:
        """The manifest as JSON values, as written (a file's input has no ``source`` key)."""
        data = asdict(self)
        for key in ("source", "padded_rows"):  # absent unless there is something to say
            if data["input"][key] is None:
                del data["input"][key]
        if data["options"]["alpaca"] is None:
            del data["options"]["alpaca"]
        if data["text"] is not None and data["text"]["empty_tool_lists"] is None:
            del data["text"]["empty_tool_lists"]
        return data


def manifest_text(manifest: SplitManifest) -> str:
    """The text of ``manifest.json``: two-space indented, UTF-8 as is, a final newline."""
    return json.dumps(manifest.to_json(), indent=2, ensure_ascii=False) + "\n"


@cache
def _adapter() -> TypeAdapter[SplitManifest]:
    from pydantic import TypeAdapter

    return TypeAdapter(SplitManifest)


def manifest_schema() -> dict[str, Any]:
    """The JSON Schema of ``manifest.json`` (docs/schemas/split-manifest.schema.json)."""
    return _adapter().json_schema(mode="serialization")


def manifest_from_json(data: object, source: object) -> SplitManifest:
    """A manifest's JSON value checked and read: its version first, then every key.

    A newer ``format_version`` is refused in one line (upgrade evalkit), and
    so is a value of the wrong type or an unknown key, naming the key;
    ``source`` names the file in the message.
    """
    from pydantic import ValidationError

    from evalkit.errors import MalformedFile

    if not isinstance(data, dict):
        raise MalformedFile(f"{source}: expected a JSON object; {READ_HINT}")
    data = MANIFEST_FORMAT.upgrade(data, source, READ_HINT)
    try:
        return _adapter().validate_python(data)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top)"
        raise MalformedFile(f"{source}: key {where}: {first['msg']}; {READ_HINT}") from None


def _manifest_path(path: str | os.PathLike[str]) -> Path:
    file = Path(path)
    return file / MANIFEST_FILE if file.is_dir() else file


def read_manifest_document(
    path: str | os.PathLike[str], *, hint: str = READ_HINT, what: str = "manifest"
) -> tuple[bytes, Any]:
    """The bytes of a manifest and its JSON value, its version checked when it states one.

    For the readers that take a hand-written manifest too (``{"splits": …}``
    naming a folder's split files, the gate's look at a gold file's split):
    they use what they find and ignore the rest. :func:`read_manifest` reads
    the whole model. ``hint`` ends a version error; ``what`` names the file
    in an error reading it.
    """
    from evalkit.io import parse_json, read_bytes

    file = _manifest_path(path)
    data = read_bytes(file, what)
    value = parse_json(data, str(file))
    if isinstance(value, dict) and MANIFEST_FORMAT.key in value:
        value = MANIFEST_FORMAT.upgrade(value, file, hint)
    return data, value


def read_manifest(path: str | os.PathLike[str]) -> SplitManifest:
    """``manifest.json`` of a split folder (or the file itself), checked as written.

    What :meth:`SplitResult.write` wrote reads back equal to
    :attr:`SplitResult.manifest`.
    """
    from evalkit.io import load_json

    file = _manifest_path(path)
    return manifest_from_json(load_json(file, "manifest"), file)


def write_manifest(
    path: str | os.PathLike[str], manifest: SplitManifest, *, force: bool = False
) -> None:
    """Write ``manifest.json`` (:func:`manifest_text`) atomically at ``path``."""
    from evalkit.records._files import write_file

    write_file(Path(path), manifest_text(manifest).encode("utf-8"), force=force)


def read_assignments(path: str | os.PathLike[str]) -> Table:
    """An ``assignments.parquet`` given to ``split --freeze`` (any table the input layer reads)."""
    from evalkit.io import read_table

    return read_table(Path(path), name="freeze")


def write_assignments(path: str | os.PathLike[str], assignments: pl.DataFrame) -> None:
    """Write ``assignments.parquet`` (one row per item: id, group, split) at ``path``."""
    from evalkit.io import write_table

    write_table(assignments, Path(path), "parquet")
