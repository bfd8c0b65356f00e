"""The input layer: every way a table or document arrives, read one way.

* :func:`read_table` reads a table from wherever it is held (JSON Lines,
  ``.json``, CSV, Parquet, a Hugging Face ``save_to_disk`` folder, a polars,
  pandas or pyarrow frame) into a :class:`Table`: the frame commands compute
  with, and each row's values as the source wrote them, read once.
* :func:`load_json`, :func:`load_yaml`, :func:`load_document`: documents
  (contracts, configs, cards, manifests), bounded against hostile input.
* :func:`atomic_write_bytes`, :func:`write_table`, :func:`atomic_directory`:
  outputs written atomically; :class:`CommandFiles`: an output never replaces
  an input.
* :func:`sha256_file` and friends: the fingerprints outputs record.

Names are imported on first use, so that ``import evalkit.io`` costs nothing
until a table is read.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalkit._lazy import lazy_exports

if TYPE_CHECKING:
    from evalkit.io._documents import (
        MAX_DEPTH,
        DocumentError,
        RepeatedKey,
        json_depth_exceeded,
        load_document,
        load_json,
        load_yaml,
        nesting_depth,
        parse_json,
        parse_yaml,
        unique_object,
    )
    from evalkit.io._files import (
        NOT_REGULAR_FIX,
        UTF8_BOM,
        hash_early,
        read_bytes,
        require_regular_file,
        sha256_bytes,
        sha256_file,
        special_kind,
    )
    from evalkit.io._formats import InputFormat, TableFormat, output_format, table_format
    from evalkit.io._frames import (
        FRAME_SOURCE,
        SOURCE_DESCRIPTION,
        Frame,
        TableLike,
        frame_sha256,
        held_series,
        is_frame,
        is_path,
        source_field,
        source_metadata,
    )
    from evalkit.io._hf import (
        folder_sha256,
        hf_dataset,
        hf_splits,
        is_hf_dataset,
        is_hf_dataset_dict,
        resolve_hf_split,
        sha256_input,
    )
    from evalkit.io._json_rules import id_text, iter_lines, parse_record, reference_records
    from evalkit.io._jsonl import JsonLines, check_id_types, first_line, id_strings, json_lines
    from evalkit.io._outputs import LEDGER_NAME, CommandFiles, check_new_output
    from evalkit.io._padding import same_value, strip_padding
    from evalkit.io._table import SourceKind, Table, read_table, require_columns
    from evalkit.io._writes import (
        ReportFile,
        atomic_directory,
        atomic_write_bytes,
        atomic_write_text,
        check_writable,
        os_error_of,
        write_failed,
        write_table,
    )

_EXPORTS: dict[str, str] = {
    "Table": "evalkit.io._table",
    "read_table": "evalkit.io._table",
    "require_columns": "evalkit.io._table",
    "SourceKind": "evalkit.io._table",
    "TableLike": "evalkit.io._frames",
    "Frame": "evalkit.io._frames",
    "is_path": "evalkit.io._frames",
    "is_frame": "evalkit.io._frames",
    "FRAME_SOURCE": "evalkit.io._frames",
    "frame_sha256": "evalkit.io._frames",
    "source_field": "evalkit.io._frames",
    "source_metadata": "evalkit.io._frames",
    "SOURCE_DESCRIPTION": "evalkit.io._frames",
    "held_series": "evalkit.io._frames",
    "JsonLines": "evalkit.io._jsonl",
    "json_lines": "evalkit.io._jsonl",
    "check_id_types": "evalkit.io._jsonl",
    "id_strings": "evalkit.io._jsonl",
    "first_line": "evalkit.io._jsonl",
    "id_text": "evalkit.io._json_rules",
    "reference_records": "evalkit.io._json_rules",
    "parse_record": "evalkit.io._json_rules",
    "iter_lines": "evalkit.io._json_rules",
    "TableFormat": "evalkit.io._formats",
    "InputFormat": "evalkit.io._formats",
    "table_format": "evalkit.io._formats",
    "output_format": "evalkit.io._formats",
    "UTF8_BOM": "evalkit.io._files",
    "NOT_REGULAR_FIX": "evalkit.io._files",
    "sha256_file": "evalkit.io._files",
    "sha256_bytes": "evalkit.io._files",
    "hash_early": "evalkit.io._files",
    "read_bytes": "evalkit.io._files",
    "require_regular_file": "evalkit.io._files",
    "special_kind": "evalkit.io._files",
    "atomic_write_bytes": "evalkit.io._writes",
    "ReportFile": "evalkit.io._writes",
    "atomic_write_text": "evalkit.io._writes",
    "write_table": "evalkit.io._writes",
    "check_writable": "evalkit.io._writes",
    "atomic_directory": "evalkit.io._writes",
    "os_error_of": "evalkit.io._writes",
    "write_failed": "evalkit.io._writes",
    "CommandFiles": "evalkit.io._outputs",
    "LEDGER_NAME": "evalkit.io._outputs",
    "check_new_output": "evalkit.io._outputs",
    "load_json": "evalkit.io._documents",
    "load_yaml": "evalkit.io._documents",
    "load_document": "evalkit.io._documents",
    "parse_json": "evalkit.io._documents",
    "parse_yaml": "evalkit.io._documents",
    "DocumentError": "evalkit.io._documents",
    "MAX_DEPTH": "evalkit.io._documents",
    "RepeatedKey": "evalkit.io._documents",
    "unique_object": "evalkit.io._documents",
    "json_depth_exceeded": "evalkit.io._documents",
    "nesting_depth": "evalkit.io._documents",
    "is_hf_dataset": "evalkit.io._hf",
    "is_hf_dataset_dict": "evalkit.io._hf",
    "hf_splits": "evalkit.io._hf",
    "resolve_hf_split": "evalkit.io._hf",
    "hf_dataset": "evalkit.io._hf",
    "folder_sha256": "evalkit.io._hf",
    "sha256_input": "evalkit.io._hf",
    "strip_padding": "evalkit.io._padding",
    "same_value": "evalkit.io._padding",
}

# Defined for the interpreter only: a type checker reads the imports above, and so
# refuses a name the package does not export.
if not TYPE_CHECKING:
    __getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
