"""``evalkit plan`` on the command line: the tables, --json, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import assert_one_line_error

ROOT = Path(__file__).resolve().parents[1]
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"
LLAMA13 = ROOT / "examples" / "plan" / "llama-2-13b"
PHI3 = Path(__file__).resolve().parent / "plan_configs" / "phi-3-mini-4k.json"


def test_plan_prints_the_step_and_the_phases(run_cli) -> None:
    result = run_cli("plan", "--config", LLAMA13, "--method", "qlora", "--eval-tokens", "1024")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert "qlora nf4-dq, k-bit prep, r 8 on q_proj,v_proj: 6,553,600 trainable" in out
    for moment in ("loss backward", "block backward", "optimizer step"):
        assert moment in out
    for phase in ("load", "train", "eval", "export"):
        assert f"\n{phase} " in out
    assert "<- largest" in out
    assert "recommendation: 48 GB - the export phase needs a 48 GB card" in out


def test_json_has_the_documented_keys(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    result = run_cli("plan", "--config", LLAMA7, "--json", target, "--quiet")
    assert result.exit_code == 0 and result.stdout == f"{target}\n"
    plan = json.loads(target.read_text())
    for key in ("inputs", "components", "lower_bound_gb", "phases", "trainable_params"):
        assert key in plan
    assert set(plan["phases"]) == {"load", "train", "eval", "export"}
    assert set(plan["recommendation"]) >= {"gpu_gb", "gpus", "phase"}
    assert plan["lower_bound_gb"] == plan["phases"]["train"]
    assert plan["trainable_params"] == 4_194_304
    assert plan["inputs"]["options"]["targets"] == ["q_proj", "v_proj"]
    assert plan["inputs"]["config"]["total_params"] == 6_738_415_616
    assert len(plan["inputs"]["config"]["sha256"]) == 64


def test_quant_defaults_to_nf4_dq_for_qlora(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    assert run_cli("plan", "--config", LLAMA7, "--method", "qlora", "--json", target).exit_code == 0
    options = json.loads(target.read_text())["inputs"]["options"]
    assert options["quant"] == "nf4-dq" and options["kbit_prep"] and options["grad_checkpointing"]


def test_every_option_of_the_design_line_is_accepted(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    result = run_cli(
        "plan", "--config", LLAMA7, "--method", "qlora", "--r", "16",
        "--targets", "all-linear", "--quant", "int8", "--seq-len", "512", "--batch-size", "2",
        "--grad-checkpointing", "--optimizer", "paged-adamw-8bit", "--precision", "amp",
        "--attention", "eager", "--gpus", "2", "--eval-batch-size", "4", "--eval-tokens", "256",
        "--export", "adapter", "--json", target,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    options = json.loads(target.read_text())["inputs"]["options"]
    assert options["targets"] == [
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
    ]  # fmt: skip
    assert (options["quant"], options["gpus"], options["export"]) == ("int8", 2, "adapter")
    assert "paged optimizer states" in result.stdout


def test_an_existing_json_needs_force(run_cli, tmp_path: Path) -> None:
    target = tmp_path / "plan.json"
    target.write_text("keep me")
    result = run_cli("plan", "--config", LLAMA7, "--json", target)
    assert_one_line_error(result, str(target), "--force")
    assert target.read_text() == "keep me"
    assert run_cli("plan", "--config", LLAMA7, "--json", target, "--force").exit_code == 0


def test_a_missing_key_is_exit_2_naming_it(run_cli, tmp_path: Path) -> None:
    config = json.loads((LLAMA7 / "config.json").read_text())
    del config["intermediate_size"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    result = run_cli("plan", "--config", tmp_path)
    assert_one_line_error(result, "config.json", "missing key 'intermediate_size'")


@pytest.mark.parametrize(
    ("arguments", "fragments"),
    [
        (["--method", "lora", "--quant", "nf4"], ["--quant applies to qlora only"]),
        (["--method", "full", "--r", "8"], ["--r applies to lora and qlora"]),
        (["--method", "full", "--export", "merge"], ["--export applies to lora and qlora"]),
        (["--method", "full", "--targets", "q_proj"], ["--targets applies"]),
        (["--method", "lora", "--kbit-prep"], ["--kbit-prep applies to qlora only"]),
        (["--targets", "q_proj,wq"], ["'wq' is not a linear of a llama block", "all-linear"]),
        (["--targets", "lm_head"], ["output head is never a target"]),
        (["--targets", " , "], ["no module names"]),
        (["--r", "0"], ["--r"]),
        (["--seq-len", "0"], ["--seq-len"]),
        (["--eval-batch-size", "-1"], ["--eval-batch-size"]),
        (["--method", "dora"], ["--method", "dora"]),
        (["--optimizer", "adam"], ["--optimizer"]),
    ],
)
def test_bad_options_are_one_line_errors(run_cli, arguments, fragments) -> None:
    result = run_cli("plan", "--config", LLAMA7, *arguments)
    assert_one_line_error(result, *fragments)


def test_phi3_targets_are_its_fused_linears(run_cli) -> None:
    result = run_cli("plan", "--config", PHI3, "--targets", "q_proj")
    assert_one_line_error(result, "'q_proj' is not a linear of a phi3 block", "qkv_proj")
    assert run_cli("plan", "--config", PHI3).exit_code == 0


@pytest.mark.parametrize(
    ("content", "fragment"),
    [("{not json", "not valid JSON"), ('{"hidden_size": 8}', "missing key")],
)
def test_bad_config_files(run_cli, tmp_path: Path, content: str, fragment: str) -> None:
    config = tmp_path / "config.json"
    config.write_text(content)
    assert_one_line_error(run_cli("plan", "--config", config), str(config), fragment)


def test_a_missing_config(run_cli, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("plan", "--config", tmp_path / "nope"), "no such file")
    assert_one_line_error(run_cli("plan", "--config", tmp_path), "no config.json in this folder")


def _prequantized(tmp_path: Path, quantization: dict[str, object]) -> Path:
    """Llama-2-7B's config as a bitsandbytes checkpoint saves it (quantization_config added)."""
    config = json.loads((LLAMA7 / "config.json").read_text())
    config["quantization_config"] = quantization
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


