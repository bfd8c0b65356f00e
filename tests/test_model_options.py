"""The model commands' options objects: smoke, generate, reload-check and card.

Each click command declares no option of the library's beyond its inputs and
outputs; each library entry gives the same result called with the object or
with keywords; smoke's plan options are the plan's own fields.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import math
from pathlib import Path

import click
import pytest

from evalkit.errors import ParameterError
from evalkit.model.options import (
    GenerateParams,
    ModelParams,
    ReloadCheckParams,
    SmokeParams,
)
from evalkit.options import Params, spec_of
from evalkit.plan.options import PlanParams
from evalkit.provenance.card_options import CardParams

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = ROOT / "examples" / "model" / "adapter"
BASE = ROOT / "examples" / "model" / "base"
COMMIT = "0123456789abcdef0123456789abcdef01234567"


def _fields(cls: type[Params]) -> set[str]:
    return {field.name for field in dataclasses.fields(cls)}


def _command(name: str) -> click.Command:
    from evalkit.cli import cli

    command = cli.get_command(click.Context(cli), name)
    assert command is not None
    return command


@pytest.mark.parametrize(
    ("name", "cls", "inputs_and_outputs"),
    [
        ("smoke", SmokeParams, {"base", "data", "json_path", "force", "quiet"}),
        ("generate", GenerateParams, {"base", "data", "out", "force", "quiet"}),
        ("reload-check", ReloadCheckParams, {"run_dir", "json_path", "force", "quiet"}),
        ("card", CardParams, {"adapter_dir", "json_path", "force", "quiet"}),
    ],
)
def test_every_option_of_a_model_command_is_a_field_of_its_options_object(
    name: str, cls: type[Params], inputs_and_outputs: set[str]
) -> None:
    """The click command declares no library option of its own beyond input and output."""
    names = {param.name for param in _command(name).params}
    assert names - _fields(cls) == inputs_and_outputs
    assert _fields(cls) <= names  # and every field is on the command line


def test_generate_and_smoke_share_one_definition_of_device_and_dtype() -> None:
    shared = {field.name: field for field in dataclasses.fields(ModelParams)}
    assert set(shared) == {"device", "dtype"}
    for cls in (GenerateParams, SmokeParams):
        assert issubclass(cls, ModelParams)
        for field in dataclasses.fields(cls):
            if field.name in shared:
                assert spec_of(field) is spec_of(shared[field.name])
    # reload-check's take the same choices, and default to the run's
    kinds = {field.name: field.type for field in dataclasses.fields(ReloadCheckParams)}
    assert kinds["device"] == "DeviceChoice | None" and kinds["dtype"] == "DtypeChoice | None"
    assert ReloadCheckParams().device is None and ReloadCheckParams().dtype is None
    with pytest.raises(ParameterError, match=r"^device must be one of auto, cpu, cuda, got 'tpu'"):
        ReloadCheckParams(device="tpu")  # type: ignore[arg-type]


def test_smokes_plan_options_are_the_plans_fields() -> None:
    """Flag, check, deprecated spellings and default come from PlanParams; smoke has its words."""
    plan = {field.name: field for field in dataclasses.fields(PlanParams)}
    for field in dataclasses.fields(SmokeParams):
        if field.name in ("r", "targets", "seq_len", "batch_size"):
            ours, theirs = spec_of(field), spec_of(plan[field.name])
            assert (ours.flag, ours.check, ours.aliases, ours.renamed) == (
                theirs.flag,
                theirs.check,
                theirs.aliases,
                theirs.renamed,
            )
            assert field.default == plan[field.name].default
    assert spec_of(plan["batch_size"]).aliases == ("--batch",)
    assert spec_of(plan["batch_size"]).renamed == ("batch",)
    given = SmokeParams(text="m", method="full", seq_len=64, batch_size=2, grad_checkpointing=True)
    assert given.plan_params() == PlanParams(
        method="full", seq_len=64, batch_size=2, grad_checkpointing=True
    )
    with pytest.raises(ParameterError, match=r"^batch_size must be a positive number of seq"):
        SmokeParams(text="m", batch_size=0)


@pytest.mark.parametrize(
    ("cls", "values", "message"),
    [
        (SmokeParams, {"text": "m", "steps": 0}, "steps must be a positive integer, got 0"),
        (SmokeParams, {"text": "m", "lr": math.nan}, "lr must be a positive finite number"),
        (SmokeParams, {"text": "m", "lr": -1.0}, "lr must be a positive finite number"),
        (SmokeParams, {"text": "m", "seed": -1}, "seed must be a whole number >= 0"),
        (SmokeParams, {"text": "m", "method": "qlora"}, "method must be one of lora, full"),
        (SmokeParams, {"text": "m", "max_new_tokens": 0}, "max_new_tokens must be a positive"),
        (
            GenerateParams,
            {"id_column": "i", "text": ["m"], "batch_size": 0},
            "batch_size must be a positive number of sequences",
        ),
        (
            ReloadCheckParams,
            {"n": 0},
            "n must be at least 1 (control examples checked), got 0",
        ),
    ],
)
def test_a_refused_value_names_its_parameter(
    cls: type[Params], values: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError) as error:
        cls(**values)
    assert str(error.value).startswith(message)


def test_the_conversation_columns_and_paths_are_kept_as_the_library_reads_them() -> None:
    assert SmokeParams(text="messages").text == ("messages",)
    assert SmokeParams(text=["prompt", "completion"]).text == ("prompt", "completion")
    generate = GenerateParams(id_column="i", text="m", adapter="a", tokenizer="t")  # type: ignore[arg-type]
    assert generate.text == ("m",)
    assert generate.adapter == Path("a") and generate.tokenizer == Path("t")
    assert ReloadCheckParams(merged="m").merged == Path("m")  # type: ignore[arg-type]
    assert CardParams(base="b", training="t.json").base == Path("b")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'id_column'"):
        GenerateParams(text=("m",))  # type: ignore[call-arg]


def test_the_model_entries_show_their_options_in_their_signatures() -> None:
    import evalkit
    from evalkit.model.generate import generate
    from evalkit.model.reload import reload_check
    from evalkit.model.smoke import smoke
    from evalkit.provenance.card import adapter_card

    for entry, cls in (
        (smoke, SmokeParams),
        (generate, GenerateParams),
        (reload_check, ReloadCheckParams),
        (adapter_card, CardParams),
    ):
        parameters = inspect.signature(entry).parameters
        assert _fields(cls) <= set(parameters), entry.__name__
        assert parameters["params"].kind is inspect.Parameter.POSITIONAL_ONLY
        assert inspect.signature(getattr(evalkit, entry.__name__)) == inspect.signature(entry)


def test_card_with_the_object_or_keywords_is_the_same_card(tmp_path: Path) -> None:
    from evalkit.provenance.card import adapter_card, card_json

    by_keywords = adapter_card(ADAPTER, base=BASE, base_revision=COMMIT)
    by_object = adapter_card(ADAPTER, CardParams(base=BASE, base_revision=COMMIT))
    assert card_json(by_keywords) == card_json(by_object)
    assert by_object.base.revision == COMMIT
    with pytest.raises(TypeError, match="unexpected keyword argument 'base_dir'"):
        adapter_card(ADAPTER, base_dir=BASE)


@pytest.mark.parametrize("entry", ["generate", "smoke"])
def test_hf_split_is_refused_where_there_is_no_dataset_dict(entry: str, tmp_path: Path) -> None:
    """Checked before any model loads: a frame, or a file, has no splits to choose from."""
    import polars as pl

    from evalkit.model.generate import generate
    from evalkit.model.smoke import smoke

    def call(data: object) -> object:
        if entry == "generate":
            return generate(BASE, data, hf_split="test", id_column="i", text=["m"])
        return smoke(BASE, data, text="m", hf_split="test")

    frame = pl.DataFrame({"ticket_id": ["a"], "messages": ["x"]})
    with pytest.raises(ParameterError, match=r"^hf_split applies to a DatasetDict folder"):
        call(frame)
    split = tmp_path / "test.jsonl"
    split.write_text('{"ticket_id": "a", "messages": "x"}\n')
    with pytest.raises(ParameterError, match=r"^hf_split test: .* not a Hugging Face DatasetDict"):
        call(split)


@pytest.mark.slow  # two greedy runs and two fresh-process reloads of a tiny model
def test_generate_and_reload_check_with_the_object_or_keywords_agree(tiny, tmp_path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    from evalkit.model.generate import generate
    from evalkit.model.reload import reload_check

    keywords = {
        "id_column": "ticket_id",
        "text": ["messages"],
        "adapter": tiny.adapter,
        "max_new_tokens": 4,
        "batch_size": 3,
        "device": "cpu",
    }
    by_keywords = generate(tiny.base, tiny.data, **keywords)
    by_object = generate(tiny.base, tiny.data, GenerateParams(**keywords))  # type: ignore[arg-type]
    assert by_keywords.predictions.equals(by_object.predictions)
    assert by_keywords.tokens.equals(by_object.tokens)
    assert by_keywords.run == by_object.run
    # hf_split: the library picks a DatasetDict folder's split itself, as --hf-split does
    datasets = pytest.importorskip("datasets")
    rows = [json.loads(line) for line in tiny.data.read_text().splitlines()]
    folder = tmp_path / "dd"
    datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)}).save_to_disk(str(folder))
    by_split = generate(tiny.base, folder, hf_split="test", **keywords)
    assert by_split.predictions.equals(by_keywords.predictions)
    one = reload_check(tiny.run, n=2, seed=1, device="cpu")
    other = reload_check(tiny.run, ReloadCheckParams(n=2, seed=1, device="cpu"))
    assert one.model_dump() == other.model_dump()
    assert one.verdict == "pass"
