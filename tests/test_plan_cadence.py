"""Preemptible mode's cadence worked by hand, and the impossible figures ``plan`` refuses:
the smoke report's (issue 32, M1) and the user's own (issue 32's low findings on plan)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_line_error

from evalkit.errors import ParameterError
from evalkit.plan import TimeRequest, plan
from evalkit.plan.cadence import largest_within, plan_cadence
from evalkit.records._plan_time import MeasuredRates
from evalkit.records._run import DeviceInfo
from evalkit.records._smoke import (
    MemoryMeasure,
    ReloadCheck,
    SmokeData,
    SmokeReport,
    SmokeSettings,
    Throughput,
)

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"
CAMPAIGN = [
    *("--train-tokens", "1800000", "--epochs", "2", "--seq-len", "512", "--batch-size", "2"),
    *("--eval-tokens", "100", "--eval-examples", "120", "--eval-new-tokens", "60"),
    *("--runs", "3", "--window", "1d", "--recovery", "0.25", "--price-per-hour", "2"),
]


def _rates(**changes: Any) -> MeasuredRates:
    values: dict[str, Any] = {
        "path": "smoke.json", "sha256": "0" * 64, "device": "x86_64", "device_type": "cpu",
        "gpu_class": None, "train_tokens_per_second": 1000.0, "eval_tokens_per_second": 4.0,
        "save_seconds": 0.5, "reload_seconds": 72.0, "settings_differ": [],
        "saved_bytes": 1_000_000,
    }  # fmt: skip
    return MeasuredRates(**{**values, **changes})


def test_the_cadence_by_hand_scaled_from_the_adapters_save() -> None:
    """A step: 2 x 512 = 1,024 tokens at 1,000 tokens/s = 1.024 s. The adapter's 1,000,000
    bytes saved in 0.5 s; the plan's checkpoint of 4,000,000 bytes: 2.0 s. Every 100 steps:
    at most 102.4 + 2 = 104.4 s lost (1.74 min), saving 2 / 104.4 of the time. Within 10
    minutes: 583 x 1.024 + 2 = 598.992 s <= 600 < 600.016 = 584 x 1.024 + 2. A run of
    3,600,000 tokens: ceil(3,515.625) = 3,516 steps, 35 checkpoints, 70 s = 0.019444 h."""
    cadence = plan_cadence(_rates(), step_tokens=1024, run_tokens=3_600_000,
                           plan_checkpoint_bytes=4_000_000, save_every=100,
                           max_lost_minutes=10)  # fmt: skip
    assert (cadence.step_seconds, cadence.save_seconds) == (1.024, 2.0)
    assert cadence.checkpoint_bytes == 4_000_000
    assert cadence.checkpoint_bytes_from == "disk.checkpoint_gb"
    assert cadence.lost_minutes == 1.74
    assert cadence.saving_share == 0.0191571  # 2 / 104.4 = 0.019157088…, six figures
    assert cadence.save_every_for_max == 583
    assert (cadence.steps_per_run, cadence.saves_per_run) == (3516, 35)
    assert cadence.save_hours_per_run == 0.0194444
    assert cadence.save_every_given
    suggested = plan_cadence(_rates(), step_tokens=1024, run_tokens=3_600_000,
                             plan_checkpoint_bytes=4_000_000, save_every=None,
                             max_lost_minutes=10)  # fmt: skip
    assert suggested.save_every == 583 and not suggested.save_every_given
    assert suggested.lost_minutes == round(598.992 / 60, 6)


def test_a_measured_checkpoint_is_used_as_measured() -> None:
    """resume.checkpoint: 5,000,000 bytes in 3 s. Every 50 steps: 51.2 + 3 = 54.2 s."""
    rates = _rates(checkpoint_bytes=5_000_000, checkpoint_save_seconds=3.0)
    cadence = plan_cadence(rates, step_tokens=1024, run_tokens=1024 * 10, save_every=50,
                           plan_checkpoint_bytes=4_000_000, max_lost_minutes=1)  # fmt: skip
    assert (cadence.checkpoint_bytes, cadence.save_seconds) == (5_000_000, 3.0)
    assert cadence.checkpoint_bytes_from == "resume.checkpoint.bytes"
    assert cadence.lost_minutes == round(54.2 / 60, 6)
    assert cadence.save_every_for_max == 10  # (60 - 3) / 1.024 = 55.7, capped at 10 steps a run
    assert cadence.saves_per_run == 0


def test_a_measured_checkpoint_without_its_save_time_is_scaled() -> None:
    """resume.checkpoint.save_seconds is null when the straight run did not save: its 5,000,000
    bytes at the adapter's rate (1,000,000 bytes in 0.5 s) take 2.5 s."""
    rates = _rates(checkpoint_bytes=5_000_000)
    cadence = plan_cadence(rates, step_tokens=1024, run_tokens=1024 * 10, save_every=5,
                           plan_checkpoint_bytes=4_000_000, max_lost_minutes=1)  # fmt: skip
    assert (cadence.checkpoint_bytes, cadence.save_seconds) == (5_000_000, 2.5)
    assert cadence.checkpoint_bytes_from == "resume.checkpoint.bytes"
    assert "smoke's checkpoint" in cadence.save_seconds_from


