"""Suspect gold labels in ``evalkit compare``: planted flips found, chance agreement bounded.

Results are scored by the real ``evalkit score`` from simulated label
outputs: each model is right with some probability, else wrong uniformly
over the other classes, or invalid. Planted label flips are items whose
gold label was changed while every model still answers the true label.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from conftest import CliResult, assert_one_line_error
from scipy import stats

from evalkit import compare, score
from evalkit.report.markdown import render_comparison_markdown

MODELS = ("baseline", "cand-a", "cand-b")


def label_contract(folder: Path, labels: list[str]) -> Path:
    path = folder / "contract.yaml"
    data = {
        "name": "labels",
        "version": 1,
        "id": "item",
        "class": "label",
        "output": {"parse": "label", "extract": "lenient", "labels": labels},
        "fields": {"label": {"gold": "label", "match": "exact"}},
    }
    path.write_text(yaml.safe_dump(data))
    return path


def simulate(
    folder: Path,
    *,
    n: int,
    labels: list[str],
    wrong: float,
    invalid: float,
    flips: int,
    seed: int,
    baseline_invalid_on_flips: float = 0.0,
) -> tuple[list[Path], set[str], dict[str, list[str | None]]]:
    """Score three simulated models; (result folders, planted flip ids, answers per model).

    On a planted flip every model answers the true label, except that the
    baseline's output is invalid with ``baseline_invalid_on_flips``.
    """
    rng = random.Random(seed)
    truth = [rng.choice(labels) for _ in range(n)]
    flipped = set(rng.sample(range(n), flips))
    gold = [
        rng.choice([x for x in labels if x != t]) if i in flipped else t
        for i, t in enumerate(truth)
    ]
    ids = [f"X{i:05d}" for i in range(n)]
    rows = [
        {"item": ids[i], "label": gold[i], "text": f"ticket {i} about {truth[i]} " + "words " * 20}
        for i in range(n)
    ]
    (folder / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    contract = label_contract(folder, labels)
    results, answers = [], {}
    for model in MODELS:
        said: list[str | None] = []
        lines = []
        for i in range(n):
            draw = rng.random()
            if i in flipped:
                answer: str | None = truth[i]  # the models agree on the true label
                if model == "baseline" and draw < baseline_invalid_on_flips:
                    answer = None
            elif draw < invalid:
                answer = None
            elif draw < invalid + wrong:
                answer = rng.choice([x for x in labels if x != truth[i]])
            else:
                answer = truth[i]
            said.append(answer)
            text = answer if answer is not None else "I cannot tell."
            lines.append(json.dumps({"item": ids[i], "output": text}))
        answers[model] = said
        predictions = folder / f"{model}.jsonl"
        predictions.write_text("\n".join(lines) + "\n")
        out = folder / model
        score(contract, folder / "gold.jsonl", predictions, name=model).write(out)
        results.append(out)
    return results, {ids[i] for i in flipped}, answers


EIGHT = ["billing", "shipping", "account", "technical", "returns", "product", "legal", "fraud"]


def test_every_planted_flip_is_found_and_few_others(tmp_path: Path) -> None:
    # 2,000 items, 8 classes; each model 12% wrong and 5% invalid; 20 planted flips.
    results, planted, _ = simulate(
        tmp_path, n=2000, labels=EIGHT, wrong=0.12, invalid=0.05, flips=20, seed=1
    )
    report = compare(*results)
    found = {s.id for s in report.suspect_labels}
    others = found - planted
    check = report.suspect_label_check
    assert check is not None
    # Measured: all 20 planted flips and no other item, where 0.09 were expected by chance.
    assert planted <= found
    assert len(others) == 0
    assert check.expected_by_chance is not None and check.expected_by_chance < 0.15
    assert (check.checked, check.suspects, check.min_agree) == (2000, 20, 3)
    assert sum(check.by_class.values()) == 20 == sum(c.count for c in check.changes)
    first = report.suspect_labels[0]
    assert first.n_agree == 3 and first.gold != first.agreed
    assert first.text is not None and first.text.startswith("ticket ") and first.text.endswith("…")
    assert check.text_column == "text"
    assert "no result's predictions were written by evalkit generate" in check.probability_note


def test_independent_errors_agree_about_as_often_as_chance_predicts(tmp_path: Path) -> None:
    # No flip; three models with independent errors: 3 classes and 40% wrong, so chance
    # agreement is frequent enough to measure: about n·0.4³/2² = 0.016·n items.
    results, planted, answers = simulate(
        tmp_path, n=3000, labels=["a", "b", "c"], wrong=0.4, invalid=0.0, flips=0, seed=2
    )
    assert not planted
    report = compare(*results)
    check = report.suspect_label_check
    assert check is not None and check.expected_by_chance is not None
    # The expectation, computed here from each model's own error rate.
    gold = [
        json.loads(line)["label"] for line in (tmp_path / "gold.jsonl").read_text().splitlines()
    ]
    rates = [
        sum(a is not None and a != g for a, g in zip(said, gold, strict=True)) / len(gold)
        for said in answers.values()
    ]
    expected = len(gold) * rates[0] * rates[1] * rates[2] / 2**2
    assert check.expected_by_chance == pytest.approx(expected)
    # Observed within the Poisson 99.99% band of the expectation (measured: 49, expected 48.0).
    low, high = stats.poisson.ppf([1e-4, 1 - 1e-4], expected)
    assert low <= check.suspects <= high


def test_realistic_independent_errors_give_few_suspects(tmp_path: Path) -> None:
    results, _, _ = simulate(
        tmp_path, n=2000, labels=EIGHT, wrong=0.12, invalid=0.05, flips=0, seed=3
    )
    report = compare(*results)
    check = report.suspect_label_check
    assert check is not None and check.expected_by_chance is not None
    # Measured: none, where 0.07 were expected; bounded by the Poisson 1 - 1e-6 quantile.
    bound = stats.poisson.ppf(1 - 1e-6, check.expected_by_chance)
    assert check.suspects <= bound <= 3


def test_invalid_outputs_abstain_with_a_lower_min_agree(tmp_path: Path) -> None:
    results, planted, answers = simulate(
        tmp_path,
        n=600,
        labels=EIGHT,
        wrong=0.1,
        invalid=0.3,
        flips=30,
        seed=4,
        baseline_invalid_on_flips=0.5,
    )
    strict = compare(*results)
    loose = compare(*results, suspect_min_agree=2)
    strict_ids = {s.id for s in strict.suspect_labels}
    loose_ids = {s.id for s in loose.suspect_labels}
    # Where the baseline's output is invalid it abstains: those flips need min_agree 2.
    assert strict_ids <= loose_ids and planted <= loose_ids
    assert len(planted - strict_ids) > 5
    agreeing = [s.n_agree for s in loose.suspect_labels]
    assert agreeing == sorted(agreeing, reverse=True)
    assert loose.suspect_label_check is not None
    assert loose.suspect_label_check.expected_by_chance is None
    assert any(n == 2 for n in agreeing)
    for suspect in loose.suspect_labels:
        index = int(suspect.id[1:])
        valid = [said[index] for said in answers.values() if said[index] is not None]
        assert len(valid) == suspect.n_agree and set(valid) == {suspect.agreed}


def test_the_reports_show_the_suspects_as_a_hint(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    results, planted, _ = simulate(
        tmp_path, n=300, labels=EIGHT, wrong=0.1, invalid=0.05, flips=3, seed=5
    )
    out = tmp_path / "report"
    done = run_cli("compare", *results, "--out", out)
    assert done.exit_code == 0, done.stderr
    line = next(x for x in done.stdout.splitlines() if x.startswith("Suspect gold labels:"))
    assert line.startswith("Suspect gold labels: 3 of 300 items, where all 3 results give the same")
    assert "never a verdict" in line
    data = json.loads((out / "report.json").read_text())
    assert [s["id"] for s in data["suspect_labels"]] == sorted(planted)
    assert set(data["suspect_labels"][0]) >= {"id", "gold", "agreed", "n_agree", "text"}
    markdown = (out / "report.md").read_text()
    assert "## Suspect gold labels" in markdown and "never a verdict" in markdown
    assert all(f"`{i}`" in markdown for i in planted)
    html = (out / "report.html").read_text()
    assert "Suspect gold labels" in html and all(i in html for i in planted)
    report = compare(*results)
    assert render_comparison_markdown(report) == markdown


def test_no_class_column_means_no_check(tmp_path: Path) -> None:
    rows = [{"item": f"X{i}", "answer": "yes"} for i in range(20)]
    (tmp_path / "gold.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    contract = tmp_path / "contract.yaml"
    contract.write_text(
        yaml.safe_dump(
            {
                "name": "noclass",
                "version": 1,
                "id": "item",
                "output": {"parse": "label", "labels": ["yes", "no"]},
                "fields": {"answer": {"gold": "answer"}},
            }
        )
    )
    results = []
    for model in MODELS[:2]:
        predictions = tmp_path / f"{model}.jsonl"
        predictions.write_text(
            "".join(json.dumps({"item": r["item"], "output": "no"}) + "\n" for r in rows)
        )
        score(contract, tmp_path / "gold.jsonl", predictions, name=model).write(tmp_path / model)
        results.append(tmp_path / model)
    report = compare(*results)
    check = report.suspect_label_check
    assert check is not None and check.field is None and report.suspect_labels == []
    assert check.note is not None and "names no class column" in check.note


def test_bad_options_are_one_line_errors(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    results, _, _ = simulate(
        tmp_path, n=100, labels=EIGHT, wrong=0.1, invalid=0.05, flips=2, seed=6
    )
    too_many = run_cli("compare", *results, "--suspect-min-agree", "4")
    assert_one_line_error(too_many, "--suspect-min-agree 4", "from 2 to the 3 results")
    no_column = run_cli("compare", *results, "--text", "body")
    assert_one_line_error(no_column, "gold.jsonl: no column 'body' (--text)")
