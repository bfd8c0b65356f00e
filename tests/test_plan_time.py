"""``evalkit plan``'s hours: bounds worked by hand, the tokens of a report, the GPU table,
the campaign at given rates, and every bad input (exit 2, one line)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import assert_one_line_error

from evalkit.plan import TimeRequest, plan
from evalkit.plan.campaign import measured_campaign, parse_window
from evalkit.plan.config import parse_config
from evalkit.plan.gpus import SHIPPED, GpuSpec, for_device, parse_gpu
from evalkit.plan.options import resolve_options
from evalkit.plan.timing import eval_bound, generation_costs
from evalkit.plan.work import EvalWork, _tier_floor, from_report
from evalkit.records._plan_time import MeasuredRates
from evalkit.records._run import DeviceInfo
from evalkit.records._smoke import (
    MemoryMeasure,
    SmokeData,
    SmokeReport,
    SmokeSettings,
    Throughput,
)
from evalkit.tokens.stats import quantiles

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"
SCHEMA = ROOT / "docs" / "schemas" / "plan-result.schema.json"
# One FLOP a second and one byte a second: a bound in seconds is the count itself.
UNIT = GpuSpec("unit", 1, 1e-12, 1e-9, "a test card")


def _rates(**changes: Any) -> MeasuredRates:
    values: dict[str, Any] = {
        "path": "smoke.json",
        "sha256": "0" * 64,
        "device": "x86_64",
        "device_type": "cpu",
        "gpu_class": None,
        "train_tokens_per_second": 1000.0,
        "eval_tokens_per_second": 4.0,
        "save_seconds": 36.0,
        "reload_seconds": 72.0,
        "settings_differ": [],
    }
    return MeasuredRates(**{**values, **changes})


def test_the_campaign_by_hand() -> None:
    """1.8M tokens x 2 epochs at 1,000/s = 1 h; 120 x 60 new tokens at 4/s = 0.5 h;
    3 runs x 1.5 h + baseline 0.5 h + export 36 s (0.01 h) + reload 72 s (0.02 h) = 5.03 h;
    a day less 25% recovery (6 h) leaves 12.97 h; at 2.00 an hour, 10.06 (the day: 48.00)."""
    campaign = measured_campaign(
        _rates(),
        train_tokens=1_800_000 * 2,
        eval_tokens=120 * 60,
        runs=3,
        window_hours=24,
        recovery=0.25,
        price=2.0,
    )
    assert campaign.train_hours_per_run == 1.0
    assert campaign.eval_hours_per_run == campaign.baseline_eval_hours == 0.5
    assert (campaign.export_hours, campaign.reload_check_hours) == (0.01, 0.02)
    assert campaign.total_hours == pytest.approx(5.03, abs=1e-12)
    assert campaign.recovery_hours == 6.0
    assert campaign.margin_hours == pytest.approx(12.97, abs=1e-12)
    assert campaign.fits
    assert (campaign.cost, campaign.window_cost) == (10.06, 48.0)


def test_a_campaign_that_overruns_says_so() -> None:
    campaign = measured_campaign(
        _rates(), train_tokens=36_000_000, eval_tokens=0, runs=2, window_hours=24,
        recovery=0.2, price=None,
    )  # fmt: skip
    # 2 x 10 h + 0.03 h = 20.03 h > 24 - 4.8 = 19.2 h usable.
    assert campaign.total_hours == pytest.approx(20.03)
    assert not campaign.fits and campaign.margin_hours == pytest.approx(-0.83)
    assert campaign.cost is None


@pytest.mark.parametrize(("text", "hours"), [("7d", 168), ("36h", 36), ("90m", 1.5), ("1.5d", 36)])
def test_window_durations(text: str, hours: float) -> None:
    assert parse_window(text) == hours


def _tiny_shape():
    values = {"hidden_size": 4, "intermediate_size": 4, "num_hidden_layers": 1,
              "num_attention_heads": 1, "num_key_value_heads": 1, "vocab_size": 8,
              "model_type": "llama", "tie_word_embeddings": False}  # fmt: skip
    return parse_config(values, Path("tiny.json"))


def test_the_eval_bound_by_hand() -> None:
    """One block of seven 4 x 4 linears (112 weights), a 8 x 4 head (32), bf16, full.

    Weights read a step: 188 params x 2 bytes less the 64-byte embedding = 312;
    a cached token: 2 x 4 x 2 = 16 bytes. Prompt 2, 3 new tokens, 3 sequences 2 at once.
    Prefill a sequence: 2·2·112 + 4·4·(1+2) + 2·32 = 560 FLOPs. A step at context c:
    2·(112+32) + 16·c FLOPs a sequence, 312 + 16·(c−1) bytes a sequence's cache.
    Batch of 2: max(1120, 312) + max(672, 376) + max(704, 408) = 2,496 s.
    Batch of 1: max(560, 312) + max(336, 344) + max(352, 360) = 1,264 s, both steps by bytes.
    """
    shape = _tiny_shape()
    options = resolve_options(shape, method="full", seq_len=4)
    costs = generation_costs(shape, options, 2)
    assert (costs.prefill_flops, costs.step_flops, costs.attention_per_key) == (560, 288, 16)
    assert (costs.weight_bytes, costs.kv_bytes_per_token) == (312, 16)
    bound = eval_bound(shape, options, EvalWork(3, 2, 3, 2), UNIT)
    assert bound.hours * 3600 == pytest.approx(2496 + 1264)
    assert (bound.decode_steps, bound.steps_bound_by_bandwidth) == (4, 2)
    no_bandwidth = GpuSpec("no-bw", 1, 1e-12, None, "test")
    flops_only = eval_bound(shape, options, EvalWork(3, 2, 3, 2), no_bandwidth)
    assert flops_only.hours * 3600 == pytest.approx(1120 + 672 + 704 + 560 + 336 + 352)


def test_the_train_bound_is_tokens_times_flops_over_the_peak() -> None:
    result = plan(LLAMA7, time=TimeRequest(train_tokens=10_000_000, epochs=3), seq_len=1024)
    time = result.time
    assert time is not None and time.train_tokens == 10_000_000 and time.epochs == 3
    assert time.flops_per_train_token == pytest.approx(
        sum(t.flops_per_token for t in time.flop_terms)
    )
    for gpu in SHIPPED:
        expected = 3e7 * time.flops_per_train_token / (gpu.peak_tflops * 1e12) / 3600
        assert time.gpus[gpu.name].train_hours_lower_bound == pytest.approx(expected, rel=1e-5)


def test_sharding_divides_the_bound() -> None:
    one = plan(LLAMA7, time=TimeRequest(train_tokens=10**7), method="full")
    four = plan(LLAMA7, time=TimeRequest(train_tokens=10**7), method="full", gpus=4)
    assert one.time and four.time
    h100 = "H100 SXM 80GB"
    assert four.time.gpus[h100].train_hours_lower_bound == pytest.approx(
        one.time.gpus[h100].train_hours_lower_bound / 4, rel=1e-5
    )


@pytest.mark.parametrize("seed", range(20))
def test_the_quantile_floor_never_exceeds_the_true_total(seed: int) -> None:
    """numpy's percentiles of random lengths, as evalkit tokens reports them."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 3000))
    lengths = rng.integers(1, 4000, size=n) if seed % 2 else rng.lognormal(5, 1, n).astype(int) + 1
    figures = quantiles(lengths).model_dump()
    floor = _tier_floor(n, figures)
    assert floor <= int(lengths.sum())
    assert floor >= 0.3 * int(lengths.sum()) or n < 4


