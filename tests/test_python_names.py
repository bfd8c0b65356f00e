"""One Python name per concept, on every options object and every public library function.

The command line's vocabulary test (``test_cli_vocabulary.py``) holds the
flags; this one holds the Python names: it walks every :class:`Params`
class (and the plan's resolved ``Options``) and every public function, and
fails when a concept appears under a name of its forbidden variants. An old
spelling stays accepted as a deprecated alias: each warns once, naming the
new one, and means exactly the field.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import evalkit
from evalkit.cli._params import _declarations
from evalkit.options import Params, field_types, renamed_of, spec_of

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"

# concept -> (its one Python name, the spellings no object or function may use)
CONCEPTS: dict[str, tuple[str, tuple[str, ...]]] = {
    "id column": ("id_column", ("id_col", "id_columns", "idcol", "id_field")),
    "output column": ("output_column", ("output_col", "output_field", "text_output")),
    "text or conversation column(s)": (
        "text",
        ("text_column", "text_columns", "text_col", "text_cols", "text_field"),
    ),
    "tokens per sequence": (
        "seq_len",
        ("max_seq_length", "max_seq_len", "seq_length", "sequence_length", "max_length"),
    ),
    "sequences per step": (
        "batch_size",
        ("batch", "train_batch_size", "per_device_train_batch_size", "bs"),
    ),
    "sequences per evaluation batch": (
        "eval_batch_size",
        ("eval_batch", "per_device_eval_batch_size", "eval_bs"),
    ),
    "seed": ("seed", ("random_seed", "rng_seed")),
    "near-duplicate threshold": ("near_dup", ("near_duplicates", "jaccard")),
}
FORBIDDEN = {old: (concept, name) for concept, (name, olds) in CONCEPTS.items() for old in olds}

# Each package's public face: its functions and options objects are walked.
PACKAGES = ("evalkit", "evalkit.plan", "evalkit.scoring", "evalkit.leakage", "evalkit.chat")
# What the walk must find, so that a walk that finds nothing cannot pass.
EXPECTED_PARAMS = {
    "SplitParams", "AuditParams", "TokensParams", "PromptsParams", "ScoreParams",
    "RescoreParams", "CompareParams", "GateParams", "PlanParams", "TimeRequest",
    "GenerateParams", "ReloadCheckParams", "SmokeParams", "CardParams",
}  # fmt: skip
EXPECTED_FUNCTIONS = {
    "split", "audit", "check_tokens", "prompts", "score", "rescore", "compare", "gate",
    "plan", "generate", "smoke", "reload_check", "adapter_card", "read_predictions",
    "resolve_options",
}  # fmt: skip


def _public() -> Iterator[tuple[str, Any]]:
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            yield f"{package}.{name}", getattr(module, name)


def _params_classes() -> dict[str, type[Params]]:
    found: dict[str, type[Params]] = {}
    for _, value in _public():
        if isinstance(value, type) and issubclass(value, Params):
            found[value.__name__] = value
    stack = list(found.values())
    while stack:  # subclasses that no package exports (ModelParams, LookParams, ...)
        for sub in stack.pop().__subclasses__():
            if sub.__name__ not in found and sub.__module__.startswith("evalkit."):
                found[sub.__name__] = sub
                stack.append(sub)
    return found


def _functions() -> dict[str, Any]:
    return {
        where: value
        for where, value in _public()
        if callable(value) and not isinstance(value, type) and not inspect.ismodule(value)
    }


def _names_in_use() -> dict[str, list[str]]:
    """Every Python name a caller writes: fields of the objects, parameters of the functions."""
    used: dict[str, list[str]] = {}
    for cls in _params_classes().values():
        for field in dataclasses.fields(cls):
            used.setdefault(field.name, []).append(cls.__name__)
    from evalkit.plan import Options

    for field in dataclasses.fields(Options):
        used.setdefault(field.name, []).append("evalkit.plan.Options")
    for where, function in _functions().items():
        for parameter in inspect.signature(function).parameters:
            used.setdefault(parameter, []).append(f"{where}()")
    return used


def test_the_walk_finds_every_options_object_and_entry() -> None:
    assert set(_params_classes()) >= EXPECTED_PARAMS
    assert {where.rsplit(".", 1)[1] for where in _functions()} >= EXPECTED_FUNCTIONS


def test_no_concept_appears_under_two_names() -> None:
    used = _names_in_use()
    clashes = [
        f"{concept}: {old!r} in {', '.join(sorted(set(used[old])))} (use {name!r})"
        for old, (concept, name) in FORBIDDEN.items()
        if old in used
    ]
    assert not clashes, "\n".join(clashes)
    for concept, (name, _) in CONCEPTS.items():  # each canonical name is in use somewhere
        assert name in used, f"{concept}: {name!r} is used nowhere; is the table stale?"


def test_every_deprecated_name_is_a_forbidden_spelling_of_its_fields_concept() -> None:
    for cls in _params_classes().values():
        fields = {field.name for field in dataclasses.fields(cls)}
        for old, new in renamed_of(cls).items():
            assert old not in fields, f"{cls.__name__}.{old} is a field and an old name"
            assert FORBIDDEN.get(old, (None, None))[1] == new, (cls.__name__, old, new)


def _renamed_cases() -> list[tuple[type[Params], str, str]]:
    return [
        (cls, old, new)
        for cls in sorted(_params_classes().values(), key=lambda cls: cls.__name__)
        for old, new in renamed_of(cls).items()
    ]


RENAMED_CASES = _renamed_cases()
# The required fields of each class, with a value (the field under test aside).
REQUIRED: dict[str, dict[str, Any]] = {
    "GenerateParams": {"id_column": "id", "text": ("messages",)},
    "AuditParams": {"id_column": "id", "text": ("messages",)},
    "SmokeParams": {"text": ("messages",)},
    "TokensParams": {"text": ("messages",)},
}


def _value(cls: type[Params], field: str) -> Any:
    kind = field_types(cls)[field]
    if kind.many:
        return ("prompt", "completion")
    return 4 if kind.base is int else "doc.qid"


def _one_warning(caught: list[warnings.WarningMessage], old: str, new: str) -> None:
    assert len(caught) == 1, [str(warning.message) for warning in caught]
    assert caught[0].category is DeprecationWarning
    assert f"{old} is deprecated; use {new}" in str(caught[0].message)
    assert caught[0].filename == __file__  # pointed at the caller's line, not evalkit's


def test_the_renamed_fields_are_the_ones_issue_30_names() -> None:
    found = {(cls.__name__, old, new) for cls, old, new in RENAMED_CASES}
    assert {
        ("ScoreParams", "id_col", "id_column"),
        ("ScoreParams", "output_col", "output_column"),
        ("AuditParams", "text_column", "text"),
        ("CompareParams", "text_column", "text"),
        ("GenerateParams", "text_columns", "text"),
        ("TokensParams", "max_seq_length", "seq_len"),
        ("PlanParams", "batch", "batch_size"),
        ("PlanParams", "eval_batch", "eval_batch_size"),
        ("SmokeParams", "batch", "batch_size"),
    } <= found


@pytest.mark.parametrize(
    ("cls", "old", "new"), RENAMED_CASES, ids=[f"{c.__name__}.{o}" for c, o, _ in RENAMED_CASES]
)
def test_an_old_name_warns_once_and_means_the_field(cls: type[Params], old: str, new: str) -> None:
    required = {key: v for key, v in REQUIRED.get(cls.__name__, {}).items() if key != new}
    value = _value(cls, new)
    current = cls(**required, **{new: value})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        made = cls(**required, **{old: value})
    _one_warning(caught, old, new)
    assert made == current
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = cls.build(None, {**required, old: value})
    _one_warning(caught, old, new)
    assert built == current
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        read = getattr(current, old)
    _one_warning(caught, old, new)
    assert read == getattr(current, new)
    with pytest.raises(TypeError, match=f"give {new} only \\({old} is its deprecated spelling"):
        cls(**required, **{old: value, new: value})
    assert old not in inspect.signature(cls).parameters  # help() shows the new name alone


@pytest.mark.parametrize(("cls", "old", "new"), RENAMED_CASES)
def test_the_command_line_keeps_its_flag(cls: type[Params], old: str, new: str) -> None:
    """Only the Python name moved: each renamed field's flag is the one the CLI had."""
    flags = {
        "id_column": "--id",
        "output_column": "--output-col",
        "text": "--text",
        "seq_len": "--seq-len",
        "batch_size": "--batch-size",
        "eval_batch_size": "--eval-batch-size",
    }
    field = next(field for field in dataclasses.fields(cls) if field.name == new)
    assert _declarations(new, spec_of(field))[-2:] == [flags[new], new]


