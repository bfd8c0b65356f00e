"""``split`` and ``audit`` take one options object each: SplitParams, AuditParams."""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys
from pathlib import Path

import polars as pl
import pytest

from evalkit.errors import ParameterError
from evalkit.leakage.distributed.session import RayOptions, with_address
from evalkit.leakage.options import AuditParams
from evalkit.splitting.options import SplitParams

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "tickets"))

from generate import generate  # noqa: E402


@pytest.fixture(scope="module")
def tickets() -> pl.DataFrame:
    return pl.DataFrame(generate(300, 7))


def _fields(cls: type) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


def test_every_split_option_is_a_field_of_its_options_object() -> None:
    """The click command declares no split option of its own beyond input and output."""
    from evalkit.cli.split_cmd import split_command

    names = {param.name for param in split_command.params}
    assert names - _fields(SplitParams) == {"input_file", "out", "fmt", "force", "quiet"}


def test_every_audit_option_is_a_field_of_its_options_object() -> None:
    """The click command declares no audit option of its own beyond input and output."""
    from evalkit.cli.audit_cmd import audit_command

    names = {param.name for param in audit_command.params}
    assert names - _fields(AuditParams) == {"files", "json_path", "force", "quiet"}


def test_split_with_the_object_or_keywords_gives_the_same_split(tickets: pl.DataFrame) -> None:
    import evalkit
    from evalkit.splitting.api import split

    keywords = {
        "group": ["conversation_id"],
        "stratify": "category",
        "id_column": "ticket_id",
        "text": "text",
        "sizes": [200, 50, 50],
        "seed": 3,
        "near_dup": 0.8,
    }
    by_keywords = split(tickets, **keywords)
    by_object = split(tickets, SplitParams(**keywords))  # type: ignore[arg-type]
    changed = split(tickets, SplitParams(**keywords), seed=4)  # type: ignore[arg-type]
    assert by_keywords.record.to_json() == by_object.record.to_json()
    assert by_keywords.assignments.equals(by_object.assignments)
    assert changed.record.options.seed == 4
    assert not changed.assignments.equals(by_object.assignments)
    # The manifest records the options as they were written before the object.
    options = by_object.record.to_json()["options"]
    assert options["group"] == ["conversation_id"] and options["sizes"] == [200, 50, 50]
    assert options["text"] == "text" and options["completion"] is None
    assert options["names"] == ["train", "val", "test"] and options["near_dup"] == 0.8
    parameters = inspect.signature(evalkit.split).parameters
    assert list(parameters)[:2] == ["data", "params"]
    assert parameters["names"].default == ("train", "val", "test")
    assert {"ray", "ray_address", "engine", "hf_split"} <= set(parameters)


def test_audit_with_the_object_or_keywords_gives_the_same_report(tmp_path: Path) -> None:
    import evalkit
    from evalkit.leakage.api import audit

    frames = {
        "train": pl.DataFrame({"id": ["a", "b", "c"], "text": ["one two three four", "x", "y"]}),
        "test": pl.DataFrame({"id": ["d", "e"], "text": ["one two three four", "z"]}),
    }
    by_keywords = audit(frames, id_column="id", text="text", within=True)
    given = AuditParams(id_column="id", text=("text",), within=True)
    by_object = audit(frames, given)
    assert by_keywords.model_dump_json() == by_object.model_dump_json()
    assert by_object.leak and by_object.counts.exact_duplicates == 1
    exact = audit(frames, given, exact_only=True)
    assert exact.options.near_dup is None
    assert exact.model_dump_json() == audit(frames, given, near_dup=None).model_dump_json()
    parameters = inspect.signature(evalkit.audit).parameters
    assert list(parameters)[:2] == ["inputs", "params"]
    assert parameters["near_dup"].default == 0.8 and parameters["opening_words"].default == 5
    assert {"progress", "ray", "ray_address", "exact_only"} <= set(parameters)


def test_one_column_as_text_is_a_list_of_one() -> None:
    assert SplitParams(group="g", text="t") == SplitParams(group=["g"], text=["t"])  # type: ignore[arg-type]
    assert AuditParams(id_column="i", text="t").text == ("t",)  # type: ignore[arg-type]
    assert SplitParams(group=("g",), freeze="a.parquet").freeze == Path("a.parquet")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: SplitParams(group=("g",), names=("a",)), r"^names must name at least two"),
        (lambda: SplitParams(group=("g",), tolerance=-1), r"^tolerance must be >= 0 items"),
        (
            lambda: SplitParams(group=("g",), text=("a", "b", "c", "d")),
            r"^text must name one column",
        ),
        (lambda: SplitParams(group=("g",), engine="spark"), r"^engine must be one of local, ray"),
        (lambda: AuditParams(id_column="i", text=()), r"^text must name one"),
        (lambda: AuditParams(id_column="i", text=("t",), opening_words=0), r"^opening_w"),
        (lambda: AuditParams(id_column="i", text=("t",), near_dup=1.5), r"^near_dup must"),
    ],
)
def test_a_value_is_refused_when_the_object_is_made_naming_the_parameter(make, message) -> None:
    with pytest.raises(ParameterError, match=message):
        make()


def test_ray_address_needs_the_ray_engine_and_joins_the_ray_options() -> None:
    with pytest.raises(ParameterError, match=r"^ray_address needs engine ray$"):
        SplitParams(group=("g",), ray_address="head:6379")
    with pytest.raises(ParameterError, match=r"^ray_address needs engine ray$"):
        AuditParams(id_column="i", text=("t",), ray_address="head:6379")
    assert with_address(None, "head:6379") == RayOptions(address="head:6379")
    assert with_address(RayOptions(num_cpus=2), "h:1") == RayOptions(address="h:1", num_cpus=2)
    assert with_address(RayOptions(address="h:1"), "h:1") == RayOptions(address="h:1")
    with pytest.raises(ParameterError, match=r"^ray_address h:2: ray names another cluster"):
        with_address(RayOptions(address="h:1"), "h:2")


def test_split_reads_a_dataset_dict_split_from_python(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    from evalkit.splitting.api import split

    rows = [{"id": i, "g": i // 2, "text": f"item {i}"} for i in range(20)]
    datasets.DatasetDict(
        {"test": datasets.Dataset.from_list(rows), "train": datasets.Dataset.from_list(rows[:4])}
    ).save_to_disk(str(tmp_path / "dd"))
    keywords = {"group": ["g"], "sizes": [10, 10], "names": ["a", "b"], "id_column": "id"}
    result = split(tmp_path / "dd", hf_split="test", **keywords)
    assert result.record.input.path == str(tmp_path / "dd" / "test")
    assert result.record.input.n_items == 20
    with pytest.raises(ParameterError, match=r"^hf_split test: applies to a Hugging Face"):
        split(pl.DataFrame(rows), hf_split="test", **keywords)
    written = json.loads(json.dumps(result.record.to_json()))
    assert written["options"]["group"] == ["g"]