def test_no_cadence_keeps_a_loss_shorter_than_one_step_and_a_save() -> None:
    assert largest_within(30.0, 40.0, 60.0) is None
    assert largest_within(10.0, 40.0, 60.0) == 2  # 2 x 10 + 40 = 60: exactly within
    assert largest_within(0.25, 0.5, 1.5) == 4  # 4 x 0.25 + 0.5 = 1.5, exact in binary
    # The floor of (budget - save) / step is checked again as S x step + save <= budget: in
    # floats 3 x 0.1 + 0.3 is 0.6000000000000001, over 0.6, so 2 steps, not 3.
    assert largest_within(0.1, 0.3, 0.6) == 2


def _smoke(
    path: Path,
    config: Path,
    *,
    throughput: dict[str, Any] | None = None,
    verdict: str = "pass",
    resume: Any = None,
    saved_bytes: int = 21_655,
) -> Path:
    """A smoke report of ``config`` (what `evalkit smoke --json` writes), with changes."""
    device = DeviceInfo(type="cpu", name="x86_64", cuda=None)
    rates = Throughput(
        train_tokens_per_second=1000.0, train_tokens=2048, train_seconds=2.048,
        eval_tokens_per_second=4.0, eval_new_tokens=32, eval_seconds=8.0, save_seconds=0.5,
        reload_seconds=72.0, device=device, device_memory_gb=None,
    )  # fmt: skip
    reload = ReloadCheck(
        artifact="adapter", saved_bytes=saved_bytes, positions=4, max_logit_diff=0.0,
        tolerance=1e-6, training_effect=0.01, ok=True,
    )  # fmt: skip
    report = SmokeReport(
        format_version=1, evalkit_version="0", base=str(config), tokenizer=str(config),
        data=SmokeData(path="train.jsonl", sha256="0" * 64, rows=10, text_columns=["messages"],
                       loss="assistant", skipped_rows=0),
        settings=SmokeSettings(method="lora", r=8, targets=["q_proj", "v_proj"], seq_len=512,
                               batch=2, lr=1e-4, grad_checkpointing=False, dtype="float32",
                               max_new_tokens=16, seed=0),
        plan=plan(config, seq_len=512, batch_size=2), device=device,
        memory=MemoryMeasure(kind="process_rss", comparable=False, note="cpu"),
        measured_peak_gb=0.6, phases={}, steps=3, losses=[1.0, 1.0, 1.0], batches=[[0, 1]] * 3,
        targets=[5, 5, 5], trainable_params=1, generation=None, reload=reload,
        throughput=rates, problems=[] if verdict == "pass" else ["a loss is not finite"],
        verdict=verdict,
    )  # fmt: skip
    text = report.model_dump_json(indent=2)
    document = json.loads(text)
    for key, value in (throughput or {}).items():
        document["throughput"][key] = value
    if resume is not None:
        document["resume"] = resume
    # json.dumps writes inf as Infinity; the finding's report wrote the literal 1e999.
    path.write_text(json.dumps(document, indent=2).replace("Infinity", "1e999"))
    return path


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"train_tokens_per_second": -0.1}, "throughput.train_tokens_per_second"),
        ({"train_tokens_per_second": 0.0}, "throughput.train_tokens_per_second"),
        ({"train_tokens_per_second": float("inf")}, "throughput.train_tokens_per_second"),
        ({"eval_tokens_per_second": 0.0}, "throughput.eval_tokens_per_second"),
        ({"eval_tokens_per_second": float("inf")}, "throughput.eval_tokens_per_second"),
        ({"save_seconds": -554.4}, "throughput.save_seconds"),
        ({"reload_seconds": -1.0}, "throughput.reload_seconds"),
    ],
)
def test_impossible_smoke_figures_are_refused(run_cli, tmp_path, changes, field) -> None:
    """Today: -0.1 gives '-0.1 h a run ... FITS', a negative save a negative cost, 0 a
    ZeroDivisionError (exit 3), 1e999 '0.00 h' and a JSON null."""
    smoke = _smoke(tmp_path / "smoke.json", LLAMA7, throughput=changes)
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke)
    assert_one_line_error(result, "--measured", field)