def _tokens_report(tmp_path: Path, split: dict[str, Any], name: str = "train") -> Path:
    report = {"format_version": 1, "tokenizer": {}, "options": {}, "checks": [],
              "splits": {name: split}}  # fmt: skip
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps(report))
    return path


SPLIT = {"n": 4, "tokens": {"total": {"p50": 10.0, "p95": 20.0, "p99": 20.0, "max": 20}},
         "supervised_ratio": 0.25, "truncation": None}  # fmt: skip


def test_tokens_from_a_report_with_supervised_tokens(tmp_path: Path) -> None:
    """supervised 1,000 at a ratio printed as 0.25: the total is at least 1000 / 0.2500005."""
    path = _tokens_report(tmp_path, {**SPLIT, "supervised_tokens": 1000})
    tokens = from_report(path)
    assert tokens.tokens == math.ceil(1000 / 0.2500005) == 4000
    assert tokens.supervised == 1000 and not tokens.exact
    assert "supervised_tokens 1,000 / supervised_ratio 0.25" in tokens.how


def test_tokens_from_a_report_with_the_total(tmp_path: Path) -> None:
    tokens = from_report(_tokens_report(tmp_path, {**SPLIT, "total_tokens": 3999}))
    assert (tokens.tokens, tokens.exact, tokens.supervised) == (3999, True, 999)


