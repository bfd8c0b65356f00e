"""Cards in results, and the gate's provenance checks: one base, one factor, a fresh test.

Adapters are peft's own (tests/peft_adapters.py); the predictions are the
same good outputs written with different whitespace, so every result
passes the contract's statistical rules and only provenance decides.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from conftest import assert_one_line_error
from peft_adapters import edit_config

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
REV_A = "a" * 40
REV_B = "b" * 40
GOOD = {"category": "billing", "priority": "low", "order_id": None, "amount": None}


@pytest.fixture
def data(tmp_path) -> Path:
    """A gold split with a manifest beside it, and five prediction files that differ in bytes."""
    folder = tmp_path / "split"
    folder.mkdir()
    pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(12)], "category": ["billing"] * 12,
        "priority": ["low"] * 12, "order_id": [None] * 12, "amount": [None] * 12,
    }, schema_overrides={"order_id": pl.String, "amount": pl.Float64}).write_parquet(
        folder / "test.parquet")  # fmt: skip
    manifest = {"seed": 7, "options": {"group": ["conversation_id"]},
                "splits": {"test": {"n_items": 12, "n_groups": 5}}}  # fmt: skip
    (folder / "manifest.json").write_text(json.dumps(manifest))
    for k in range(6):
        rows = [{"ticket_id": f"T{i}", "output": json.dumps(GOOD) + " " * k} for i in range(12)]
        (folder / f"p{k}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return folder


@pytest.fixture
def card(peft_adapters, tmp_path, run_cli):
    """card(adapter, revision, training=None) -> card.json of a copy named after org/tiny-llama."""
    made = {}

    def make(name: str, revision: str = REV_A, **training) -> Path:
        key = (name, revision, tuple(sorted(training.items())))
        if key in made:
            return made[key]
        folder = Path(shutil.copytree(peft_adapters[name].path, tmp_path / f"a{len(made)}"))
        edit_config(folder, base_model_name_or_path="org/tiny-llama")
        extra = []
        if training:
            (folder.parent / f"t{len(made)}.json").write_text(json.dumps(training))
            extra = ["--training", folder.parent / f"t{len(made)}.json"]
        out = tmp_path / f"card{len(made)}.json"
        result = run_cli("card", folder, "--base-revision", revision, "--json", out, *extra)
        assert result.exit_code == 0, result.stdout + result.stderr
        made[key] = out
        return out

    return make


def score(run_cli, data: Path, name: str, pred: int, *extra: object, contract: Path = TRIAGE):
    out = data.parent / "runs" / name
    result = run_cli(
        "score", "--contract", contract, "--gold", data / "test.parquet",
        "--pred", data / f"p{pred}.jsonl", "--out", out, "--name", name, *extra,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    return out


def test_score_records_the_card_and_its_base(run_cli, data, card, peft_adapters) -> None:
    card_path = card("r8_a16")
    out = score(run_cli, data, "r8", 0, "--card", card_path)
    summary = json.loads((out / "summary.json").read_text())
    written = json.loads(card_path.read_text())
    assert summary["card"] == written
    assert summary["base"] == {"id": "org/tiny-llama", "revision": REV_A, "pinned": True,
                               "quantization": None, "source": "card"}  # fmt: skip
    line = json.loads((data / "evalkit-ledger.jsonl").read_text().splitlines()[0])
    assert line["card_weights_sha256"] == written["weights_sha256"]
    adapter = score(run_cli, data, "direct", 0, "--adapter", peft_adapters["r8_a16"].path)
    direct = json.loads((adapter / "summary.json").read_text())
    assert direct["card"]["weights_sha256"] == written["weights_sha256"]
    prompt = score(run_cli, data, "prompt", 1, "--base-model", "org/tiny-llama",
                   "--base-revision", REV_A)  # fmt: skip
    assert json.loads((prompt / "summary.json").read_text())["base"]["source"] == "options"
    # The library takes the same options: a card file, an adapter folder, a base.
    import evalkit

    gold, pred = data / "test.parquet", data / "p0.jsonl"

    def recorded(**options: object) -> dict:
        result = evalkit.score(TRIAGE, gold, pred, no_ledger=True, **options)
        return result.summary.model_dump(mode="json")

    from_card = recorded(card=card_path)
    assert from_card["card"] == written and from_card["base"] == summary["base"]
    from_adapter = recorded(adapter=peft_adapters["r8_a16"].path)
    assert from_adapter["card"]["weights_sha256"] == written["weights_sha256"]
    based = recorded(base_model="org/tiny-llama", base_revision=REV_A)
    assert based["base"] == json.loads((prompt / "summary.json").read_text())["base"]


def test_score_provenance_option_errors(run_cli, data, card, peft_adapters) -> None:
    common = ["score", "--contract", TRIAGE, "--gold", data / "test.parquet",
              "--pred", data / "p0.jsonl", "--out", data.parent / "x"]  # fmt: skip
    adapter = peft_adapters["r8_a16"].path
    assert_one_line_error(run_cli(*common, "--card", card("r8_a16"), "--adapter", adapter),
                          "not both")  # fmt: skip
    assert_one_line_error(run_cli(*common, "--base-revision", REV_A), "needs --base-model")
    assert_one_line_error(
        run_cli(*common, "--card", card("r8_a16"), "--base-revision", REV_B), "cannot change a card"
    )
    assert_one_line_error(
        run_cli(*common, "--card", adapter), "is a folder", "--card takes a card.json"
    )
    (data / "bad.json").write_text(json.dumps({"card_version": 1}))
    assert_one_line_error(run_cli(*common, "--card", data / "bad.json"), "bad.json: key")
    (data / "broken.json").write_text('{"card_version": ')
    assert_one_line_error(run_cli(*common, "--card", data / "broken.json"),
                          "broken.json:1: not valid JSON", "write the card again")  # fmt: skip
    assert_one_line_error(run_cli(*common, "--base-model", " "), "--base-model is empty")
    assert not (data.parent / "x").exists()


def test_gate_refuses_a_base_revision_change_naming_both(run_cli, data, card) -> None:
    base = score(run_cli, data, "base", 0, "--card", card("r8_a16", REV_A))
    cand = score(run_cli, data, "cand", 1, "--card", card("r8_a16", REV_B))
    refused = run_cli("gate", base, cand)
    assert_one_line_error(refused, "different bases (revision)", REV_A, REV_B,
                          "--allow-base-change")  # fmt: skip
    allowed = run_cli("gate", base, cand, "--allow-base-change", "--markdown", data / "g.md")
    assert allowed.exit_code == 0, allowed.stdout
    assert "different bases (revision), compared anyway" in allowed.stdout
    assert "**Different bases** (revision)" in (data / "g.md").read_text()


def test_factor_r_passes_at_fixed_alpha_and_at_fixed_alpha_over_r(run_cli, data, card) -> None:
    base = score(run_cli, data, "r8", 0, "--card", card("r8_a16"))
    fixed_alpha = score(run_cli, data, "r16a16", 1, "--card", card("r16_a16"))
    fixed_ratio = score(run_cli, data, "r16a32", 2, "--card", card("r16_a32"))
    first = run_cli("gate", base, fixed_alpha, "--factor", "r", "--json", data / "a.json")
    assert first.exit_code == 0, first.stdout
    assert "ablation: only the factor differs: lora.r 8 → 16, at fixed lora_alpha" in first.stdout
    report = json.loads((data / "a.json").read_text())
    differences = {d["key"]: d for d in report["provenance"]["differences"]}
    assert set(differences) == {"lora.r", "lora.scaling"}
    assert differences["lora.scaling"]["follows_from"] == "lora.r"
    second = run_cli("gate", base, fixed_ratio, "--factor", "r")
    assert second.exit_code == 0, second.stdout
    assert "at fixed lora_alpha/r (lora_alpha changes with r" in second.stdout
    both = run_cli("compare", base, fixed_alpha, fixed_ratio, "--factor", "r", "--out",
                   data / "cmp")  # fmt: skip
    assert both.exit_code == 0
    candidates = json.loads((data / "cmp" / "report.json").read_text())["candidates"]
    protocols = {c["candidate"]["name"]: c["provenance"]["protocol"] for c in candidates}
    assert protocols["r16a16"].startswith("fixed lora_alpha (")
    assert protocols["r16a32"].startswith("fixed lora_alpha/r")


def test_factor_r_fails_when_dropout_or_learning_rate_also_changed(run_cli, data, card) -> None:
    base = score(run_cli, data, "r8", 0, "--card", card("r8_a16", learning_rate=2e-4, seed=1))
    dropout = score(run_cli, data, "drop", 1,
                    "--card", card("r16_a16_dropout", learning_rate=2e-4, seed=1))  # fmt: skip
    failed = run_cli("gate", base, dropout, "--factor", "r", "--junit", data / "j.xml")
    assert failed.exit_code == 1, failed.stdout
    assert "✗ confounded_ablation @ setting:lora.lora_dropout" in failed.stdout
    assert 'type="confounded_ablation"' in (data / "j.xml").read_text()
    rate = score(run_cli, data, "lr", 2, "--card", card("r16_a16", learning_rate=1e-3, seed=1))
    failed = run_cli("gate", base, rate, "--factor", "r")
    assert failed.exit_code == 1
    assert "confounded_ablation @ setting:training.learning_rate" in failed.stdout
    assert "0.0002 → 0.001" in failed.stdout
    both = run_cli("gate", base, rate, "--factor", "r", "--factor", "learning_rate")
    assert both.exit_code == 0, both.stdout


def test_differences_are_listed_without_a_factor(run_cli, data, card) -> None:
    base = score(run_cli, data, "r8", 0, "--card", card("r8_a16"))
    cand = score(run_cli, data, "drop", 1, "--card", card("r16_a16_dropout"))
    result = run_cli("gate", base, cand, "--markdown", data / "g.md")
    assert result.exit_code == 0
    markdown = (data / "g.md").read_text()
    assert "| `lora.lora_dropout` | `0.0` | `0.1` |" in markdown
    assert "| `lora.r` | `8` | `16` |" in markdown


def test_factor_errors(run_cli, data, card) -> None:
    plain = score(run_cli, data, "plain", 0)
    carded = score(run_cli, data, "carded", 1, "--card", card("r8_a16"))
    assert_one_line_error(run_cli("gate", plain, carded, "--factor", "r"),
                          "--factor needs the adapter card", "baseline")  # fmt: skip
    assert_one_line_error(run_cli("gate", carded, carded, "--factor", "warmup"),
                          "--factor warmup: no such setting")  # fmt: skip


def test_a_prompt_only_baseline_on_another_base_is_refused(run_cli, data, card) -> None:
    prompt = score(run_cli, data, "prompt", 0, "--base-model", "org/other")
    cand = score(run_cli, data, "cand", 1, "--card", card("r8_a16"))
    assert_one_line_error(run_cli("gate", prompt, cand), "org/other", "org/tiny-llama")
    same = score(run_cli, data, "same", 2, "--base-model", "org/tiny-llama")
    assert run_cli("gate", same, cand).exit_code == 0


def test_decision_record_in_report_json_and_markdown(run_cli, data, card) -> None:
    card_path = card("r16_a16")
    base = score(run_cli, data, "prompt", 0, "--base-model", "org/tiny-llama",
                 "--base-revision", REV_A)  # fmt: skip
    cand = score(run_cli, data, "r16", 1, "--card", card_path)
    result = run_cli("compare", base, cand, "--out", data / "cmp")
    assert result.exit_code == 0
    decision = json.loads((data / "cmp" / "report.json").read_text())["decision"]
    assert decision["outcome"] == "no_sufficient_gain"  # same outputs: no gain
    assert decision["test_split"]["split"] == "test"
    assert decision["test_split"]["n_groups"] == 5
    assert decision["test_split"]["group_columns"] == ["conversation_id"]
    assert decision["known_regressions"] == {"r16": []}
    assert decision["test_set"]["state"] == "reused" and decision["test_set"]["looks"] == 2
    reload = decision["reload"]
    assert (reload["result"], reload["base_revision"], reload["missing"]) == ("prompt", REV_A, [])
    markdown = (data / "cmp" / "report.md").read_text()
    assert "## Decision record" in markdown and "5 conversation_id groups" in markdown
    gate = run_cli("gate", base, cand, "--json", data / "g.json")
    chosen = json.loads((data / "g.json").read_text())["decision"]
    assert chosen["reload"]["result"] == "prompt"  # nothing gained: the baseline stays
    assert gate.exit_code == 0


def test_gate_prints_the_ledger_state_with_the_selection_bias(run_cli, data) -> None:
    base = score(run_cli, data, "b", 0)
    cand = score(run_cli, data, "c", 1)
    result = run_cli("gate", base, cand)
    expected = (
        "  test set: reused (2 looks): if candidates were chosen on it, every figure may be "
        "inflated by up to 0.64 standard errors (0.45·√2); on the accuracy delta, up to ±0.000"
    )
    assert expected in result.stdout
    run_cli("gate", base, cand, "--html", data / "gate.html")
    page = (data / "gate.html").read_text()
    figures = page.index('class="figures"')
    note = page.index("<strong>Test set:</strong> reused (2 looks): if candidates were chosen")
    assert figures < note < page.index("<section>")  # beside the figures, before any chart
    assert "up to 0.64 standard errors (0.45·√2); on the accuracy delta, up to ±0.000." in page


def _fresh_contract(tmp: Path) -> Path:
    text = TRIAGE.read_text().replace("gate:\n", "gate:\n  require_fresh_test: true\n")
    path = tmp / "fresh.yaml"
    path.write_text(text)
    return path


def test_require_fresh_test_fails_a_burned_test(run_cli, data) -> None:
    contract = _fresh_contract(data.parent)
    runs = [score(run_cli, data, f"r{k}", k, contract=contract) for k in range(2)]
    reused = run_cli("gate", runs[0], runs[1])
    assert reused.exit_code == 0, reused.stdout  # two looks: reused, not burned
    runs += [score(run_cli, data, f"r{k}", k, contract=contract) for k in range(2, 5)]
    burned = run_cli("gate", runs[0], runs[4], "--junit", data / "j.xml")
    assert burned.exit_code == 1
    assert "✗ require_fresh_test @ test_set: the test set is burned (5 looks, 5 or" in burned.stdout
    assert "freeze a new test split" in burned.stdout
    # Another ledger than the gold file's is refused (it could be a fresh one).
    other = run_cli("gate", runs[0], runs[1], "--ledger", data / "missing.jsonl")
    assert_one_line_error(other, "--ledger", "the ledger of the gold file", "leave --ledger out")
    for name in ("evalkit-ledger.jsonl", "evalkit-ledger.head"):  # both gone: nothing counted
        (data / name).rename(data.parent / name)
    lost = run_cli("gate", runs[0], runs[1])
    assert lost.exit_code == 1 and "cannot be counted" in lost.stdout


def test_a_ledger_without_the_looks_is_reported(run_cli, data) -> None:
    base = score(run_cli, data, "b", 0, "--no-ledger")
    cand = score(run_cli, data, "c", 1)
    result = run_cli("gate", base, cand, "--json", data / "g.json")
    state = json.loads((data / "g.json").read_text())["test_set"]
    assert not state["recorded"] and "the ledger has no look of b" in state["reasons"][-1]
    assert result.exit_code == 0


def test_a_hand_edited_manifest_leaves_the_split_unknown_not_a_crash(run_cli, data) -> None:
    manifest = {"seed": "seven", "options": {"group": ["conversation_id"]},
                "splits": {"test": {"n_items": "12", "n_groups": -5}}}  # fmt: skip
    (data / "manifest.json").write_text(json.dumps(manifest))
    base, cand = score(run_cli, data, "b", 0), score(run_cli, data, "c", 1)
    result = run_cli("compare", base, cand, "--out", data / "cmp")
    assert result.exit_code == 0, result.stderr
    split = json.loads((data / "cmp" / "report.json").read_text())["decision"]["test_split"]
    assert (split["split"], split["n_groups"]) == ("test", None)


def test_gate_refuses_a_quantized_base_against_a_full_one(run_cli, data, card, peft_adapters):
    root = peft_adapters["r8_a16"].path.parent
    quantized = Path(shutil.copytree(root / "base", data.parent / "base-4bit"))
    config = json.loads((quantized / "config.json").read_text())
    config["quantization_config"] = {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                     "bnb_4bit_quant_type": "nf4"}  # fmt: skip
    (quantized / "config.json").write_text(json.dumps(config))
    folder = Path(shutil.copytree(peft_adapters["r8_a16"].path, data.parent / "qlora"))
    edit_config(folder, base_model_name_or_path="org/tiny-llama")
    qcard = data.parent / "qcard.json"
    made = run_cli("card", folder, "--base", quantized, "--base-revision", REV_A, "--json", qcard)
    assert made.exit_code == 0, made.stdout
    assert json.loads(qcard.read_text())["base"]["quantization"] == "bitsandbytes-4bit-nf4"
    unchecked = score(run_cli, data, "unchecked", 0, "--card", card("r8_a16"))
    cand = score(run_cli, data, "qlora", 1, "--card", qcard)
    # Without --base the card does not know its base's quantization: listed, not refused.
    listed = run_cli("gate", unchecked, cand, "--json", data / "g.json")
    assert listed.exit_code == 0, listed.stdout
    differences = json.loads((data / "g.json").read_text())["provenance"]["differences"]
    assert "base.quantization" in {d["key"] for d in differences}
    # Checked against its (full) base, null is "not quantized": a QLoRA candidate is refused.
    full = data.parent / "fcard.json"
    folder = Path(shutil.copytree(peft_adapters["r8_a16"].path, data.parent / "lora"))
    edit_config(folder, base_model_name_or_path="org/tiny-llama")
    made = run_cli(
        "card", folder, "--base", root / "base", "--base-revision", REV_A, "--json", full
    )
    assert made.exit_code == 0, made.stdout
    base = score(run_cli, data, "full", 2, "--card", full)
    assert_one_line_error(run_cli("gate", base, cand), "different bases (quantization)",
                          "(not quantized) vs org/tiny-llama", "(bitsandbytes-4bit-nf4)",
                          "--allow-base-change")  # fmt: skip
    assert run_cli("gate", base, cand, "--allow-base-change").exit_code == 0


def test_results_scored_with_relative_paths_are_read_from_another_folder(
    run_cli, data, monkeypatch
) -> None:
    # score ran from the project folder with relative paths; compare runs elsewhere
    # (another CI step) and still finds the ledger, the split and the outputs.
    from evalkit.comparison.outputs import read_outputs
    from evalkit.io import sha256_file

    project = data.parent
    monkeypatch.chdir(project)
    for name, pred in (("base", 0), ("cand", 1)):
        result = run_cli("score", "--contract", TRIAGE, "--gold", "split/test.parquet",
                         "--pred", f"split/p{pred}.jsonl", "--out", f"runs/{name}")  # fmt: skip
        assert result.exit_code == 0, result.stderr
    elsewhere = project / "ci" / "step"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    runs = [project / "runs" / "base", project / "runs" / "cand"]
    assert run_cli("compare", *runs, "--out", project / "cmp").exit_code == 0
    decision = json.loads((project / "cmp" / "report.json").read_text())["decision"]
    assert decision["test_set"]["state"] == "reused" and decision["test_set"]["looks"] == 2
    split = decision["test_split"]
    assert (split["split"], split["n_groups"]) == ("test", 5)
    assert (split["gold_path"], split["manifest"]) == ("split/test.parquet", "split/manifest.json")
    found = read_outputs(runs[1], sha256_file(runs[1] / "summary.json"), ["T3"])
    assert found.note is None and found.outputs["T3"] == json.dumps(GOOD) + " "
    (project / "split" / "p1.jsonl").write_text("")  # changed since scoring: said, not read
    changed = read_outputs(runs[1], sha256_file(runs[1] / "summary.json"), ["T3"])
    assert changed.note == "split/p1.jsonl changed since it was scored"
