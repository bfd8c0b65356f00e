"""``evalkit.score`` against an independent computation and scikit-learn."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import precision_recall_fscore_support

from evalkit import score
from evalkit.errors import DuplicateIds, InvalidContract

ROOT = Path(__file__).resolve().parents[1]
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"
CLASSES = ["billing", "shipping", "account", "legal_threat"]
PRIORITIES = ["low", "normal", "high", "urgent"]
KINDS = ["plain", "plain", "plain", "fenced", "prose", "truncated", "missing", "no_json",
         "schema_enum", "empty"]  # fmt: skip


def _gold(n: int, rng: random.Random) -> list[dict[str, Any]]:
    rows = []
    for i in range(n):
        category = rng.choice(CLASSES[:3]) if i % 12 else "legal_threat"
        has_order = rng.random() < 0.5
        rows.append({
            "ticket_id": f"T{i:04d}",
            "category": category,
            "priority": rng.choice(PRIORITIES),
            "order_id": f"ORD-{rng.randrange(10**6):06d}" if has_order else None,
            "amount": round(rng.uniform(1, 300), 2) if has_order and rng.random() < 0.6 else None,
        })  # fmt: skip
    return rows


def _plan(item: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """What one simulated model answers for one item, and the verdict we expect for it."""
    kind = rng.choice(KINDS)
    category = item["category"] if rng.random() < 0.75 else rng.choice(CLASSES)
    priority = item["priority"] if rng.random() < 0.85 else rng.choice(PRIORITIES)
    answer: dict[str, Any] = {"category": category, "priority": priority}
    order_match = True
    if item["order_id"] is None:
        if rng.random() < 0.2:
            answer["order_id"], order_match = "ORD-000001", False
        elif rng.random() < 0.5:
            answer["order_id"] = None
    else:
        roll = rng.random()
        if roll < 0.3:
            answer["order_id"] = item["order_id"].lower()  # matches: normalized
        elif roll < 0.4:
            answer["order_id"], order_match = None, False
        else:
            answer["order_id"] = item["order_id"]
    amount_match = True
    if item["amount"] is not None:
        roll = rng.random()
        if roll < 0.3:
            answer["amount"] = round(item["amount"] + 0.005, 3)
        elif roll < 0.4:
            answer["amount"], amount_match = item["amount"] + 1, False
        else:
            answer["amount"] = item["amount"]
    elif rng.random() < 0.1:
        answer["amount"], amount_match = 5.0, False
    return {
        "kind": kind, "answer": answer,
        "match": {
            "category": category == item["category"], "priority": priority == item["priority"],
            "order_id": order_match, "amount": amount_match,
        },
    }  # fmt: skip


def _render(plan: dict[str, Any]) -> str | None:
    text = json.dumps(plan["answer"])
    return {
        "plain": text,
        "fenced": f"```json\n{json.dumps(plan['answer'], indent=2)}\n```",
        "prose": f"Here it is: {text} -- done",
        "truncated": text[:-3],
        "missing": None,
        "no_json": "It is about billing.",
        "schema_enum": json.dumps({**plan["answer"], "priority": "critical"}),
        "empty": "   ",
    }[plan["kind"]]


EXPECTED_ERROR = {"plain": None, "fenced": None, "prose": None, "truncated": "invalid_json",
                  "missing": "missing", "no_json": "no_json", "schema_enum": "schema:enum",
                  "empty": "empty"}  # fmt: skip


@pytest.fixture(scope="module")
def scored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rng = random.Random(5)
    folder = tmp_path_factory.mktemp("engine")
    gold = _gold(240, rng)
    plans = {item["ticket_id"]: _plan(item, rng) for item in gold}
    pl.DataFrame(gold).write_parquet(folder / "gold.parquet")
    records = [
        {"ticket_id": tid, "output": _render(plan)}
        for tid, plan in plans.items()
        if plan["kind"] != "missing"
    ] + [{"ticket_id": "ZZ-unknown", "output": "{}"}, {"ticket_id": "AA-unknown", "output": ""}]
    rng.shuffle(records)
    with (folder / "pred.jsonl").open("w") as handle:
        handle.writelines(json.dumps(r) + "\n" for r in records)
    result = score(TRIAGE, folder / "gold.parquet", folder / "pred.jsonl", name="sim")
    return {"gold": gold, "plans": plans, "result": result, "folder": folder}


def _expected_rows(gold: list[dict], plans: dict[str, dict]) -> list[dict[str, Any]]:
    rows = []
    for item in sorted(gold, key=lambda row: row["ticket_id"]):
        plan = plans[item["ticket_id"]]
        error = EXPECTED_ERROR[plan["kind"]]
        valid = error is None
        matches = {name: valid and ok for name, ok in plan["match"].items()}
        rows.append({
            "id": item["ticket_id"], "class": item["category"], "error": error,
            "format_valid": valid, "matches": matches,
            "content_correct": valid and all(matches.values()),
            "predicted_class": plan["answer"]["category"] if valid else None,
            "no_order": item["order_id"] is None,
        })  # fmt: skip
    return rows


def _rates(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    valid = sum(r["format_valid"] for r in rows)
    correct = sum(r["content_correct"] for r in rows)
    return {
        "n": n, "missing": sum(r["error"] == "missing" for r in rows),
        "format_valid": valid, "format_validity": valid / n if n else None,
        "content_correct": correct, "content_accuracy": correct / n if n else None,
        "content_accuracy_given_valid": correct / valid if valid else None,
    }  # fmt: skip


def test_examples_match_the_independent_verdicts(scored: dict[str, Any]) -> None:
    examples = scored["result"].examples
    expected = _expected_rows(scored["gold"], scored["plans"])
    assert examples["id"].to_list() == [r["id"] for r in expected]
    assert examples["error"].to_list() == [r["error"] for r in expected]
    assert examples["format_valid"].to_list() == [r["format_valid"] for r in expected]
    assert examples["content_correct"].to_list() == [r["content_correct"] for r in expected]
    assert examples["predicted_class"].to_list() == [r["predicted_class"] for r in expected]
    for field in ("category", "priority", "order_id", "amount"):
        assert examples[f"match.{field}"].to_list() == [r["matches"][field] for r in expected]
    assert examples["slice.no-order-id"].to_list() == [r["no_order"] for r in expected]


def test_summary_figures_agree_exactly(scored: dict[str, Any]) -> None:
    summary = scored["result"].summary
    expected = _expected_rows(scored["gold"], scored["plans"])
    assert summary.overall.model_dump() == _rates(expected)
    assert summary.slices["no-order-id"].model_dump() == _rates(
        [r for r in expected if r["no_order"]]
    )
    for field, stats in summary.fields.items():
        matched = sum(r["matches"][field] for r in expected)
        valid = sum(r["format_valid"] for r in expected)
        assert (stats.matched, stats.accuracy, stats.accuracy_given_valid) == (
            matched, matched / len(expected), matched / valid,
        )  # fmt: skip
    for label, stats in summary.classes.items():
        members = [r for r in expected if r["class"] == label]
        assert {k: v for k, v in stats.model_dump().items() if k in _rates([])} == _rates(members)
        assert stats.support == len(members)
        assert stats.rare == (len(members) <= 10)
        assert stats.predicted == sum(r["predicted_class"] == label for r in expected)
    errors = {}
    for row in expected:
        if row["error"]:
            count, first = errors.get(row["error"], (0, row["id"]))
            errors[row["error"]] = (count + 1, min(first, row["id"]))
    assert {k: (v.count, v.example_id) for k, v in summary.errors.items()} == errors
    assert list(summary.errors) == sorted(errors)
    assert summary.predictions.unknown_ids == 2
    assert summary.predictions.unknown_id_example == "AA-unknown"


def test_precision_recall_f1_agree_with_scikit_learn(scored: dict[str, Any]) -> None:
    summary = scored["result"].summary
    examples = scored["result"].examples
    labels = sorted(summary.classes)
    y_true = examples["class"].to_list()
    y_pred = [p if p is not None else "<no prediction>" for p in examples["predicted_class"]]
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, zero_division=0
    )
    for index, label in enumerate(labels):
        stats = summary.classes[label]
        assert stats.precision == pytest.approx(precision[index], abs=1e-12)
        assert stats.recall == pytest.approx(recall[index], abs=1e-12)
        assert stats.f1 == pytest.approx(f1[index], abs=1e-12)
        assert stats.support == support[index]


def test_summary_can_be_recomputed_from_the_written_examples(scored: dict[str, Any]) -> None:
    out = scored["folder"] / "out"
    scored["result"].write(out)
    examples = pl.read_parquet(out / "examples.parquet").to_dicts()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["overall"] == _rates(examples)
    assert summary["contract"]["normalized"]["gate"]["vs_baseline"]["max_rare_class_drop"] == 0.2
    assert summary["gold"]["n"] == len(examples) == 240
    assert summary["format_version"] == 1


def test_outputs_are_byte_identical_whatever_the_row_order(scored, tmp_path: Path) -> None:
    folder = scored["folder"]
    lines = (folder / "pred.jsonl").read_text().splitlines(keepends=True)
    random.Random(1).shuffle(lines)
    (tmp_path / "pred.jsonl").write_text("".join(lines))
    gold = pl.read_parquet(folder / "gold.parquet").sample(fraction=1.0, shuffle=True, seed=3)
    gold.write_parquet(tmp_path / "gold.parquet")
    again = score(TRIAGE, tmp_path / "gold.parquet", tmp_path / "pred.jsonl", name="sim")
    scored["result"].write(tmp_path / "first")
    again.write(tmp_path / "second")
    assert (tmp_path / "first" / "examples.parquet").read_bytes() == (
        tmp_path / "second" / "examples.parquet"
    ).read_bytes()
    first = json.loads((tmp_path / "first" / "summary.json").read_text())
    second = json.loads((tmp_path / "second" / "summary.json").read_text())
    for summary in (first, second):
        summary["gold"].pop("path"), summary["gold"].pop("sha256")
        summary["predictions"].pop("path"), summary["predictions"].pop("sha256")
        summary.pop("ledger"), summary.pop("look")  # each gold file has its own ledger
    assert first == second


def write_case(tmp_path: Path, contract: dict, gold: list[dict], outputs: dict[str, Any]) -> Path:
    (tmp_path / "c.json").write_text(
        json.dumps({"name": "t", "version": 1, "id": "id", **contract})
    )
    pl.DataFrame(gold).write_parquet(tmp_path / "gold.parquet")
    with (tmp_path / "pred.jsonl").open("w") as handle:
        for key, output in outputs.items():
            handle.write(json.dumps({"id": key, "output": output}) + "\n")
    return tmp_path


def run_case(tmp_path: Path, **options: Any) -> Any:
    return score(tmp_path / "c.json", tmp_path / "gold.parquet", tmp_path / "pred.jsonl", **options)


def test_matchers_and_null_expectations(tmp_path: Path) -> None:
    contract = {"fields": {
        "name": {"gold": "name", "match": "normalized"},
        "code": {"gold": "code", "match": "exact"},
        "price": {"gold": "price", "match": "number", "tolerance": 0.01},
    }}  # fmt: skip
    gold = [
        {"id": "a", "name": "Ｏｒｄ  Ａｂｃ", "code": "1", "price": 12.34},
        {"id": "b", "name": "Straße", "code": "1", "price": 12.34},
        {"id": "c", "name": None, "code": None, "price": None},
        {"id": "d", "name": None, "code": None, "price": None},
        {"id": "e", "name": "x", "code": "1", "price": 12.34},
    ]
    outputs = {
        "a": json.dumps({"name": "ord abc", "code": "1", "price": 12.33}),  # boundary: matches
        "b": json.dumps({"name": "STRASSE", "code": 1, "price": 12.32}),
        "c": json.dumps({"name": None}),
        "d": json.dumps({"name": "", "code": "null", "price": 0}),
        "e": json.dumps({"name": " X ", "code": "1", "price": "12.34"}),
    }
    examples = run_case(write_case(tmp_path, contract, gold, outputs)).examples
    assert examples["match.name"].to_list() == [True, False, True, False, True]
    assert examples["match.code"].to_list() == [True, False, True, False, True]
    assert examples["match.price"].to_list() == [True, False, True, False, False]


def test_set_fields_report_f1(tmp_path: Path) -> None:
    contract = {"fields": {
        "tags": {"gold": "tags", "match": "set"},
        "loose": {"gold": "tags", "match": "set", "min_f1": 0.5},
    }}  # fmt: skip
    gold = [{"id": i, "tags": tags} for i, tags in
            [("a", ["x", "y"]), ("b", ["x", "y"]), ("c", []), ("d", ["x"])]]  # fmt: skip
    outputs = {
        "a": json.dumps({"tags": ["y", "x", "x"], "loose": ["y", "x"]}),
        "b": json.dumps({"tags": ["x", "z"], "loose": ["x", "z"]}),
        "c": json.dumps({"tags": [], "loose": ["q"]}),
        "d": json.dumps({"tags": "x", "loose": ["x", "q", "r"]}),
    }
    result = run_case(write_case(tmp_path, contract, gold, outputs))
    examples = result.examples
    assert examples["f1.tags"].to_list() == [1.0, 0.5, 1.0, None]
    assert examples["match.tags"].to_list() == [True, False, True, False]
    assert examples["match.loose"].to_list() == [True, True, False, True]
    assert result.summary.fields["tags"].mean_f1 == pytest.approx((1.0 + 0.5 + 1.0 + 0.0) / 4)


def test_label_contract(tmp_path: Path) -> None:
    labels = ["billing", "legal_threat"]
    contract = {"class": "category", "output": {"parse": "label", "labels": labels},
                "fields": {"label": {"gold": "category"}}}  # fmt: skip
    gold = [
        {"id": f"i{n}", "category": c} for n, c in enumerate(["billing"] * 5 + ["legal_threat"])
    ]
    outputs = {"i0": "billing", "i1": " Billing.\n", "i2": "`billing`", "i3": "refund",
               "i4": "  ", "i5": "**Legal_Threat**"}  # fmt: skip
    result = run_case(write_case(tmp_path, contract, gold, outputs))
    assert result.examples["error"].to_list() == [None, None, None, "unknown_label", "empty", None]
    assert result.examples["predicted_class"].to_list() == [
        "billing", "billing", "billing", None, None, "legal_threat",
    ]  # fmt: skip
    strict = {**contract, "output": {"parse": "label", "extract": "strict", "labels": labels}}
    result = run_case(write_case(tmp_path, strict, gold, outputs))
    assert result.examples["error"].to_list()[:3] == [None, "unknown_label", "unknown_label"]


def test_correct_subset_and_slices(tmp_path: Path) -> None:
    contract = {
        "class": "category",
        "fields": {"category": {"gold": "category"}, "note": {"gold": "note"}},
        "correct": ["category"],
        "slices": [
            {"name": "billing-or-none", "where": {"category": ["billing", None]}},
            {"name": "not-billing", "where": {"category": {"not": "billing"}}},
        ],
    }
    gold = [{"id": "a", "category": "billing", "note": "x"},
            {"id": "b", "category": None, "note": "x"},
            {"id": "c", "category": "shipping", "note": "x"}]  # fmt: skip
    outputs = {key: json.dumps({"category": "billing", "note": "y"}) for key in "abc"}
    result = run_case(write_case(tmp_path, contract, gold, outputs))
    assert result.examples["content_correct"].to_list() == [True, False, False]
    assert result.examples["slice.billing-or-none"].to_list() == [True, True, False]
    assert result.examples["slice.not-billing"].to_list() == [False, True, True]
    assert list(result.summary.classes) == ["billing", "shipping"]


def test_duplicate_prediction_ids(tmp_path: Path) -> None:
    contract = {"fields": {"v": {"gold": "v"}}}
    write_case(tmp_path, contract, [{"id": "a", "v": "1"}], {})
    (tmp_path / "pred.jsonl").write_text(
        '{"id": "a", "output": "{\\"v\\": \\"1\\"}"}\n{"id": "a", "output": "{\\"v\\": \\"2\\"}"}\n'
    )
    with pytest.raises(
        DuplicateIds, match=r"id 'a' has 2 predictions .* or pass on_duplicate first\|last$"
    ):
        run_case(tmp_path)
    first = run_case(tmp_path, on_duplicate="first")
    last = run_case(tmp_path, on_duplicate="last")
    assert first.examples["content_correct"].to_list() == [True]
    assert last.examples["content_correct"].to_list() == [False]
    assert first.summary.predictions.duplicate_ids == 1


def test_rules_that_cannot_apply_to_the_gold_column(tmp_path: Path) -> None:
    gold = [{"id": "a", "name": "x", "code": "1"}]
    number = {"fields": {"name": {"gold": "name", "match": "number", "tolerance": 0.1}}}
    with pytest.raises(InvalidContract, match=r"fields.name: match: number compares numbers.*'x'"):
        run_case(write_case(tmp_path, number, gold, {"a": "{}"}))
    sliced = {"fields": {"name": {"gold": "name"}},
              "slices": [{"name": "s", "where": {"code": 5}}]}  # fmt: skip
    with pytest.raises(InvalidContract, match=r"slices\[0\] \(s\): where.code: 5 is integer"):
        run_case(write_case(tmp_path, sliced, gold, {"a": "{}"}))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 40), max_size=30, unique=True),
    st.lists(st.integers(0, 40), max_size=30, unique=True),
    st.booleans(),
)
def test_binary_search_and_hash_join_align_ids_alike(gold_ids, pred_ids, sort_both) -> None:
    from evalkit.scoring.engine import _prediction_rows

    gold = pl.Series([f"g{i:03d}" for i in gold_ids], dtype=pl.String)
    preds = pl.Series([f"g{i:03d}" for i in pred_ids], dtype=pl.String)
    if sort_both:
        gold, preds = gold.sort(), preds.sort()
    row_of = {value: row for row, value in enumerate(preds.to_list())}
    expected = [row_of.get(value) for value in gold.to_list()]
    assert _prediction_rows(gold, preds).to_list() == expected


def _children() -> set[int]:
    """The live child processes of this process (Linux: /proc), not zombies."""
    found = set()
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            status = Path(f"/proc/{pid}/status")
            if status.exists() and "State:\tZ" not in status.read_text():
                found.add(int(pid))
    return found


def test_an_error_after_the_workers_started_stops_them_at_once(tmp_path: Path) -> None:
    contract = {"fields": {"v": {"gold": "v"}}}
    outputs = {f"i{n:04d}": json.dumps({"v": "1"}) for n in range(2000)}
    write_case(tmp_path, contract, [{"id": "i0000", "v": "1"}], outputs)
    with (tmp_path / "pred.jsonl").open("a") as handle:
        handle.write(json.dumps({"id": "i0000", "output": "{}"}) + "\n")
    before = _children()
    with pytest.raises(DuplicateIds):
        run_case(tmp_path, workers=2)
    # Stopped, not left to finish: no parsing process outlives the error.
    assert _children() <= before
    assert run_case(tmp_path, workers=2, on_duplicate="first").summary.overall.content_correct == 1