def test_tokens_from_quantiles_alone_are_a_floor(tmp_path: Path) -> None:
    """4 examples: p50 at position 1.5 -> positions 2, 3 >= 10; p95, p99 -> position 3
    >= 20, and the maximum 20 is one of them: at least 0 + 0 + 10 + 20 = 30 tokens."""
    tokens = from_report(_tokens_report(tmp_path, SPLIT))
    assert tokens.tokens == 30 and not tokens.exact and tokens.how.startswith("at least")


def test_truncation_takes_off_what_it_can_cut(tmp_path: Path) -> None:
    truncation = {"max_seq_length": 12, "over_limit": 1, "answer_cut_partly": 0,
                  "answer_cut_fully": 0, "eos_lost": 0}  # fmt: skip
    path = _tokens_report(tmp_path, {**SPLIT, "total_tokens": 60, "truncation": truncation})
    assert from_report(path).tokens == 60 - 1 * (20 - 12)


def test_the_training_split_is_named_when_there_are_several(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"format_version": 1, "tokenizer": {}, "options": {},
                                "checks": [], "splits": {"a": SPLIT, "b": SPLIT}}))  # fmt: skip
    with pytest.raises(Exception, match="name the training split with tokens_split"):
        from_report(path)
    assert from_report(path, "b").source.endswith("split 'b'")


@pytest.mark.parametrize(
    ("device", "expected"),
    [
        ("NVIDIA A100-SXM4-80GB", "A100 SXM 80GB"),
        ("NVIDIA A100-SXM4-40GB", "A100 SXM 40GB"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM 80GB"),
        ("NVIDIA H100 PCIe", None),
        ("NVIDIA H200", "H200 SXM 141GB"),
        ("NVIDIA H200 NVL", None),
        ("NVIDIA GeForce RTX 4090", "RTX 4090"),
        ("NVIDIA L40S", "L40S"),
        ("AMD Instinct MI300X", "MI300X"),
        ("NVIDIA A100 80GB PCIe", None),
    ],
)
def test_a_measured_device_is_a_class_of_the_table_or_none(device: str, expected) -> None:
    found = for_device(device)
    assert (found.name if found else None) == expected


def test_every_shipped_gpu_names_its_source() -> None:
    for gpu in SHIPPED:
        assert gpu.bandwidth_gbps and gpu.peak_tflops > 0 and gpu.memory_gb > 0
        assert "http" in gpu.source or "ROCm/ROCm" in gpu.source
    assert {gpu.memory_gb for gpu in SHIPPED} >= {24, 48, 80, 141, 192}


def test_a_gpu_given_on_the_command_line() -> None:
    gpu = parse_gpu("RTX 6000 Ada:48:364.25:960")
    assert (gpu.name, gpu.memory_gb, gpu.peak_tflops, gpu.bandwidth_gbps) == (
        "RTX 6000 Ada", 48, 364.25, 960)  # fmt: skip
    assert parse_gpu("T4:16:65").bandwidth_gbps is None
    assert parse_gpu("h100 sxm 80gb").name == "H100 SXM 80GB"


def _smoke_report(path: Path, config: Path, throughput: Throughput | None = None) -> Path:
    """A smoke report of ``config`` at given rates (what `evalkit smoke --json` writes)."""
    device = DeviceInfo(type="cpu", name="x86_64", cuda=None)
    throughput = throughput or Throughput(
        train_tokens_per_second=1000.0, train_tokens=2048, train_seconds=2.048,
        eval_tokens_per_second=4.0, eval_new_tokens=32, eval_seconds=8.0, save_seconds=36.0,
        reload_seconds=72.0, device=device, device_memory_gb=None,
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
        targets=[5, 5, 5], trainable_params=1, generation=None, reload=None,
        throughput=throughput, problems=[], verdict="pass",
    )  # fmt: skip
    path.write_text(report.model_dump_json(indent=2))
    return path


CAMPAIGN = [
    *("--train-tokens", "1800000", "--epochs", "2", "--seq-len", "512", "--batch-size", "2"),
    *("--eval-tokens", "100", "--eval-examples", "120", "--eval-new-tokens", "60"),
    *("--runs", "3", "--window", "1d", "--recovery", "0.25", "--price-per-hour", "2"),
]


def test_the_campaign_on_the_command_line(run_cli, tmp_path: Path) -> None:
    import jsonschema

    smoke = _smoke_report(tmp_path / "smoke.json", LLAMA7)
    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke, "--json", target)
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "margin 12.97 h: FITS" in out and "baseline 0.50 h" in out
    assert "2.00/h x 5.03 h = 10.06 (the whole window: 48.00)" in out
    assert "x86_64 (cpu), which is none of the table's GPU classes" in " ".join(out.split())
    document = json.loads(target.read_text())
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    time = document["time"]
    for key in ("train_tokens", "epochs", "flops_per_train_token", "gpus", "campaign"):
        assert key in time
    for gpu in time["gpus"].values():
        for key in ("memory_gb", "peak_tflops", "bandwidth_gbps", "train_hours_lower_bound",
                    "eval_hours_lower_bound"):  # fmt: skip
            assert key in gpu
    campaign = time["campaign"]
    assert {"runs", "train_hours_per_run", "eval_hours_per_run", "total_hours", "window_hours",
            "recovery", "margin_hours", "fits", "cost"} <= set(campaign)  # fmt: skip
    assert campaign["total_hours"] == pytest.approx(5.03) and campaign["fits"]