def test_a_failed_smoke_report_is_refused(run_cli, tmp_path) -> None:
    smoke = _smoke(tmp_path / "smoke.json", LLAMA7, verdict="fail")
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke)
    assert_one_line_error(result, "--measured", "verdict is 'fail'", "a loss is not finite")


def test_the_library_refuses_them_too(tmp_path) -> None:
    smoke = _smoke(tmp_path / "smoke.json", LLAMA7, throughput={"train_tokens_per_second": 0})
    request = TimeRequest(train_tokens=1_800_000, eval_examples=120, eval_new_tokens=60, runs=3,
                          window="1d", measured=smoke)  # fmt: skip
    with pytest.raises(ParameterError, match=r"throughput\.train_tokens_per_second"):
        plan(LLAMA7, seq_len=512, batch_size=2, eval_tokens=100, time=request)


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--window", "9" * 400 + "d"], ["--window", "ten years"]),
        (["--price-per-hour", "1e308"], ["--price-per-hour", "at most"]),
        (["--gpu", "X:80:1e-320"], ["--gpu", "TFLOPS must be from"]),
        (["--gpu", "X:1e308:100"], ["--gpu", "MEMORY_GB must be from"]),
        (["--gpu", "X:80:100:1e-300"], ["--gpu", "BANDWIDTH_GBPS must be from"]),
        (["--runs", "10000000"], ["--runs", "up to"]),
        (["--epochs", "1e300"], ["--epochs"]),
        (["--train-tokens", "1" + "0" * 30], ["--train-tokens", "up to"]),
    ],
)
def test_user_figures_are_bounded_before_any_work(run_cli, arguments, fragments) -> None:
    """Issue 32's low findings: a window of 400 nines was infinite (window_hours null), a card
    of 1e-320 TFLOP/s infinite hours, a price of 1e308 accepted."""
    base = dict(zip(CAMPAIGN[::2], CAMPAIGN[1::2], strict=True))
    for flag, value in zip(arguments[::2], arguments[1::2], strict=True):
        base[flag] = value
    line = [item for pair in base.items() for item in pair]
    assert_one_line_error(run_cli("plan", "--config", LLAMA7, *line), *fragments)


def test_the_options_object_refuses_them_when_made() -> None:
    with pytest.raises(ParameterError, match="window"):
        TimeRequest(window="9" * 400 + "d")
    with pytest.raises(ParameterError, match="price_per_hour"):
        TimeRequest(price_per_hour=1e308)
    with pytest.raises(ParameterError, match="gpu"):
        TimeRequest(gpu=("X:80:1e-320",))
    with pytest.raises(ParameterError, match="epochs"):
        TimeRequest(epochs=float("nan"))
    with pytest.raises(ParameterError, match="train_tokens"):
        TimeRequest(train_tokens=-5)


def test_the_cadence_on_the_command_line(run_cli, tmp_path) -> None:
    """smoke's 21,655-byte adapter saved in 0.5 s; the plan's checkpoint of Llama-2-7B r 8 on
    q, v: 4,194,304 x 12 = 50,331,648 bytes -> 0.5 x 50,331,648 / 21,655 = 1,162.1 s a save."""
    smoke = _smoke(tmp_path / "smoke.json", LLAMA7)
    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke,
                     "--preemptible", "--save-every", "100", "--json", target)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    cadence = json.loads(target.read_text())["time"]["cadence"]
    assert cadence["checkpoint_bytes"] == 4_194_304 * 12
    assert cadence["save_seconds"] == pytest.approx(0.5 * 4_194_304 * 12 / 21_655, rel=1e-5)
    assert cadence["save_every_for_max"] is None  # one save alone takes 19 minutes
    assert "preemptible: a checkpoint every 100 steps" in result.stdout
    assert "no --save-every keeps" in " ".join(result.stdout.split())


