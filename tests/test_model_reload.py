"""``evalkit reload-check``: passes on the pinned artifact and a correct merge, fails on a
wrong merge with the divergence shown, refuses changed files."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error
from model_fixtures import BATCH_SIZE, MAX_NEW_TOKENS, TinyModels

pytest.importorskip("torch")
pytest.importorskip("peft")

from evalkit.model.divergence import choose_controls, first_difference
from evalkit.model.generate import generate

pytestmark = pytest.mark.slow  # loads, merges and reloads models in subprocesses


def _report(path: Path) -> dict:
    return json.loads(path.read_text())


def test_the_pinned_artifact_reloads_identically(run_cli, tiny: TinyModels, tmp_path: Path):
    result = run_cli("reload-check", tiny.run, "--n", 6, "--json", tmp_path / "r.json")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith(f"reload-check {tiny.run}: PASS: 6/6 control examples")
    report = _report(tmp_path / "r.json")
    assert report["verdict"] == "pass" and report["artifact"] == "base+adapter"
    assert report["differences"] == [] and len(report["controls"]) == 6
    # Every control is regenerated in its whole run batch.
    tokens = pl.read_parquet(tiny.run / "tokens.parquet")
    batches = tokens.filter(pl.col("ticket_id").is_in(report["controls"]))["batch"].unique()
    assert report["regenerated"] == tokens.filter(pl.col("batch").is_in(batches.implode())).height
    names = {Path(path).name for path in report["pins_checked"]}
    assert {"model.safetensors", "adapter_model.safetensors", "tokenizer.json"} <= names
    assert {"config.json", "adapter_config.json", "tokens.parquet", "data.jsonl"} <= names


def test_a_correct_fp32_merge_passes(run_cli, tiny: TinyModels) -> None:
    result = run_cli("reload-check", tiny.run, "--n", 10, "--merged", tiny.merged)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert "PASS: 10/10" in result.stdout
    assert f"merged folder {tiny.merged}" in result.stdout


def test_a_merge_of_another_adapter_fails(run_cli, tiny: TinyModels, tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = run_cli("reload-check", tiny.run, "--n", 10, "--merged", tiny.merged_other,
                     "--json", out)  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    report = _report(out)
    assert report["verdict"] == "fail" and report["artifact"] == "merged"
    assert report["identical"] < 10 and len(report["differences"]) == 10 - report["identical"]
    first = report["differences"][0]
    assert f"{first['id']}: first differs at output token {first['position']}" in result.stdout


def test_a_bf16_saved_merge_flips_tokens_and_fails(
    run_cli, tiny: TinyModels, tmp_path: Path
) -> None:
    """Rounding to bf16 flips near ties: small logit differences, a failed check."""
    import torch
    from transformers import AutoModelForCausalLM

    out = tmp_path / "r.json"
    result = run_cli("reload-check", tiny.run, "--n", 10, "--merged", tiny.merged_bf16,
                     "--json", out)  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    report = _report(out)
    assert report["differences"], "the fixture must flip at least one token"
    tokens = pl.read_parquet(tiny.run / "tokens.parquet")
    model = AutoModelForCausalLM.from_pretrained(str(tiny.merged_bf16), dtype=torch.float32)
    model.eval()
    for difference in report["differences"]:
        row = tokens.filter(pl.col("ticket_id") == difference["id"]).row(0, named=True)
        position = difference["position"]
        # Reference: one forward pass of the bf16 merge on the common prefix.
        prefix = row["prompt_ids"] + row["output_ids"][:position]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([prefix])).logits[0, -1]
        run_ids, run_values = row["top_ids"][position], row["top_logits"][position]
        expected = max(abs(float(logits[i]) - v) for i, v in zip(run_ids, run_values, strict=True))
        assert difference["max_logit_diff"] == pytest.approx(expected, abs=1e-4)
        assert difference["reload_token"]["id"] == int(logits.argmax())
        assert difference["run_token"]["id"] == row["output_ids"][position]
        assert 0 <= difference["reload_gap"] < 0.1  # near ties, not another model
        assert difference["max_logit_diff"] < 0.1


@pytest.fixture
def own_run(tiny: TinyModels, tmp_path: Path) -> dict[str, Path]:
    """A run on private copies of the folders, which a test may then change."""
    folders = {name: tiny.copy(name, tmp_path) for name in ("base", "adapter")}
    data = tmp_path / "data.jsonl"
    data.write_bytes(tiny.data.read_bytes())
    result = generate(folders["base"], data, id_column="ticket_id", text=["messages"],
                      adapter=folders["adapter"], max_new_tokens=MAX_NEW_TOKENS,
                      batch_size=BATCH_SIZE, device="cpu")  # fmt: skip
    result.write(tmp_path / "run")
    return {**folders, "data": data, "run": tmp_path / "run"}


def _flip_a_byte(path: Path) -> None:
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))


@pytest.mark.parametrize(
    ("folder", "name"),
    [
        ("adapter", "adapter_model.safetensors"),
        ("adapter", "adapter_config.json"),
        ("base", "model.safetensors"),
        ("base", "config.json"),
        ("base", "tokenizer.json"),
        ("base", "chat_template.jinja"),
        ("run", "tokens.parquet"),
    ],
)
def test_a_changed_pinned_file_is_refused(run_cli, own_run, folder: str, name: str) -> None:
    path = own_run[folder] / name
    if name.endswith(".json") or name.endswith(".jinja"):
        path.write_text(path.read_text() + " ")
    else:
        _flip_a_byte(path)
    result = run_cli("reload-check", own_run["run"])
    assert_one_line_error(result, str(path), "changed since the run")


def test_changed_data_and_missing_files_are_refused(run_cli, own_run) -> None:
    data = own_run["data"]
    data.write_text(data.read_text() + "\n")
    assert_one_line_error(run_cli("reload-check", own_run["run"]), str(data), "changed")
    data.write_text(data.read_text()[:-1])
    weights = own_run["adapter"] / "adapter_model.safetensors"
    weights.unlink()
    assert_one_line_error(run_cli("reload-check", own_run["run"]), str(weights), "no longer")


def test_a_new_weight_shard_counts_as_a_change(run_cli, own_run) -> None:
    shard = own_run["base"] / "model-00002-of-00002.safetensors"
    shard.write_bytes(b"x")
    assert_one_line_error(run_cli("reload-check", own_run["run"]), str(shard), "not there")


def test_a_folder_that_is_not_a_run(run_cli, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("reload-check", tmp_path), "holds no run.json")
    assert_one_line_error(run_cli("reload-check", tmp_path / "nope"), "no such folder")


def test_merged_must_be_a_model_folder(run_cli, tiny: TinyModels) -> None:
    result = run_cli("reload-check", tiny.run, "--merged", tiny.adapter)
    assert_one_line_error(result, str(tiny.adapter), "is an adapter folder")


def test_controls_are_seeded_stable_and_nested() -> None:
    ids = [f"T{i:03d}" for i in range(200)]
    assert choose_controls(ids, 16, 0) == choose_controls(list(ids), 16, 0)
    assert choose_controls(ids, 16, 0) != choose_controls(ids, 16, 1)
    assert set(choose_controls(ids, 8, 0)) <= set(choose_controls(ids, 16, 0))
    assert choose_controls(ids, 500, 0) == list(range(200))
    shuffled = ids[100:] + ids[:100]
    assert {shuffled[r] for r in choose_controls(shuffled, 16, 0)} == {
        ids[r] for r in choose_controls(ids, 16, 0)
    }


@pytest.mark.parametrize(
    ("run", "reload", "expected"),
    [([1, 2, 3], [1, 2, 3], None), ([1, 2, 3], [1, 5, 3], 1), ([1, 2], [1, 2, 3], 2),
     ([], [4], 0), ([7], [8], 0)],
)  # fmt: skip
def test_first_difference(run, reload, expected) -> None:
    assert first_difference(run, reload) == expected


def test_relative_paths_from_another_folder_are_not_called_changed(
    run_cli, tiny: TinyModels, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """run.json keeps paths as given; from elsewhere they are missing, not changed."""
    import os

    def here(path: Path) -> str:
        return os.path.relpath(path, tiny.root)

    monkeypatch.chdir(tiny.root)
    run = tmp_path / "relative-run"
    result = run_cli("generate", "--base", here(tiny.base), "--adapter", here(tiny.adapter),
                     "--data", here(tiny.data), "--id", "ticket_id", "--text", "messages",
                     "--out", run, "--max-new-tokens", 4, "--device", "cpu")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    monkeypatch.chdir(tmp_path)
    result = run_cli("reload-check", run, "--n", 1)
    assert_one_line_error(result, f"{here(tiny.data)}: not found from {tmp_path}",
                          "relative to the folder evalkit generate ran in",
                          "run reload-check from that folder")  # fmt: skip
    monkeypatch.chdir(tiny.root)
    assert run_cli("reload-check", run, "--n", 1).exit_code == 0