def test_bounds_alone_say_at_least(run_cli) -> None:
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN)
    assert result.exit_code == 0, result.stderr
    assert "from the bounds alone" in result.stdout
    assert "at least" in result.stdout and "FITS" not in result.stdout


def test_a_measured_gpu_is_named_with_its_bound(run_cli, tmp_path: Path) -> None:
    device = DeviceInfo(type="cuda", name="NVIDIA A100-SXM4-80GB", cuda="12.4")
    rates = Throughput(
        train_tokens_per_second=3000.0, train_tokens=8192, train_seconds=2.73,
        eval_tokens_per_second=40.0, eval_new_tokens=32, eval_seconds=0.8, save_seconds=1.0,
        reload_seconds=20.0, device=device, device_memory_gb=85.1,
    )  # fmt: skip
    smoke = _smoke_report(tmp_path / "smoke.json", LLAMA7, rates)
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke)
    assert result.exit_code == 0, result.stderr
    text = " ".join(result.stdout.split())
    assert "NVIDIA A100-SXM4-80GB = A100 SXM 80GB of the table" in text
    assert "A100 SXM 80GB: training at least" in text and "of the peak" in text


BAD = [
    (["--train-tokens", "0"], ["--train-tokens", "positive"]),
    (["--train-tokens", "-5"], ["--train-tokens", "positive"]),
    (["--train-tokens", "10", "--gpu", "B200"], ["'B200'", "RTX 4090", "MI300X"]),
    (["--train-tokens", "10", "--gpu", "X:48"], ["NAME:MEMORY_GB:TFLOPS"]),
    (["--train-tokens", "10", "--gpu", "X:48:-3"], ["TFLOPS must be a positive number"]),
    (["--epochs", "2"], ["--train-tokens N or --tokens-report FILE"]),
    (["--train-tokens", "10", "--epochs", "0"], ["--epochs"]),
    (["--train-tokens", "10", "--eval-examples", "5"], ["--eval-new-tokens"]),
    (["--train-tokens", "10", "--eval-examples", "5", "--eval-new-tokens", "2048"],
     ["--eval-tokens 2048"]),
    (["--train-tokens", "10", "--runs", "2"], ["--runs K and --window"]),
    (["--train-tokens", "10", "--runs", "2", "--window", "7d"], ["--eval-examples"]),
    (["--train-tokens", "10", "--eval-examples", "5", "--eval-new-tokens", "5", "--runs", "0",
      "--window", "7d"], ["--runs"]),
    (["--train-tokens", "10", "--eval-examples", "5", "--eval-new-tokens", "5", "--runs", "2",
      "--window", "7 days"], ["--window", "7d"]),
    (["--train-tokens", "10", "--eval-examples", "5", "--eval-new-tokens", "5", "--runs", "2",
      "--window", "7d", "--recovery", "1.5"], ["--recovery"]),
    (["--train-tokens", "10000000000", "--eval-examples", "5", "--eval-new-tokens", "5",
      "--runs", "2", "--window", "1h"], ["--window", "shorter than one run"]),
]  # fmt: skip


@pytest.mark.parametrize(("arguments", "fragments"), BAD)
def test_bad_time_options_are_one_line_errors(run_cli, arguments, fragments) -> None:
    assert_one_line_error(run_cli("plan", "--config", LLAMA7, *arguments), *fragments)


