"""``evalkit smoke --trainer hf --resume-at K``: a sound setup passes, planted faults fail.

On the CPU in float32 with the session's tiny model. Each scenario is four
Trainer processes, read by exactly one test (so that pytest-xdist spreads
the scenarios over its workers and never runs one twice): the sound setup
and save_only_model on the command line (smoke's phases, the exit code),
the others through ``resume_check``, the check alone (faster).

The runs: 6 steps of 2 rows, the checkpoint at step 4. The Trainer's
dataset holds the rows of half the steps, so an epoch is 3 steps and the
resume starts inside the second epoch. References computed here
independently: the linear schedule by hand, each step's sha256 with
hashlib, the first loss with ``model(**batch).loss`` of the base loaded by
transformers (a new adapter's B is zero), the rows of each epoch as a
permutation of the dataset's.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, assert_one_line_error
from model_fixtures import TinyModels
from tokens_fixtures import CHATML_MARKED

pytest.importorskip("torch")
pytest.importorskip("peft")

from evalkit.cli import main

pytestmark = pytest.mark.slow  # four training processes per scenario

SEQ_LEN, BATCH, STEPS, AT = 96, 2, 6, 4
LR = 1e-3
SCHEMA = ROOT / "docs" / "schemas" / "smoke-report.schema.json"


def _run(args: list[object]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with (
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.raises(SystemExit) as done,
    ):
        main([str(arg) for arg in args])
    code = done.value.code
    return (code if isinstance(code, int) else 0), out.getvalue(), err.getvalue()


def _args(tiny: TinyModels, *extra: object) -> list[object]:
    return ["smoke", "--base", tiny.base, "--data", tiny.data, "--text", "messages",
            "--seq-len", SEQ_LEN, "--batch-size", BATCH, "--steps", STEPS, "--device", "cpu",
            "--trainer", "hf", "--resume-at", AT, *extra]  # fmt: skip


def _scenario(
    tiny: TinyModels, folder: Path, fields: dict[str, Any], *extra: object
) -> dict[str, Any]:
    args_file = folder / "args.yaml"
    args_file.write_text("".join(f"{key}: {json.dumps(value)}\n" for key, value in fields.items()))
    report = folder / "smoke.json"
    code, out, err = _run(_args(tiny, "--trainer-args", args_file, "--json", report, *extra))
    assert report.is_file(), out + err
    return {"code": code, "stdout": out, "stderr": err, "report": json.loads(report.read_text())}


def _check(tiny: TinyModels, folder: Path, fields: dict[str, Any]) -> dict[str, Any]:
    """The resume check alone, from Python (no smoke phases: faster)."""
    from evalkit.model.resume_api import resume_check

    args_file = folder / "args.json"
    args_file.write_text(json.dumps(fields))
    options = {"seq_len": SEQ_LEN, "batch_size": BATCH, "steps": STEPS, "device": "cpu"}
    check = resume_check(
        tiny.base, tiny.data, text="messages", trainer="hf", resume_at=AT,
        trainer_args=args_file, **options,
    )  # fmt: skip
    return check.model_dump(mode="json")


def _linear(step: int, lr: float = LR, steps: int = STEPS) -> float:
    """The learning rate of ``step`` (1-based) under the linear schedule without warm-up."""
    return lr * (steps - (step - 1)) / steps


def _reference_loss(tiny: TinyModels, rows: list[int]) -> float:
    """The base's loss on those rows from transformers' own assistant mask, cut and padded."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(tiny.base))
    tokenizer.chat_template = CHATML_MARKED
    data = [json.loads(line) for line in tiny.data.read_text().splitlines()]
    ids, masks, labels = [], [], []
    for row in rows:
        out = tokenizer.apply_chat_template(
            data[row]["messages"], tokenize=True, return_dict=True,
            return_assistant_tokens_mask=True,
        )  # fmt: skip
        tokens = list(out["input_ids"])[:SEQ_LEN]
        mask = list(out["assistant_masks"])[:SEQ_LEN]
        pad = SEQ_LEN - len(tokens)
        ids.append(tokens + [tokenizer.pad_token_id] * pad)
        masks.append([1] * len(tokens) + [0] * pad)
        labels.append([t if m else -100 for t, m in zip(tokens, mask, strict=True)] + [-100] * pad)
    model = AutoModelForCausalLM.from_pretrained(str(tiny.base), dtype=torch.float32).eval()
    with torch.no_grad():
        return float(
            model(input_ids=torch.tensor(ids), attention_mask=torch.tensor(masks),
                  labels=torch.tensor(labels)).loss
        )  # fmt: skip


