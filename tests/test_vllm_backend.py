"""``--backend vllm`` on vLLM's CPU build: evalkit's tokens are vLLM's own, and reload-check
measures the parity of what vLLM serves with what transformers scored.

A tiny Llama (float32, head dim 32, the example tokenizer) with a LoRA
adapter of non-zero weights, built from a config. The reference is vLLM
called directly, as a user would (its tokenizer loaded, prompts tokenized
by transformers' ``apply_chat_template`` in this test, not by evalkit), in a
script of its own under a ``__main__`` guard: one engine for the adapter's
outputs and, in a call of its own, the base's. Engine starts are what these
tests cost (half a minute to a minute each here), so there are five: the
reference, evalkit with the adapter (vLLM's default multiprocess engine),
evalkit's base run, its reload check and an engine meant to fail (in-process
engines, ``VLLM_ENABLE_V1_MULTIPROCESSING=0``, as the reference).
``make unit-vllm`` runs them in ``.venv-vllm``; elsewhere they skip.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("needs vLLM: make unit-vllm runs these in .venv-vllm", allow_module_level=True)

from conftest import assert_one_line_error
from model_fixtures import EXAMPLE_MODEL, conversations, write_jsonl

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

MAX_NEW_TOKENS = 16
EOS = 2  # <|im_end|>: the example tokenizer's eos and generation_config.json's
# Head dim 32 (128 / 4), as vLLM's CPU attention needs; a 512-token context.
MODEL = {
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "max_position_embeddings": 512,
}
IN_PROCESS = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"}

REFERENCE = """
import json
import sys


def main():
    from vllm import LLM, SamplingParams
    from vllm.lora.request import LoRARequest

    base, adapter, prompts_file, out, max_tokens, eos = sys.argv[1:7]
    prompts = [{"prompt_token_ids": ids} for ids in json.load(open(prompts_file))]
    llm = LLM(model=base, dtype="float32", enable_lora=True, max_lora_rank=8, max_loras=1,
              generation_config="vllm", max_model_len=256, seed=0)
    params = SamplingParams(temperature=0, max_tokens=int(max_tokens), stop_token_ids=[int(eos)])
    lora = llm.generate(prompts, params, lora_request=LoRARequest("adapter", 1, adapter))
    base_only = llm.generate(prompts, params)  # a call of its own: no batch mixes the two
    ids = lambda outputs: [list(o.outputs[0].token_ids) for o in outputs]
    json.dump({"adapter": ids(lora), "base": ids(base_only)}, open(out, "w"))


if __name__ == "__main__":
    main()
"""


def _build(root: Path) -> dict[str, Path]:
    """Base, adapter (r=8, random non-zero B), an lm_head-saving adapter, the data."""
    sys.path.insert(0, str(EXAMPLE_MODEL))
    import build  # examples/model/build.py
    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM

    paths = {name: root / name for name in ("base", "adapter", "lm_head_adapter")}
    build.build_base(paths["base"], seed=3, **MODEL)
    # A louder eos row, so that some outputs stop at eos and the stop is compared too.
    weights = load_file(paths["base"] / "model.safetensors")
    weights["lm_head.weight"][EOS] *= 2.5
    save_file(weights, paths["base"] / "model.safetensors", metadata={"format": "pt"})
    build.build_adapter(paths["base"], paths["adapter"], seed=4)
    model = AutoModelForCausalLM.from_pretrained(str(paths["base"]))
    torch.manual_seed(5)
    config = LoraConfig(r=8, target_modules=["q_proj"], modules_to_save=["lm_head"])
    get_peft_model(model, config).save_pretrained(str(paths["lm_head_adapter"]))
    paths["data"] = write_jsonl(root / "data.jsonl", conversations())
    return paths


def _prompt_ids(base: Path) -> list[list[int]]:
    """transformers' own render and encoding of each prompt (not evalkit's)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(base))
    return [
        list(tokenizer.apply_chat_template(row["messages"][:-1], add_generation_prompt=True,
                                           tokenize=True, return_dict=True)["input_ids"])
        for row in conversations()
    ]  # fmt: skip


