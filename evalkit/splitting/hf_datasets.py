"""A finished split as a Hugging Face ``datasets.DatasetDict``, for the trainers.

TRL, transformers' ``Trainer`` and most training scripts take a
``DatasetDict``; handing them the split in memory saves a write and a read
and keeps every row as the split holds it. ``datasets`` is optional
(``pip install 'evalkit[datasets]'``) and imported only here, on use.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from evalkit.errors import UsageError

if TYPE_CHECKING:
    import polars as pl

# ``datasets`` and the Hub name the validation split "validation"; evalkit's default is "val".
DATASETS_NAMES = {"val": "validation"}
# What ``datasets.NamedSplit`` accepts as a split name.
_SPLIT_NAME = re.compile(r"^\w+(\.\w+)*$")


def datasets_module() -> Any:
    """``import datasets``, or a one-line error that names the extra to install."""
    try:
        import datasets
    except ImportError:
        raise UsageError(
            "SplitResult.to_datasets() needs the optional 'datasets' package: "
            "pip install 'evalkit[datasets]'"
        ) from None
    return datasets


def dataset_names(names: list[str]) -> dict[str, str]:
    """Each split's key in the ``DatasetDict``: ``val`` becomes ``validation``."""
    keys = {name: DATASETS_NAMES.get(name, name) for name in names}
    clashes = sorted({key for key in keys.values() if list(keys.values()).count(key) > 1})
    if clashes:
        raise UsageError(
            f"splits {names!r} would give two datasets named {clashes[0]!r} (split 'val' is "
            "named 'validation' in a DatasetDict); rename one of them with names=..."
        )
    return keys


def to_dataset_dict(frames: Mapping[str, pl.DataFrame], json_columns: Sequence[str]) -> Any:
    """One ``datasets.Dataset`` per split, built on the frames' Arrow data.

    ``Dataset.from_polars`` wraps the Arrow table polars hands over: numeric
    data is not copied; text, nested text included, moves once from polars'
    string views to Arrow's large strings, the layout every ``datasets``
    release reads. ``json_columns`` hold each row's JSON text (values whose
    shape differs by row): they become ``datasets.Json`` columns, which give
    each row back its own objects, where the ``datasets`` release has it.
    """
    datasets = datasets_module()
    keys = dataset_names(list(frames))
    as_json = (
        [column for column in dict.fromkeys(json_columns)] if hasattr(datasets, "Json") else []
    )
    built = {}
    for name, frame in frames.items():
        features = None
        if as_json:
            features = datasets.Features.from_arrow_schema(frame.head(0).to_arrow().schema)
            for column in as_json:
                if column in features:
                    features[column] = datasets.Json()
        built[keys[name]] = datasets.Dataset.from_polars(
            frame, features=features, split=keys[name] if _SPLIT_NAME.match(keys[name]) else None
        )
    return datasets.DatasetDict(built)
