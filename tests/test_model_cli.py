"""``evalkit generate`` on the command line: the summary, the score, every bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import ROOT, assert_one_line_error
from model_fixtures import TinyModels, conversations, write_jsonl

pytest.importorskip("torch")
pytest.importorskip("peft")

TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"


def _generate(tiny: TinyModels, out: Path, *extra: object) -> list[object]:
    return ["generate", "--base", tiny.base, "--adapter", tiny.adapter, "--data", tiny.data,
            "--id", "ticket_id", "--text", "messages", "--out", out, "--max-new-tokens", 4,
            "--device", "cpu", *extra]  # fmt: skip


def test_generate_prints_what_it_did_and_score_reads_it(run_cli, tiny, tmp_path: Path) -> None:
    out = tmp_path / "run"
    result = run_cli(*_generate(tiny, out))
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"generated 10 outputs for {tiny.data} -> {out}"
    assert lines[1] == f"model      {tiny.base} + adapter {tiny.adapter} (base+adapter)"
    assert "greedy, 2 batches of up to 8, left-padded, max 4 new tokens, on cpu" in lines[3]
    assert lines[4] == "stopped    0 at eos, 10 at max-new-tokens"
    assert result.stderr == ""  # no progress bar and no library chatter off a terminal
    scored = run_cli("score", "--contract", TRIAGE, "--gold", tiny.data,
                     "--pred", out / "predictions.jsonl", "--out", tmp_path / "score")  # fmt: skip
    assert scored.exit_code == 0, scored.stderr
    summary = json.loads((tmp_path / "score" / "summary.json").read_text())
    assert summary["overall"]["n"] == 10 and summary["overall"]["missing"] == 0
    assert summary["predictions"]["n"] == 10
    # Random weights write no JSON: every output is scored, and every one is wrong.
    assert summary["overall"]["format_valid"] == 0
    assert sum(error["count"] for error in summary["errors"].values()) == 10


def test_the_command_is_evalkit_generate_with_out(run_cli, tiny, tmp_path: Path) -> None:
    """One run path: ``evalkit generate`` writes what ``generate(..., out=)`` writes."""
    from evalkit.errors import OutputExists
    from evalkit.model.generate import generate

    assert run_cli(*_generate(tiny, tmp_path / "cli")).exit_code == 0
    options = {"id_column": "ticket_id", "text": ["messages"], "adapter": tiny.adapter,
               "max_new_tokens": 4, "device": "cpu"}  # fmt: skip
    made = generate(tiny.base, tiny.data, out=tmp_path / "library", **options)
    for name in ("predictions.jsonl", "tokens.parquet", "run.json"):
        cli, library = tmp_path / "cli" / name, tmp_path / "library" / name
        assert cli.read_bytes() == library.read_bytes(), name
    assert made.run.outputs.predictions_sha256  # the run.json written, hashes filled in
    with pytest.raises(OutputExists, match="exists already; pass force=True"):
        generate(tmp_path / "no-such-base", tiny.data, out=tmp_path / "library", **options)


def test_an_existing_out_needs_force(run_cli, tiny, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert_one_line_error(run_cli(*_generate(tiny, out)), "exists already", "--force")
    result = run_cli(*_generate(tiny, out, "--force"))
    assert_one_line_error(result, "has no run.json", "refusing")
    assert (out / "keep.txt").read_text() == "mine"


def test_a_base_folder_without_a_model(run_cli, tiny, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", empty))
    assert_one_line_error(result, str(empty), "holds no model (no config.json)")
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    shutil.copy(tiny.base / "config.json", no_weights)
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", no_weights))
    assert_one_line_error(result, str(no_weights), "no weights")
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", tiny.adapter))
    assert_one_line_error(result, "is an adapter folder", "--adapter")


def test_a_hub_id_is_refused(run_cli, tiny, tmp_path: Path) -> None:
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", "meta-llama/Llama-3.2-1B"))
    assert_one_line_error(result, "looks like a Hub id", "never downloads")


def test_an_adapter_of_another_base_is_one_line(run_cli, tiny, tmp_path: Path) -> None:
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", tiny.other_base))
    assert_one_line_error(result, str(tiny.adapter), f"does not fit the base {tiny.other_base}",
                          "trained on another model")  # fmt: skip
    assert "size mismatch" not in result.stderr and "torch.Size" not in result.stderr


def test_an_adapter_whose_modules_the_base_lacks(run_cli, tiny, tmp_path: Path) -> None:
    """PEFT drops such tensors with a warning; generate refuses instead."""
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", tiny.short_base))
    assert_one_line_error(result, "does not fit the base", "modules the base does not have",
                          "layers.1.")  # fmt: skip


def test_device_cuda_without_a_gpu(run_cli, tiny, tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = run_cli(*_generate(tiny, tmp_path / "o", "--device", "cuda"))
    assert_one_line_error(result, "--device cuda: no CUDA GPU is available", "--device cpu")


def test_conversations_without_a_chat_template(run_cli, tiny, tmp_path: Path) -> None:
    tokenizer = tmp_path / "tokenizer"
    tokenizer.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(tiny.base / name, tokenizer)
    result = run_cli(*_generate(tiny, tmp_path / "o", "--tokenizer", tokenizer))
    assert_one_line_error(result, str(tokenizer), "no chat template")


def test_bad_data(run_cli, tiny, tmp_path: Path) -> None:
    text = write_jsonl(tmp_path / "text.jsonl", [{"ticket_id": "a", "messages": "plain text"}])
    result = run_cli(*_generate(tiny, tmp_path / "o", "--data", text))
    assert_one_line_error(result, "holds plain text, not conversations")
    rows = conversations()
    twice = write_jsonl(tmp_path / "twice.jsonl", [rows[0], rows[1], rows[0]])
    assert_one_line_error(run_cli(*_generate(tiny, tmp_path / "o", "--data", twice)),
                          "id 'T01' occurs 2 times")  # fmt: skip
    broken = [*rows[:2], {**rows[2], "messages": [{"role": "user"}]}]
    bad = write_jsonl(tmp_path / "bad.jsonl", broken)
    assert_one_line_error(run_cli(*_generate(tiny, tmp_path / "o", "--data", bad)),
                          f"{bad}:3", "message 0")  # fmt: skip
    assert_one_line_error(run_cli(*_generate(tiny, tmp_path / "o", "--id", "nope")),
                          "no column 'nope'")  # fmt: skip


def test_a_prompt_longer_than_the_context(run_cli, tiny, tmp_path: Path) -> None:
    base = tmp_path / "base"
    shutil.copytree(tiny.base, base)
    config = json.loads((base / "config.json").read_text())
    config["max_position_embeddings"] = 24
    (base / "config.json").write_text(json.dumps(config))
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, "the prompt has", "max_position_embeddings")


def test_tokens_parquet_has_one_row_per_example(run_cli, tiny, tmp_path: Path) -> None:
    out = tmp_path / "run"
    assert run_cli(*_generate(tiny, out, "--quiet")).exit_code == 0
    tokens = pl.read_parquet(out / "tokens.parquet")
    assert tokens.columns == ["ticket_id", "batch", "batch_row", "prompt_ids", "output_ids",
                              "stop", "top_ids", "top_logits"]  # fmt: skip
    assert tokens.height == 10 and tokens["output_ids"].list.len().to_list() == [4] * 10


def test_a_base_without_tokenizer_files_asks_for_one(run_cli, tiny, tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    for name in ("config.json", "generation_config.json", "model.safetensors"):
        shutil.copy(tiny.base / name, base)
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base))
    assert_one_line_error(result, str(base), "holds no tokenizer files", "--tokenizer DIR")
    result = run_cli(*_generate(tiny, tmp_path / "o", "--base", base, "--tokenizer", tiny.base))
    assert result.exit_code == 0, result.stderr


@pytest.mark.slow
def test_reload_check_of_a_cuda_run_without_a_gpu(run_cli, tiny, tmp_path: Path) -> None:
    """The fresh process's error comes back as one line with its exit code."""
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    result = run_cli("reload-check", tiny.run, "--device", "cuda")
    assert_one_line_error(result, "--device cuda: no CUDA GPU is available")