def _script(path: Path, *args: object, env: dict[str, str] | None = None) -> None:
    """Run a script in a new interpreter of this environment; its log is shown on failure."""
    done = subprocess.run(
        [sys.executable, str(path), *map(str, args)],
        env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.fixture(scope="module")
def vmodel(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The folders, the prompts and vLLM's own greedy outputs (one engine, two calls)."""
    root = tmp_path_factory.mktemp("vllm")
    paths = _build(root)
    prompts = _prompt_ids(paths["base"])
    (root / "prompts.json").write_text(json.dumps(prompts))
    (root / "reference.py").write_text(REFERENCE)
    _script(root / "reference.py", paths["base"], paths["adapter"], root / "prompts.json",
            root / "reference.json", MAX_NEW_TOKENS, EOS,
            env={**IN_PROCESS, "VLLM_CPU_KVCACHE_SPACE": "1"})  # fmt: skip
    reference = json.loads((root / "reference.json").read_text())
    return {
        **paths,
        "root": root,
        "prompts": prompts,
        "vllm_adapter": reference["adapter"],
        "vllm_base": reference["base"],
    }


def _tokens(run: Path) -> Any:
    import polars as pl

    return pl.read_parquet(run / "tokens.parquet")


def _generate(run_cli, vmodel: dict[str, Any], out: Path, *extra: object) -> Any:
    return run_cli(
        "generate", "--backend", "vllm", "--base", vmodel["base"], "--data", vmodel["data"],
        "--id", "ticket_id", "--text", "messages", "--out", out,
        "--max-new-tokens", MAX_NEW_TOKENS, "--batch-size", 4, *extra,
    )  # fmt: skip


def test_generate_with_the_adapter_is_vllms_own_greedy_output(run_cli, vmodel) -> None:
    from transformers import AutoTokenizer

    out = vmodel["root"] / "run-adapter"
    result = _generate(run_cli, vmodel, out, "--adapter", vmodel["adapter"])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""  # nothing of vLLM's log reaches the user
    tokens = _tokens(out)
    assert tokens["prompt_ids"].to_list() == vmodel["prompts"]
    assert tokens["output_ids"].to_list() == vmodel["vllm_adapter"]
    assert vmodel["vllm_adapter"] != vmodel["vllm_base"]  # the adapter changes what is generated
    stops = tokens["stop"].to_list()
    assert "eos" in stops and "length" in stops
    for ids, stop in zip(vmodel["vllm_adapter"], stops, strict=True):
        assert (stop == "eos") == (ids[-1] == EOS and len(ids) <= MAX_NEW_TOKENS)
    # predictions.jsonl: the decoded ids, the stop token dropped, as the hf backend writes it.
    tokenizer = AutoTokenizer.from_pretrained(str(vmodel["base"]))
    texts = [json.loads(line)["output"] for line in (out / "predictions.jsonl").open()]
    expected = [
        tokenizer.decode(ids[:-1] if ids[-1] == EOS else ids, skip_special_tokens=True)
        for ids in vmodel["vllm_adapter"]
    ]
    assert texts == expected
    run = json.loads((out / "run.json").read_text())
    assert (run["backend"], run["kind"], run["format_version"]) == ("vllm", "base+adapter", 2)
    vllm = run["vllm"]
    assert vllm["version"] == metadata.version("vllm-cpu") == run["versions"]["vllm"]
    assert (vllm["distribution"], vllm["generation_config"], vllm["batch_invariant"]) == (
        "vllm-cpu", "vllm", False,
    )  # fmt: skip
    assert (vllm["max_lora_rank"], vllm["max_num_seqs"], vllm["multiprocessing"]) == (8, 4, True)
    longest = max(len(ids) for ids in vmodel["prompts"])
    assert vllm["max_model_len"] == longest + MAX_NEW_TOKENS
    assert vllm["kv_cache_space_gib"] == 1  # what 4 sequences of that length need, at least 1
    assert run["generation"]["padding_side"] == "none" and run["device"]["type"] == "cpu"
    assert "decoding   greedy (vLLM 0.32.0, generation_config vllm, max_lora_rank 8)" in (
        result.stdout
    )
    _first_logits_are_the_models(vmodel, tokens)


def _first_logits_are_the_models(vmodel: dict[str, Any], tokens: Any) -> None:
    """top_logits are raw logits: at the first new token, transformers + peft's forward pass."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(str(vmodel["base"]), dtype=torch.float32)
    model = PeftModel.from_pretrained(base, str(vmodel["adapter"])).eval()
    for ids, top_ids, top_logits in zip(
        vmodel["prompts"], tokens["top_ids"].to_list(), tokens["top_logits"].to_list(), strict=True
    ):
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        assert top_ids[0] == logits.topk(8).indices.tolist()
        assert top_logits[0] == pytest.approx(logits.topk(8).values.tolist(), abs=1e-3)


def test_generate_without_an_adapter_is_vllms_base_output(run_cli, vmodel, monkeypatch) -> None:
    for name, value in IN_PROCESS.items():
        monkeypatch.setenv(name, value)
    out = vmodel["root"] / "run-base"
    result = _generate(run_cli, vmodel, out)
    assert result.exit_code == 0, result.stderr
    assert _tokens(out)["output_ids"].to_list() == vmodel["vllm_base"]
    run = json.loads((out / "run.json").read_text())
    assert (run["kind"], run["vllm"]["max_lora_rank"], run["vllm"]["multiprocessing"]) == (
        "base", None, False,
    )  # fmt: skip


def _first_difference(left: list[int], right: list[int]) -> int | None:
    for position, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return position
    return None if len(left) == len(right) else min(len(left), len(right))


def test_reload_check_with_vllm_measures_the_parity_of_an_hf_run(
    run_cli, vmodel, monkeypatch
) -> None:
    from evalkit.model.generate import generate

    for name, value in IN_PROCESS.items():
        monkeypatch.setenv(name, value)
    run = vmodel["root"] / "run-hf"
    generate(vmodel["base"], vmodel["data"], id_column="ticket_id", text=["messages"],
             adapter=vmodel["adapter"], max_new_tokens=MAX_NEW_TOKENS, batch_size=4,
             device="cpu").write(run)  # fmt: skip
    hf = _tokens(run)["output_ids"].to_list()
    # The rate computed here: the hf run's ids against vLLM's own, example by example.
    ids = [row["ticket_id"] for row in conversations()]
    differing = {
        example: _first_difference(scored, served)
        for example, scored, served in zip(ids, hf, vmodel["vllm_adapter"], strict=True)
        if scored != served
    }
    rate = 1 - len(differing) / len(ids)
    report_file = vmodel["root"] / "reload.json"
    result = run_cli("reload-check", run, "--backend", "vllm", "--n", 100, "--json", report_file)
    report = json.loads(report_file.read_text())
    assert (report["backend"], report["run_backend"]) == ("vllm", "hf")
    assert report["controls"] == ids and report["regenerated"] == len(ids)
    assert report["match_rate"] == pytest.approx(rate)
    assert {d["id"]: d["position"] for d in report["differences"]} == differing
    for difference in report["differences"]:
        row = ids.index(difference["id"])
        position = difference["position"]
        assert difference["run_token"]["id"] == hf[row][position]
        assert difference["reload_token"]["id"] == vmodel["vllm_adapter"][row][position]
    assert result.exit_code == (0 if rate == 1.0 else 1)
    assert report["vllm"]["version"] == metadata.version("vllm-cpu")
    assert f"exact-match rate {rate:.4g}" in result.stdout


def test_an_engine_that_cannot_start_is_one_line_naming_the_folder(
    run_cli, vmodel, monkeypatch
) -> None:
    # More KV cache than the machine has: vLLM refuses in its engine's worker (the root
    # cause from a multiprocess engine's log: tests/test_model_backends.py).
    for name, value in {**IN_PROCESS, "VLLM_CPU_KVCACHE_SPACE": "4096"}.items():
        monkeypatch.setenv(name, value)
    result = _generate(run_cli, vmodel, vmodel["root"] / "never")
    assert_one_line_error(result, f"{vmodel['base']}: vLLM 0.32.0 cannot start on this model (")
    assert "root cause" not in result.stderr  # vLLM's own words, not "see root cause above"
    assert not (vmodel["root"] / "never").exists()


def test_refusals_before_the_engine(run_cli, vmodel) -> None:
    from evalkit.provenance.card import adapter_card

    card = adapter_card(vmodel["lm_head_adapter"], base=vmodel["base"])
    assert card.servable.vllm is False
    assert [p.code for p in card.servable.problems] == ["modules_to_save"]
    refused = _generate(
        run_cli, vmodel, vmodel["root"] / "x", "--adapter", vmodel["lm_head_adapter"]
    )
    assert_one_line_error(refused, "vLLM does not serve this adapter as it is; modules_to_save")
    # vllm-cpu cannot run on a GPU: said after vLLM is imported, before an engine.
    cuda = _generate(run_cli, vmodel, vmodel["root"] / "y", "--device", "cuda")
    assert_one_line_error(cuda, "--device cuda: the installed vLLM is vllm-cpu, a CPU-only build")