def test_an_unknown_name_is_still_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'batches'"):
        evalkit.PlanParams.build(None, {"batches": 2})
    with pytest.raises(AttributeError, match="'batches'"):
        evalkit.PlanParams().batches  # noqa: B018


def test_the_library_entries_take_the_old_names_with_one_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # evalkit itself uses the new names
        current = evalkit.plan(LLAMA7, seq_len=512, batch_size=2, eval_batch_size=4)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = evalkit.plan(LLAMA7, seq_len=512, batch=2)
    _one_warning(caught, "batch", "batch_size")
    assert old.inputs.options.batch == 2  # the record keeps its key
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        both = evalkit.plan(LLAMA7, seq_len=512, batch=2, eval_batch=4)
    assert both.model_dump() == current.model_dump()


def test_the_resolved_plan_options_read_their_old_names_with_a_warning() -> None:
    from evalkit.plan import load_model_shape, resolve_options

    options = resolve_options(load_model_shape(LLAMA7), batch_size=3, eval_batch_size=5)
    for old, new, value in (("batch", "batch_size", 3), ("eval_batch", "eval_batch_size", 5)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert getattr(options, old) == value
        _one_warning(caught, old, new)


def test_read_predictions_takes_its_old_keywords_with_one_warning(tmp_path: Path) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"doc": {"qid": "q1"}, "generation": "yes"}) + "\n")
    current = evalkit.read_predictions(
        path, default_id="qid", id_column="doc.qid", output_column="generation"
    )
    for old, new in (("id_col", "id_column"), ("output_col", "output_column")):
        keywords = {"id_column": "doc.qid", "output_column": "generation"}
        keywords[old] = keywords.pop(new)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            table = evalkit.read_predictions(path, default_id="qid", **keywords)
        _one_warning(caught, old, new)
        assert table.frame.equals(current.frame)
    assert current.frame["id"].to_list() == ["q1"]
    with pytest.raises(TypeError, match="give id_column only"):
        evalkit.read_predictions(path, default_id="qid", id_col="a", id_column="b")
    assert "id_col" not in inspect.signature(evalkit.read_predictions).parameters


def test_audit_takes_text_column_with_one_warning() -> None:
    import polars as pl

    frames = {
        "train": pl.DataFrame({"id": ["a", "b"], "t": ["the same words here", "other"]}),
        "test": pl.DataFrame({"id": ["c"], "t": ["the same words here"]}),
    }
    current = evalkit.audit(frames, id_column="id", text="t")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        old = evalkit.audit(frames, id_column="id", text_column="t")
    _one_warning(caught, "text_column", "text")
    assert old.model_dump() == current.model_dump()
    assert len(current.exact_duplicates) == 1
