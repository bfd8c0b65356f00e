"""The card's ``servable`` block, and ``gate.require_servable``: no vLLM needed.

Adapters are peft's own (tests/peft_adapters.py). The expected verdicts are
vLLM 0.32.0's rules worked by hand from its source (``PEFTHelper`` and
``parse_fine_tuned_lora_name``); tests/test_vllm_servable.py checks the same
adapters against vLLM's own code where vLLM is installed.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from peft_adapters import build_one, edit_config
from test_provenance_gate import REV_A, TRIAGE, score
from test_provenance_gate import card as card
from test_provenance_gate import data as data

from evalkit.provenance.card import adapter_card, card_json, load_card
from evalkit.provenance.servable import VLLM_RANKS, vllm_rank

# Variant -> (servable by vLLM, problem codes, max_lora_rank), worked from vLLM's source.
EXPECTED = {
    "lora_qv": (True, [], 8),  # r=4 -> the next allowed rank, 8
    "all_linear": (True, [], 8),
    "regex": (True, [], 8),
    "rslora": (True, [], 8),
    "rank_pattern": (True, [], 8),  # r=2, rank_pattern up to 6
    "r16_a32": (True, [], 16),
    "untrained": (True, [], 8),  # all-zero B: the card's error, not vLLM's
    "embedding": (True, [], 8),  # LoRA on embed_tokens: vLLM adapts Llama's embeddings
    "dora": (False, ["dora"], 8),
    "modules_to_save": (False, ["modules_to_save"], 8),
    "bias_all": (False, ["bias"], 8),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_peft_variant_gets_the_verdict_of_vllms_rules(peft_adapters, name) -> None:
    servable = adapter_card(peft_adapters[name].path).servable
    expected, problem_codes, rank = EXPECTED[name]
    assert (servable.vllm, codes_of(servable), servable.max_lora_rank) == (
        expected,
        problem_codes,
        rank,
    )
    assert servable.rules == "vllm 0.32.0"


def codes_of(servable) -> list[str]:
    return [problem.code for problem in servable.problems]


def test_modules_to_save_lm_head_is_named_with_the_way_out(peft_adapters) -> None:
    problem = adapter_card(peft_adapters["modules_to_save"].path).servable.problems[0]
    assert problem.message.startswith(
        "modules_to_save holds lm_head: vLLM refuses an adapter with the embeddings (lm_head)"
    )
    assert "merge_and_unload" in problem.message


def test_ranks_round_up_to_the_ranks_vllm_allows() -> None:
    assert [vllm_rank(r) for r in (1, 2, 8, 9, 17, 300, 321, 512)] == [
        1, 8, 8, 16, 32, 320, 512, 512,
    ]  # fmt: skip
    assert vllm_rank(513) is None
    assert VLLM_RANKS == (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vllm.config.lora.MaxLoRARanks


@pytest.mark.parametrize(
    ("changes", "code", "words"),
    [
        ({"r": 600}, "rank_above_max", "rank 600 is above vLLM's largest max_lora_rank 512"),
        ({"rank_pattern": {"v_proj": 1024}}, "rank_above_max", "rank 1024"),
        ({"init_lora_weights": "pissa"}, "init_weights", "init_lora_weights is 'pissa'"),
        ({"lora_bias": True}, "lora_bias", "lora_bias is true"),
        ({"use_qalora": True}, "unsupported_feature", "use_qalora is set: vLLM does not serve"),
        ({"layer_replication": [[0, 2]]}, "unsupported_feature", "layer_replication is set"),
        ({"trainable_token_indices": [3, 4]}, "trainable_tokens", "trainable_token_indices"),
        ({"modules_to_save": ["score"]}, None, ""),  # a classification head: served
        ({"peft_type": "LOHA"}, "not_lora", "serves LoRA adapters only"),
    ],
)
def test_each_config_rule(peft_adapters, tmp_path, changes, code, words) -> None:
    folder = Path(shutil.copytree(peft_adapters["lora_qv"].path, tmp_path / "adapter"))
    edit_config(folder, **changes)
    servable = adapter_card(folder).servable
    if code is None:
        assert servable.vllm and servable.problems == []
        return
    assert not servable.vllm
    assert code in codes_of(servable)
    problem = next(p for p in servable.problems if p.code == code)
    assert words in problem.message


def test_trainable_tokens_saved_by_peft_are_not_servable(tmp_path) -> None:
    settings = {"r": 4, "target_modules": ["q_proj"], "trainable_token_indices": [1, 2]}
    built = build_one(tmp_path, "tokens", settings)
    servable = adapter_card(built.path).servable
    assert not servable.vllm
    problem = next(p for p in servable.problems if p.code == "trainable_tokens")
    assert "trainable_tokens" in problem.message.split(":")[0]  # names the saved tensor


def test_the_card_shows_the_verdict_and_a_version_1_card_reads_as_not_assessed(
    peft_adapters, tmp_path, run_cli
) -> None:
    shown = run_cli("card", peft_adapters["modules_to_save"].path)
    assert "servable   vllm: NO, by the rules of vllm 0.32.0:" in shown.stdout
    assert "  modules_to_save: modules_to_save holds lm_head" in shown.stdout
    served = run_cli("card", peft_adapters["lora_qv"].path)
    assert "servable   vllm: yes (max_lora_rank 8; rules of vllm 0.32.0)" in served.stdout
    # A card written before version 2 is read, its servable block null.
    data = json.loads(card_json(adapter_card(peft_adapters["lora_qv"].path)))
    del data["servable"]
    path = tmp_path / "old.json"
    path.write_text(json.dumps({**data, "card_version": 1}))
    assert load_card(path).servable is None


def _servable_contract(tmp: Path) -> Path:
    text = TRIAGE.read_text().replace("gate:\n", "gate:\n  require_servable: vllm\n")
    path = tmp / "servable.yaml"
    path.write_text(text)
    return path


def test_gate_requires_a_servable_card(run_cli, data, card) -> None:
    contract = _servable_contract(data.parent)
    base = score(run_cli, data, "base", 0, "--card", card("lora_qv"), contract=contract)
    served = score(run_cli, data, "served", 1, "--card", card("r8_a16"), contract=contract)
    refused = score(
        run_cli, data, "refused", 2, "--card", card("modules_to_save"), contract=contract
    )
    bare = score(run_cli, data, "bare", 3, "--base-model", "org/tiny-llama", "--base-revision",
                 REV_A, contract=contract)  # fmt: skip
    passing = run_cli("gate", base, served, "--json", data / "pass.json")
    assert passing.exit_code == 0, passing.stdout
    check = next(c for c in json.loads((data / "pass.json").read_text())["checks"]
                 if c["rule"] == "require_servable")  # fmt: skip
    assert check["passed"] and check["scope"] == "vllm"
    failing = run_cli("gate", base, refused, "--junit", data / "j.xml")
    assert failing.exit_code == 1
    assert "✗ require_servable @ vllm: vLLM does not serve the adapter as it is: " \
           "modules_to_save: modules_to_save holds lm_head" in failing.stdout  # fmt: skip
    assert 'name="require_servable [vllm]"' in (data / "j.xml").read_text()
    unknown = run_cli("gate", base, bare)
    assert unknown.exit_code == 1 and "records no adapter card" in unknown.stdout


def test_the_rule_leaves_other_contracts_fingerprints_alone(tmp_path) -> None:
    from evalkit.contract.fingerprint import contract_fingerprint, normalized_contract
    from evalkit.contract.load import load_contract
    from evalkit.errors import InvalidContract

    plain = load_contract(TRIAGE)
    strict = load_contract(_servable_contract(tmp_path))
    assert "require_servable" not in normalized_contract(plain)["gate"]
    assert normalized_contract(strict)["gate"]["require_servable"] == "vllm"
    assert contract_fingerprint(plain) != contract_fingerprint(strict)
    bad = tmp_path / "bad.yaml"
    bad.write_text(TRIAGE.read_text().replace("gate:\n", "gate:\n  require_servable: tgi\n"))
    with pytest.raises(InvalidContract, match="require_servable"):
        load_contract(bad)
