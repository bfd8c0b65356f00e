"""``evalkit card checkpoint-N/``: a real Trainer checkpoint, damaged copies, hostile pickles.

The checkpoints are written here by transformers' ``Trainer`` with PEFT on
the session's tiny base (in this process: no subprocess, a few seconds).
The references are torch's own loads of the same files (``torch.load``,
trusted here because this test wrote them), ``os.stat`` and the JSON: the
card must read the same step counts and settings without torch and
without running a pickle's code.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, assert_one_line_error
from model_fixtures import TinyModels

pytest.importorskip("torch")
pytest.importorskip("peft")

pytestmark = pytest.mark.slow  # a Trainer run on a model

STEPS, SAVE_AT = 3, 2
SCHEMA = ROOT / "docs" / "schemas" / "checkpoint-card.schema.json"


def _train(base: Path, out: Path, **extra: Any) -> Path:
    """A Trainer + PEFT run of STEPS steps that saves checkpoint-SAVE_AT; its folder."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Trainer, TrainingArguments, set_seed

    set_seed(0)
    model = AutoModelForCausalLM.from_pretrained(str(base), dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(task_type="CAUSAL_LM", r=4))
    ids = torch.randint(3, 200, (6, 16), generator=torch.Generator().manual_seed(0))
    rows = [{"input_ids": row, "labels": row} for row in ids]
    args = TrainingArguments(
        output_dir=str(out), max_steps=STEPS, save_strategy="steps", save_steps=SAVE_AT,
        per_device_train_batch_size=2, learning_rate=1e-3, report_to="none", use_cpu=True,
        disable_tqdm=True, seed=0, **extra,
    )  # fmt: skip
    Trainer(model=model, args=args, train_dataset=rows).train()
    return out / f"checkpoint-{SAVE_AT}"