def _epochs(batches: list[list[int]], per_epoch: int) -> list[list[int]]:
    return [
        sorted(row for rows in batches[start : start + per_epoch] for row in rows)
        for start in range(0, len(batches), per_epoch)
    ]


def test_a_sound_setup_resumes_bit_for_bit_on_the_cpu(tiny: TinyModels, tmp_path: Path) -> None:
    """On the CPU in float32 A, A' and B agree bitwise at every step (the seed is set before
    get_peft_model); a user's output_dir is replaced by smoke's and said so."""
    import jsonschema

    run = _scenario(tiny, tmp_path, {"learning_rate": LR, "seed": 1, "output_dir": "elsewhere"})
    assert run["code"] == 0, run["stdout"] + run["stderr"]
    report = run["report"]
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    resume = report["resume"]
    assert resume["ok"] and resume["problems"] == [] and report["verdict"] == "pass"
    assert resume["killed"] is True and resume["at_step"] == AT and resume["steps"] == STEPS
    # Bitwise: the noise floor, B's difference and the final adapter's are all exactly zero.
    assert resume["bitwise"] is True
    assert resume["noise_floor"] == 0.0 and resume["max_loss_diff"] == 0.0
    assert resume["loss_b"] == resume["loss_a"] == resume["loss_a2"]
    assert resume["adapter_max_diff"] == 0.0 == resume["adapter_noise_floor"]
    assert resume["tolerance"] == pytest.approx(4 * 2**-23 * max(resume["loss_a"]))
    # The learning rates are the linear schedule's, step by step.
    assert resume["lr_a"] == pytest.approx(
        [_linear(step) for step in range(1, STEPS + 1)], rel=1e-12
    )
    assert resume["lr_b"] == resume["lr_a"] and resume["lr_equal"]
    # Each epoch trains every row of the dataset once, and the steps' hashes are hashlib's.
    batches = resume["batches_a"]
    assert [len(rows) for rows in batches] == [BATCH] * STEPS
    per_epoch = resume["steps_per_epoch"]
    assert per_epoch == 3 and resume["rows"] == BATCH * per_epoch
    first, second = _epochs(batches, per_epoch)
    assert first == second and len(set(first)) == resume["rows"]
    assert batches[:per_epoch] != batches[per_epoch:]  # the second epoch is shuffled again
    hashes = [hashlib.sha256(json.dumps(rows).encode()).hexdigest() for rows in batches]
    assert resume["batch_sha256_a"] == hashes == resume["batch_sha256_b"]
    assert resume["batches_b"] == batches and resume["batches_equal"]
    # The first step's loss is the base's on its rows (a new adapter's B is zero).
    assert resume["loss_a"][0] == pytest.approx(_reference_loss(tiny, batches[0]), rel=1e-5)
    # The checkpoint: every state file, its bytes, the save timed.
    checkpoint = resume["checkpoint"]
    assert checkpoint["resumable"] and checkpoint["problems"] == []
    state_files = {"optimizer.pt", "scheduler.pt", "rng_state.pth", "trainer_state.json",
                   "training_args.bin", "adapter_model.safetensors"}  # fmt: skip
    assert state_files <= set(checkpoint["files"])
    assert checkpoint["bytes"] == sum(checkpoint["files"].values())
    assert checkpoint["save_seconds"] > 0 and report["throughput"]["save_seconds"] > 0
    args = resume["trainer_args"]
    assert args["overridden"] == ["output_dir"] and args["given"]["output_dir"] == "elsewhere"
    assert args["set_by_smoke"]["per_device_train_batch_size"] == BATCH
    assert args["set_by_smoke"]["save_steps"] == AT
    out = run["stdout"]
    assert "B after step 4: max |A - B| 0, bit for bit" in out
    assert out.rstrip().endswith("resume: PASS\nsmoke: PASS")
    # A report without the block (written before it existed) still reads.
    from evalkit.records._smoke import SmokeReport

    older = {key: value for key, value in report.items() if key != "resume"}
    assert SmokeReport.model_validate(older).resume is None