def test_a_measured_file_that_is_not_a_smoke_report(run_cli, tmp_path: Path) -> None:
    not_smoke = tmp_path / "plan.json"
    assert run_cli("plan", "--config", LLAMA7, "--json", not_smoke, "--quiet").exit_code == 0
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", not_smoke)
    assert_one_line_error(result, "plan.json", "not a report of evalkit smoke")
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", garbage)
    assert_one_line_error(result, "garbage.json")
    broken = json.loads(_smoke_report(tmp_path / "s.json", LLAMA7).read_text())
    broken["throughput"]["train_tokens_per_second"] = "fast"
    (tmp_path / "s.json").write_text(json.dumps(broken))
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", tmp_path / "s.json")
    assert_one_line_error(result, "throughput.train_tokens_per_second")


def test_a_measured_window_shorter_than_one_run(run_cli, tmp_path: Path) -> None:
    smoke = _smoke_report(tmp_path / "smoke.json", LLAMA7)
    arguments = [*CAMPAIGN[:-6], "--window", "60m", "--measured", smoke]
    result = run_cli("plan", "--config", LLAMA7, *arguments)
    assert_one_line_error(result, "--window 1 h is shorter than one run (1.5 h")


def test_a_smoke_report_of_another_model(run_cli, tmp_path: Path) -> None:
    smoke = _smoke_report(tmp_path / "smoke.json", ROOT / "examples" / "plan" / "llama-2-13b")
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", smoke)
    assert_one_line_error(result, "a different model config", "run evalkit smoke on this model")


def test_a_smoke_report_without_throughput(run_cli, tmp_path: Path) -> None:
    path = _smoke_report(tmp_path / "smoke.json", LLAMA7)
    document = json.loads(path.read_text())
    del document["throughput"]
    path.write_text(json.dumps(document))
    result = run_cli("plan", "--config", LLAMA7, *CAMPAIGN, "--measured", path)
    assert_one_line_error(result, "has no throughput", "run evalkit smoke again")


def test_the_smokes_settings_are_named_when_they_differ(run_cli, tmp_path: Path) -> None:
    smoke = _smoke_report(tmp_path / "smoke.json", LLAMA7)
    arguments = [*CAMPAIGN, "--measured", smoke]
    arguments[arguments.index("--seq-len") + 1] = "1024"
    arguments[arguments.index("--eval-tokens") + 1] = "1024"
    result = run_cli("plan", "--config", LLAMA7, *arguments)
    assert result.exit_code == 0, result.stderr
    assert "seq_len 512 (plan: 1024)" in " ".join(result.stdout.split())


def test_a_tokens_report_on_the_command_line(run_cli, tmp_path: Path) -> None:
    path = _tokens_report(tmp_path, {**SPLIT, "supervised_tokens": 1000})
    result = run_cli("plan", "--config", LLAMA7, "--tokens-report", path)
    assert result.exit_code == 0, result.stderr
    assert "at least 4,000 tokens an epoch (1,000 supervised)" in result.stdout
    not_a_report = tmp_path / "other.json"
    not_a_report.write_text("{}")
    assert_one_line_error(
        run_cli("plan", "--config", LLAMA7, "--tokens-report", not_a_report),
        "other.json", "not a report of evalkit tokens",
    )  # fmt: skip


def test_gpus_named_narrow_the_table_and_a_new_one_without_bandwidth(run_cli, tmp_path) -> None:
    target = tmp_path / "plan.json"
    arguments = ["--train-tokens", "1000000", "--eval-examples", "10", "--eval-new-tokens", "8",
                 "--gpu", "RTX 4090", "--gpu", "T4:16:65", "--json", target]  # fmt: skip
    result = run_cli("plan", "--config", LLAMA7, *arguments)
    assert result.exit_code == 0, result.stderr
    gpus = json.loads(target.read_text())["time"]["gpus"]
    assert list(gpus) == ["RTX 4090", "T4"]
    assert gpus["T4"]["bandwidth_gbps"] is None and gpus["T4"]["source"] == "given with --gpu"
    assert gpus["T4"]["decode_steps_bandwidth_bound"] is None
    assert gpus["RTX 4090"]["decode_steps_bandwidth_bound"] is not None
    assert "FLOPs only" in result.stdout
    assert "T4: no bandwidth given, so only FLOPs bound its decoding" in result.stdout