@pytest.fixture(scope="module")
def checkpoints(tiny: TinyModels, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("checkpoints")
    return {
        "sound": _train(tiny.base, root / "sound"),
        "only_model": _train(tiny.base, root / "only_model", save_only_model=True),
    }


def _copy(checkpoint: Path, tmp_path: Path) -> Path:
    target = tmp_path / checkpoint.name
    shutil.copytree(checkpoint, target)
    return target


def test_a_real_checkpoint_is_resumable_and_read_as_torch_reads_it(
    checkpoints: dict[str, Path], run_cli, tmp_path: Path
) -> None:
    import jsonschema
    import torch

    folder = checkpoints["sound"]
    out = tmp_path / "checkpoint.json"
    result = run_cli("card", folder, "--json", out)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout.rstrip().endswith(f"checkpoint: resumable -> {out}")
    card = json.loads(out.read_text())
    jsonschema.validate(card, json.loads(SCHEMA.read_text()))
    state = json.loads((folder / "trainer_state.json").read_text())
    scheduler = torch.load(folder / "scheduler.pt", weights_only=True)
    optimizer = torch.load(folder / "optimizer.pt", weights_only=True)
    steps = {float(entry["step"]) for entry in optimizer["state"].values()}
    assert state["global_step"] == SAVE_AT == scheduler["last_epoch"] and steps == {SAVE_AT}
    assert card["global_step"] == card["scheduler_steps"] == card["optimizer_steps"] == SAVE_AT
    assert card["max_steps"] == STEPS and card["epoch"] == state["epoch"]
    sizes = {entry.name: entry.stat().st_size for entry in os.scandir(folder) if entry.is_file()}
    assert {file["name"]: file["bytes"] for file in card["files"]} == sizes
    assert card["bytes"] == sum(sizes.values())
    roles = {file["name"]: file["role"] for file in card["files"]}
    assert roles["adapter_model.safetensors"] == "weights" and roles["optimizer.pt"] == "optimizer"
    assert roles["rng_state.pth"] == "rng_state" and roles["training_args.bin"] == "training_args"
    args = torch.load(folder / "training_args.bin", weights_only=False)  # written by this test
    for key in ("save_only_model", "seed", "learning_rate", "gradient_accumulation_steps"):
        assert card["training_args"][key] == getattr(args, key), key
    assert card["training_args"]["lr_scheduler_type"] == args.lr_scheduler_type.value
    assert card["training_args"]["use_seedable_sampler"] is True
    assert card["weights"] == "adapter" and card["adapter"]["lora"]["r"] == 4
    assert card["resumable"] is True and card["problems"] == []


def test_save_only_model_is_not_resumable_and_says_why(
    checkpoints: dict[str, Path], run_cli
) -> None:
    result = run_cli("card", checkpoints["only_model"])
    assert result.exit_code == 1
    assert "checkpoint: NOT resumable (4 errors)" in result.stdout
    from evalkit.provenance.checkpoint import checkpoint_card

    card = checkpoint_card(checkpoints["only_model"])
    codes = [problem.code for problem in card.problems]
    assert codes == [
        "save_only_model",
        "missing_optimizer",
        "missing_scheduler",
        "missing_rng_state",
    ]
    assert card.training_args is not None and card.training_args["save_only_model"] is True
    assert card.optimizer_steps is None and card.scheduler_steps is None
    assert card.global_step == SAVE_AT


@pytest.mark.parametrize(
    ("removed", "code"),
    [
        ("optimizer.pt", "missing_optimizer"),
        ("scheduler.pt", "missing_scheduler"),
        ("rng_state.pth", "missing_rng_state"),
        ("trainer_state.json", "missing_trainer_state"),
        ("adapter_model.safetensors", "no_weights"),
    ],
)
def test_a_missing_state_file_is_named(
    checkpoints: dict[str, Path], tmp_path: Path, removed: str, code: str
) -> None:
    from evalkit.provenance.checkpoint import checkpoint_card

    folder = _copy(checkpoints["sound"], tmp_path)
    (folder / removed).unlink()
    card = checkpoint_card(folder)
    assert not card.resumable
    assert [problem.code for problem in card.errors] == [code]
    assert removed in card.errors[0].message or code == "no_weights"


def test_trainer_state_disagreeing_with_the_scheduler_is_a_step_mismatch(
    checkpoints: dict[str, Path], tmp_path: Path, run_cli
) -> None:
    folder = _copy(checkpoints["sound"], tmp_path)
    state = json.loads((folder / "trainer_state.json").read_text())
    state["global_step"] = SAVE_AT + 1
    (folder / "trainer_state.json").write_text(json.dumps(state))
    result = run_cli("card", folder)
    assert result.exit_code == 1
    from evalkit.provenance.checkpoint import checkpoint_card

    card = checkpoint_card(folder)
    messages = [problem.message for problem in card.errors]
    assert [problem.code for problem in card.errors] == ["step_mismatch"] * 3
    assert f"global step {SAVE_AT + 1} but scheduler.pt has stepped {SAVE_AT} times" in messages[0]
    assert f"optimizer.pt has stepped {SAVE_AT} times" in messages[1]
    assert f"named checkpoint-{SAVE_AT} but trainer_state.json says global step" in messages[2]


def test_a_damaged_state_file_is_a_problem_not_a_crash(
    checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    from evalkit.provenance.checkpoint import checkpoint_card

    folder = _copy(checkpoints["sound"], tmp_path)
    data = (folder / "optimizer.pt").read_bytes()
    (folder / "optimizer.pt").write_bytes(data[: len(data) // 2])
    card = checkpoint_card(folder)
    assert [problem.code for problem in card.errors] == ["unreadable_state"]
    assert card.errors[0].message.startswith("optimizer.pt: ")


def _hostile_scheduler(path: Path, marker: Path) -> None:
    """A torch zip whose pickle would run ``os.system`` when loaded the ordinary way."""

    class Payload:
        def __reduce__(self) -> tuple[Any, ...]:
            return (os.system, (f"touch {marker}",))

    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("scheduler/data.pkl", pickle.dumps({"last_epoch": Payload()}, protocol=2))
        archive.writestr("scheduler/byteorder", "little")


def test_a_pickle_naming_code_runs_none_of_it(checkpoints: dict[str, Path], tmp_path: Path) -> None:
    from evalkit.provenance.checkpoint import checkpoint_card

    folder = _copy(checkpoints["sound"], tmp_path)
    marker = tmp_path / "ran"
    _hostile_scheduler(folder / "scheduler.pt", marker)
    card = checkpoint_card(folder)
    assert not marker.exists()
    assert [problem.code for problem in card.errors] == ["unreadable_state"]
    assert "holds no scheduler state" in card.errors[0].message
    with zipfile.ZipFile(folder / "scheduler.pt") as archive:  # and it would have run
        pickle.loads(archive.read("scheduler/data.pkl"))
    assert marker.exists()


def test_settings_that_reorder_data_on_resume_are_warned(
    checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    """training_args.bin rewritten as the Trainer writes it, with other settings."""
    import torch

    from evalkit.provenance.checkpoint import checkpoint_card

    folder = _copy(checkpoints["sound"], tmp_path)
    args = torch.load(folder / "training_args.bin", weights_only=False)
    args.ignore_data_skip = True
    args.accelerator_config.use_seedable_sampler = False
    torch.save(args, folder / "training_args.bin")
    card = checkpoint_card(folder)
    assert card.resumable
    assert [problem.code for problem in card.problems] == ["ignore_data_skip", "unseeded_sampler"]


def test_an_adapter_folder_still_gets_an_adapter_card(tiny: TinyModels, run_cli) -> None:
    from evalkit.provenance.checkpoint import is_checkpoint

    assert not is_checkpoint(tiny.adapter)
    result = run_cli("card", tiny.adapter)
    assert result.stdout.startswith("adapter ")


def test_a_missing_checkpoint_folder_is_one_line(run_cli, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("card", tmp_path / "checkpoint-9"), "checkpoint-9")


def test_under_fp16_a_missing_scaler_is_an_error_and_skipped_steps_a_warning(
    checkpoints: dict[str, Path], tmp_path: Path
) -> None:
    """The gradient scaler skips a step on overflow: neither optimizer nor scheduler steps."""
    import torch

    from evalkit.provenance.checkpoint import checkpoint_card

    folder = _copy(checkpoints["sound"], tmp_path)
    args = torch.load(folder / "training_args.bin", weights_only=False)
    args.fp16 = True
    torch.save(args, folder / "training_args.bin")
    state = json.loads((folder / "trainer_state.json").read_text())
    state["global_step"] = SAVE_AT + 1
    (folder / "trainer_state.json").write_text(json.dumps(state))
    card = checkpoint_card(folder)
    found = [(problem.code, problem.severity) for problem in card.problems]
    assert found == [
        ("missing_scaler", "error"),
        ("step_mismatch", "error"),  # the folder's name: no overflow explains it
        ("step_mismatch", "warning"),
        ("step_mismatch", "warning"),
    ]