def test_save_only_model_fails_its_learning_rate_and_its_checkpoint(
    tiny: TinyModels, tmp_path: Path
) -> None:
    """transformers resumes from it with exit 0: the schedule starts over, the losses drift."""
    run = _scenario(tiny, tmp_path, {"learning_rate": LR, "save_only_model": True})
    assert run["code"] == 1, run["stdout"] + run["stderr"]
    resume = run["report"]["resume"]
    assert not resume["ok"] and resume["killed"]
    assert resume["lr_a"][AT] == pytest.approx(_linear(AT + 1))
    assert resume["lr_b"][AT] == pytest.approx(LR)  # step 5 at the schedule's start
    assert not resume["lr_equal"] and resume["batches_equal"]
    # Step 5 trains the same weights on the same rows: its loss is A's; then they part.
    assert resume["loss_b"][AT] == resume["loss_a"][AT]
    assert resume["loss_b"][AT + 1] != resume["loss_a"][AT + 1]
    assert resume["max_loss_diff"] > resume["tolerance"]
    assert not resume["checkpoint"]["resumable"]
    assert "optimizer.pt" not in resume["checkpoint"]["files"]
    problems = " | ".join(resume["problems"])
    assert "checkpoint-4: save_only_model: training_args.bin has save_only_model: true" in problems
    assert "checkpoint-4: missing_optimizer" in problems
    assert "the learning rate differs from step 5 on" in problems
    assert "B's loss leaves A's noise floor at step 6" in problems
    assert "resume: FAIL" in run["stdout"] and "smoke: FAIL" in run["stdout"]


def test_a_sampler_seeded_outside_the_saved_state_fails_its_batches(
    tiny: TinyModels, tmp_path: Path
) -> None:
    """use_seedable_sampler: false: the sampler draws its order from the global RNG when an
    epoch starts, and the saved RNG state is restored only after it; two straight runs agree,
    but B, resumed in the second epoch, trains the first epoch's order again."""
    fields = {"learning_rate": LR, "accelerator_config": {"use_seedable_sampler": False}}
    resume = _check(tiny, tmp_path, fields)
    assert not resume["ok"]
    # The two straight runs agreed (else the check could not tell a resume from noise).
    assert not any("not reproducible" in problem for problem in resume["problems"])
    assert resume["lr_equal"] and resume["checkpoint"]["resumable"]
    assert not resume["batches_equal"]
    assert resume["batches_b"][:AT] == resume["batches_a"][:AT]
    per_epoch = resume["steps_per_epoch"]
    # After the resume B repeats the first epoch's order from where the epoch was resumed.
    assert resume["batches_b"][AT] == resume["batches_a"][AT - per_epoch]
    assert resume["batch_sha256_b"][AT] != resume["batch_sha256_a"][AT]
    assert any("the batches differ from step 5 on" in problem for problem in resume["problems"])


