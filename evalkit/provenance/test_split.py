"""Which split a gold file is, from the ``manifest.json`` that ``evalkit split`` wrote beside it.

The decision record names the groups the test covers, and the ledger names
the split whose looks it counts; both read it here. A gold file without a
manifest beside it (or one the manifest does not list) simply has no split
information: nothing fails.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from evalkit.errors import EvalkitError
from evalkit.records._manifest import MANIFEST_FILE, read_manifest_document


@dataclass(frozen=True)
class SplitInfo:
    """One split of a manifest: the test set a result was scored on."""

    manifest: str
    """The manifest file."""
    manifest_sha256: str
    """Its sha256."""
    split: str
    """The split's name (the gold file's stem)."""
    n_items: int | None
    """Items in the split."""
    n_groups: int | None
    """Groups (conversations, documents, …) in the split, each wholly inside it."""
    group_columns: list[str]
    """The columns that define a group."""
    seed: int | None
    """The split's seed."""


def _count(value: object) -> int | None:
    """A count from the manifest, or None when a hand edit left something else there."""
    return value if type(value) is int and value >= 0 else None


def split_of(gold_path: str | None, *, located: Path | None = None) -> SplitInfo | None:
    """The manifest entry of a gold file, when a manifest beside it lists it.

    ``located`` is where the file was found when ``gold_path`` (as recorded)
    is relative to another folder; the manifest is read there and still
    named beside the recorded path, so the record does not depend on where
    it was made.
    """
    if not gold_path:
        return None
    gold = Path(gold_path)
    manifest = gold.parent / MANIFEST_FILE
    try:
        data, raw = read_manifest_document((located or gold).parent / MANIFEST_FILE, what="file")
    except (OSError, EvalkitError):
        return None
    splits = raw.get("splits") if isinstance(raw, dict) else None
    name = gold.name.split(".", 1)[0]
    if not isinstance(splits, dict) or not isinstance(splits.get(name), dict):
        return None
    entry = splits[name]
    options = raw.get("options") if isinstance(raw.get("options"), dict) else {}
    group = options.get("group") or []
    return SplitInfo(
        manifest=str(manifest),
        manifest_sha256=hashlib.sha256(data).hexdigest(),
        split=name,
        n_items=_count(entry.get("n_items")),
        n_groups=_count(entry.get("n_groups")),
        group_columns=[str(column) for column in (group if isinstance(group, list) else [group])],
        seed=raw.get("seed") if type(raw.get("seed")) is int else None,
    )