def _resume(checkpoint: dict) -> dict:
    """A whole ``resume`` block of a smoke report (a ResumeCheck) around ``checkpoint``.

    The fields this test is not about get a plain value of their type, taken
    from the model's own schema, so the block stays whole as the model grows.
    """
    from evalkit.records._resume import ResumeCheck

    schema = ResumeCheck.model_json_schema()

    def plain(field: dict) -> object:
        kinds = [field.get("type")] + [option.get("type") for option in field.get("anyOf", [])]
        if "null" in kinds:
            return None
        return {"array": [], "boolean": True, "integer": 1, "number": 1.0, "string": "",
                "object": {}}.get(kinds[0], {})  # fmt: skip

    block = {name: plain(field) for name, field in schema["properties"].items()}
    args = {"file": None, "sha256": None, "given": {}, "set_by_smoke": {}, "overridden": []}
    checkpoint = {"resumable": True, "problems": []} | checkpoint
    return block | {"ok": True, "trainer_args": args, "checkpoint": checkpoint}


def test_a_measured_trainer_checkpoint_is_read_from_resume(run_cli, tmp_path) -> None:
    """smoke --resume-at adds resume.checkpoint: {files, bytes, save_seconds, ...}."""
    resume = _resume({"files": {"optimizer.pt": 60_000_000}, "bytes": 60_000_000,
                      "save_seconds": 1.5})  # fmt: skip
    smoke = _smoke(tmp_path / "smoke.json", LLAMA7, resume=resume)
    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke,
                     "--preemptible", "--json", target)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    cadence = json.loads(target.read_text())["time"]["cadence"]
    assert (cadence["checkpoint_bytes"], cadence["save_seconds"]) == (60_000_000, 1.5)
    # A step of 1,024 tokens at 1,000/s; within 10 minutes: (600 - 1.5) / 1.024 = 584.47.
    assert cadence["save_every_for_max"] == 584 and cadence["save_every"] == 584
    checkpoint = {"files": {}, "bytes": 43_310, "save_seconds": None}  # it did not save
    unsaved = _smoke(tmp_path / "unsaved.json", LLAMA7, resume=_resume(checkpoint))
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", unsaved,
                     "--preemptible", "--json", tmp_path / "unsaved-plan.json")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    cadence = json.loads((tmp_path / "unsaved-plan.json").read_text())["time"]["cadence"]
    assert cadence["checkpoint_bytes"] == 43_310  # smoke's, its save scaled from the adapter's
    assert cadence["save_seconds"] == pytest.approx(0.5 * 43_310 / 21_655)
    bad = _smoke(tmp_path / "bad.json", LLAMA7,
                 resume=_resume({"files": {}, "bytes": 0, "save_seconds": 1.0}))  # fmt: skip
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", bad, "--preemptible")
    assert_one_line_error(result, "--measured", "resume.checkpoint.bytes")
    bad = _smoke(tmp_path / "bad.json", LLAMA7,
                 resume=_resume({"files": {}, "bytes": 10, "save_seconds": -1}))  # fmt: skip
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", bad, "--preemptible")
    assert_one_line_error(result, "--measured", "resume.checkpoint.save_seconds")


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--preemptible"], ["--preemptible", "--measured"]),
        (["--save-every", "10"], ["--save-every", "--preemptible"]),
        (["--max-lost-minutes", "5"], ["--max-lost-minutes", "--preemptible"]),
        (["--preemptible", "--save-every", "0"], ["--save-every", "positive"]),
        (["--preemptible", "--max-lost-minutes", "-1"], ["--max-lost-minutes"]),
    ],
)
def test_cadence_options_that_do_not_apply(run_cli, arguments, fragments) -> None:
    assert_one_line_error(run_cli("plan", "--config", LLAMA7, *CAMPAIGN, *arguments), *fragments)