def test_a_checkpoint_that_lost_optimizer_pt_fails(
    tiny: TinyModels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """optimizer.pt removed between the kill and the resume (a partial copy to storage):
    transformers then loads neither optimizer nor scheduler and still resumes with exit 0."""
    from evalkit.model import resume as resume_module

    launch = resume_module._launch

    def lose_the_optimizer(request: dict[str, Any], folder: Path) -> Any:
        run = launch(request, folder)
        if request["mode"] == "kill":
            (folder / "trainer" / f"checkpoint-{AT}" / "optimizer.pt").unlink()
        return run

    monkeypatch.setattr(resume_module, "_launch", lose_the_optimizer)
    resume = _check(tiny, tmp_path, {"learning_rate": LR})
    assert not resume["ok"] and not resume["checkpoint"]["resumable"]
    assert resume["checkpoint"]["problems"][0].startswith("missing_optimizer: no optimizer.pt")
    assert not resume["lr_equal"]  # the scheduler was not loaded either
    assert resume["problems"][0].startswith("resume: checkpoint-4: missing_optimizer")


def test_a_resume_off_the_accumulation_boundary_passes(tiny: TinyModels, tmp_path: Path) -> None:
    """Gradient accumulation 2 over an epoch of an odd number of micro-batches: every epoch
    ends on a partial accumulation, so checkpoint 4 comes after 7 micro-batches, not 4 x 2.
    transformers (5.25) handles it: it skips (4 mod steps per epoch) x 2 micro-batches of
    the resumed epoch, and B is A bit for bit."""
    resume = _check(tiny, tmp_path, {"learning_rate": LR, "gradient_accumulation_steps": 2})
    micro_batches = -(-resume["rows"] // BATCH)
    assert micro_batches % 2 == 1, "the fixture must give an odd number of micro-batches"
    per_epoch = resume["steps_per_epoch"]
    assert per_epoch == (micro_batches + 1) // 2 and per_epoch < AT
    before = sum(len(rows) for rows in resume["batches_a"][:AT])
    assert before // BATCH != AT * 2  # the checkpoint is off the accumulation grid
    assert resume["problems"] == []
    assert resume["ok"] and resume["bitwise"] and resume["batches_equal"] and resume["lr_equal"]


def test_bad_resume_options_are_one_line(tiny: TinyModels, run_cli, tmp_path: Path) -> None:
    base = ["smoke", "--base", tiny.base, "--data", tiny.data, "--text", "messages",
            "--seq-len", SEQ_LEN, "--steps", 3, "--device", "cpu"]  # fmt: skip
    assert_one_line_error(run_cli(*base, "--resume-at", 2), "--resume-at", "--trainer hf")
    args_file = tmp_path / "args.yaml"
    args_file.write_text("learning_rate: 0.001\n")
    assert_one_line_error(
        run_cli(*base, "--trainer-args", args_file), "--trainer-args is for the resume check"
    )
    assert_one_line_error(run_cli(*base, "--trainer", "hf"), "--resume-at K")
    assert_one_line_error(
        run_cli(*base, "--trainer", "hf", "--resume-at", 3), "--resume-at 3: must be below --steps"
    )
    typo = tmp_path / "typo.yaml"
    typo.write_text("lerning_rate: 0.001\nwarmup_ratio: 0.1\n")
    assert_one_line_error(
        run_cli(*base, "--trainer", "hf", "--resume-at", 2, "--trainer-args", typo),
        str(typo), "'lerning_rate' (did you mean 'learning_rate'?)", "'warmup_ratio'",
    )  # fmt: skip
    refused = tmp_path / "refused.json"
    refused.write_text(json.dumps({"lr_scheduler_type": "sometimes"}))
    assert_one_line_error(
        run_cli(*base, "--trainer", "hf", "--resume-at", 2, "--trainer-args", refused),
        f"{refused}: transformers' TrainingArguments refuses these fields",
    )
    distributed = tmp_path / "ds.yaml"
    distributed.write_text("deepspeed: ds_config.json\n")
    assert_one_line_error(
        run_cli(*base, "--trainer", "hf", "--resume-at", 2, "--trainer-args", distributed),
        "deepspeed is set",
    )
    not_a_mapping = tmp_path / "list.yaml"
    not_a_mapping.write_text("- learning_rate\n")
    assert_one_line_error(
        run_cli(*base, "--trainer", "hf", "--resume-at", 2, "--trainer-args", not_a_mapping),
        "expected a mapping of TrainingArguments fields",
    )