NF4_DQ = {"quant_method": "bitsandbytes", "load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
          "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16"}  # fmt: skip


@pytest.mark.parametrize("method", ["lora", "full"])
def test_a_prequantized_base_is_not_planned_as_16_bit(run_cli, tmp_path: Path, method) -> None:
    folder = _prequantized(tmp_path, NF4_DQ)
    result = run_cli("plan", "--config", folder, "--method", method)
    assert_one_line_error(result, str(folder / "config.json"), "'quantization_config'",
                          "nf4-dq", "--method qlora")  # fmt: skip


def test_a_prequantized_base_plans_as_the_qlora_of_its_storage(run_cli, tmp_path: Path) -> None:
    """Its default --quant is the stored one: the plan of the 16-bit config with that --quant."""
    stored, reference = tmp_path / "stored.json", tmp_path / "reference.json"
    int8 = {"quant_method": "bitsandbytes", "load_in_8bit": True}
    for quantization, quant in ((NF4_DQ, "nf4-dq"), (int8, "int8")):
        (tmp_path / quant).mkdir()
        folder = _prequantized(tmp_path / quant, quantization)
        arguments = ["--method", "qlora", "--force"]
        assert run_cli("plan", "--config", folder, *arguments, "--json", stored).exit_code == 0
        assert run_cli("plan", "--config", LLAMA7, *arguments, "--quant", quant,
                       "--json", reference).exit_code == 0  # fmt: skip
        planned, expected = json.loads(stored.read_text()), json.loads(reference.read_text())
        assert planned["inputs"]["options"]["quant"] == quant
        assert planned["components"] == expected["components"]
        assert planned["phases"] == expected["phases"]
    result = run_cli("plan", "--config", tmp_path / "int8", "--method", "qlora", "--quant", "nf4")
    assert_one_line_error(result, "--quant nf4", "bitsandbytes int8", "--quant int8")


def test_a_quantization_the_plan_does_not_model(run_cli, tmp_path: Path) -> None:
    folder = _prequantized(tmp_path, {"quant_method": "gptq", "bits": 4})
    result = run_cli("plan", "--config", folder, "--method", "qlora")
    assert_one_line_error(result, "'quantization_config'", "'gptq'", "does not model")
