"""report.html: self-contained, deterministic, complete, escaped and small.

The page is parsed with the standard library's HTML parser (every tag,
attribute and text node), not searched as a string, so a reference hidden in
an attribute or a class shown only in a tooltip does not pass unnoticed.
"""

from __future__ import annotations

import random
import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import assert_one_line_error
from scored_results import contract, result_in_memory
from simulated_runs import CLASSES, CONTRACT, scored_run

from evalkit import ComparisonReport, compare, gate, score
from evalkit.comparison.outputs import FlipOutputs, SideOutputs, wanted_ids
from evalkit.report.html.candidate import render_candidate_html
from evalkit.report.html.compare import render_comparison_html
from evalkit.report.html.page import Section, escape, page, table
from evalkit.report.html.score import render_score_html

RARE = {label for label, count in CLASSES if count <= 10}


class Parsed(HTMLParser):
    """Every start tag with its attributes, every text node, the contents of <style>."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.texts: list[str] = []
        self.styles: list[str] = []
        self._in_style = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        (self.styles if self._in_style else self.texts).append(data)


def assert_self_contained(text: str) -> None:
    parsed = Parsed(text)
    names = {tag for tag, _ in parsed.tags}
    assert not names & {"script", "link", "iframe", "img", "object", "embed", "base", "audio"}
    for tag, attrs in parsed.tags:
        for name, value in attrs.items():
            if name in ("src", "href", "xlink:href", "action", "srcset", "poster"):
                assert value is not None and value.startswith("#"), (tag, name, value)
            assert not name.startswith("on"), (tag, name)  # no event handler
            if name == "style":
                assert "url(" not in (value or "")
    for style in parsed.styles:
        assert "@import" not in style and "url(" not in style
    csp = [a["content"] for t, a in parsed.tags if t == "meta" and "http-equiv" in a]
    assert csp and "default-src 'none'" in (csp[0] or "")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("html-runs")
    return {
        "baseline": scored_run(folder, "baseline", seed=1, error_rate=0.4, cli=True),
        "candidate-a": scored_run(folder, "candidate-a", seed=2, error_rate=0.2),
        "candidate-b": scored_run(folder, "candidate-b", seed=3, error_rate=0.3),
    }


@pytest.fixture(scope="module")
def compare_page(runs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> str:
    from evalkit.cli import main

    out = tmp_path_factory.mktemp("html-out") / "reports"
    with pytest.raises(SystemExit):
        main(["compare", str(runs["baseline"]), str(runs["candidate-a"]),
              str(runs["candidate-b"]), "--out", str(out), "--resamples", "500"])  # fmt: skip
    return (out / "report.html").read_text()


def test_compare_page_is_self_contained(compare_page: str) -> None:
    assert_self_contained(compare_page)


def test_score_page_is_self_contained(runs: dict[str, Path]) -> None:
    assert_self_contained((runs["baseline"] / "report.html").read_text())


def test_the_checker_catches_an_external_reference() -> None:
    good = page("t", [Section("s", table(["a"], [["b"]]))])
    assert_self_contained(good)
    for bad in ('<img src="https://example.com/x.png">', '<a href="http://example.com">x</a>',
                "<style>@import 'https://example.com/a.css';</style>",
                '<div style="background:url(https://example.com/x)"></div>',
                "<script>fetch('/')</script>"):  # fmt: skip
        with pytest.raises(AssertionError):
            assert_self_contained(good.replace("<main>", "<main>" + bad))


def test_compare_page_is_byte_identical_for_the_same_inputs(
    runs: dict[str, Path], run_cli, tmp_path: Path
) -> None:
    pages = []
    for name in ("one", "two"):
        out = tmp_path / name
        args = ["compare", runs["baseline"], runs["candidate-b"], runs["candidate-a"]]
        assert run_cli(*args, "--out", out, "--resamples", 300).exit_code == 0
        pages.append((out / "report.html").read_bytes())
    assert pages[0] == pages[1]


def test_score_page_is_byte_identical_for_the_same_inputs(runs: dict[str, Path]) -> None:
    folder = runs["baseline"].parent
    pages = [
        render_score_html(
            score(CONTRACT, folder / "gold.jsonl", folder / "baseline.jsonl", name="b").summary
        ).encode()
        for _ in range(2)
    ]
    assert pages[0] == pages[1]


def svg_texts(text: str) -> list[str]:
    """The text content of every SVG <text> element (labels stay text, not paths)."""
    texts = []
    for svg in re.findall(r"<svg.*?</svg>", text, flags=re.S):
        root = ET.fromstring(svg)
        texts += [
            "".join(node.itertext()) for node in root.iter("{http://www.w3.org/2000/svg}text")
        ]
    return texts


def test_every_class_is_named_in_text_and_rare_ones_are_marked(compare_page: str) -> None:
    labels = svg_texts(compare_page)
    for label, _ in CLASSES:
        expected = f"{label} rare" if label in RARE else label
        assert expected in labels, label
    rows = re.findall(r"<tr><td>(.*?)</td>", compare_page)
    for label, _ in CLASSES:
        cells = [row for row in rows if row.startswith(label)]
        assert cells, label
        assert all(('class="badge rare"' in row) == (label in RARE) for row in cells), label


def test_the_verdict_and_failures_lead_the_page(runs: dict[str, Path], tmp_path: Path) -> None:
    report = gate(runs["baseline"], runs["candidate-b"], resamples=300)
    text = render_candidate_html(report)
    verdict = re.search(r'<div class="verdict (pass|fail)">(.*?)</div>', text, flags=re.S)
    assert verdict is not None
    assert verdict.group(1) == report.verdict
    assert ("✓ PASS" if report.verdict == "pass" else "✗ FAIL") in verdict.group(2)
    assert verdict.start() < text.index("<section>")  # before any chart
    for failure in report.failures:
        assert escape(failure.scope) in verdict.group(2) and failure.rule in verdict.group(2)


def test_a_failing_rare_class_is_highlighted() -> None:
    classes = ["billing"] * 40 + ["legal_threat"] * 6
    ids = [f"T{i:03d}" for i in range(len(classes))]
    base = result_in_memory("baseline", ids=ids, classes=classes, correct=[True] * len(ids))
    broken = [c != "legal_threat" for c in classes]
    cand = result_in_memory("candidate", ids=ids, classes=classes, correct=broken)
    report = gate(base, cand, resamples=300)
    assert "class:legal_threat" in [f.scope for f in report.failures]
    text = render_candidate_html(report)
    assert "✗ FAIL" in text and "max_rare_class_drop" in text
    assert re.search(r'<tr class="fail"><td>legal_threat <span class="badge rare">', text)
    assert 'class="band-fail"' in text  # the shaded row of the chart
    assert any(t.endswith("✗ max_rare_class_drop") for t in svg_texts(text))


def test_outputs_and_labels_are_escaped() -> None:
    classes = ["<b>bold</b>"] * 20 + ["a&b"] * 20
    ids = [f"T{i:03d}" for i in range(len(classes))]
    base = result_in_memory("baseline", ids=ids, classes=classes, correct=[True] * 40)
    cand = result_in_memory("candidate", ids=ids, classes=classes,
                            correct=[i % 4 != 0 for i in range(40)])  # fmt: skip
    report = gate(base, cand, resamples=300)
    hostile = "<script>alert(1)</script></pre><img src=x onerror=alert(2)>"
    outputs = {i: hostile for i in wanted_ids(report)}
    found = FlipOutputs(
        baseline=SideOutputs(outputs=outputs, note=None),
        candidate=SideOutputs(outputs=outputs, note=None),
    )
    text = render_candidate_html(report, found)
    assert "<script" not in text and "<b>bold" not in text and "<img" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;b&gt;bold&lt;/b&gt;" in text
    assert_self_contained(text)
    svg_texts(text)  # every SVG still parses as XML


def fifty_class_results(candidates: int) -> list:
    rng = random.Random(5)
    labels = [f"class_{i:02d}_{'x' * (i % 17)}" for i in range(50)]
    classes = [label for i, label in enumerate(labels) for _ in range(4 if i % 5 == 0 else 30)]
    ids = [f"T{i:05d}" for i in range(len(classes))]
    results = []
    for number in range(candidates + 1):
        predicted = [c if rng.random() > 0.3 else rng.choice(labels) for c in classes]
        valid = [rng.random() > 0.1 for _ in classes]
        errors = [None if v else rng.choice(["no_json", "invalid_json", "schema:enum"])
                  for v in valid]  # fmt: skip
        correct = [p == c and v for p, c, v in zip(predicted, classes, valid, strict=True)]
        results.append(result_in_memory(f"run-{number}", ids=ids, classes=classes,
                                        correct=correct, valid=valid, errors=errors,
                                        predicted=predicted, normalized=contract()))  # fmt: skip
    return results


def long_outputs(report: ComparisonReport) -> dict[str, FlipOutputs]:
    """A 3,000-character output for every example the page shows: its largest case."""
    text = '{"category": "' + "y" * 3000 + '"}'
    outputs = {}
    for candidate in report.candidates:
        side = SideOutputs(outputs=dict.fromkeys(wanted_ids(candidate), text), note=None)
        outputs[candidate.candidate.name] = FlipOutputs(baseline=side, candidate=side)
    return outputs


def test_a_fifty_class_comparison_page_stays_under_one_megabyte() -> None:
    baseline, *candidates = fifty_class_results(3)
    report = compare(baseline, *candidates, resamples=200)
    text = render_comparison_html(report, long_outputs(report))
    size = len(text.encode("utf-8"))
    assert size < 1_000_000, size
    assert len(report.classes) == 50 and len(report.candidates) == 3
    for label in report.classes:
        assert label in text
    assert_self_contained(text)


HOSTILE_LABELS = [
    "<script>x</script>", "a & b \"q\" 's'", "ünïcødé — 日本語 ✓", "שלום عربى", "e\u0301\u200b",
    "😀 👩\u200d👩\u200d👧", "x" * 300, "]]><![CDATA[", "</svg><img src=x>", "&amp;already",
]  # fmt: skip


def test_fifty_hostile_class_names_and_outputs_are_escaped_small_and_stable() -> None:
    rng = random.Random(3)
    labels = HOSTILE_LABELS + [f"class_{i:02d}" for i in range(50 - len(HOSTILE_LABELS))]
    classes = [label for i, label in enumerate(labels) for _ in range(4 if i % 5 == 0 else 25)]
    ids = [f'T<{i:04d}>&"' for i in range(len(classes))]
    results = []
    for number in range(3):
        predicted = [c if rng.random() > 0.3 else rng.choice(labels) for c in classes]
        correct = [p == c for p, c in zip(predicted, classes, strict=True)]
        results.append(result_in_memory(f"run-<{number}>&", ids=ids, classes=classes,
                                        correct=correct, predicted=predicted))  # fmt: skip
    hostile = "<script>alert(1)</script>\u202e\x00\x1b[31m\x7f 日本 " + "z" * 3000
    pages = []
    for _ in range(2):
        report = compare(*results, resamples=200)
        side = {c.candidate.name: SideOutputs(outputs=dict.fromkeys(wanted_ids(c), hostile),
                                              note=None) for c in report.candidates}  # fmt: skip
        found = {name: FlipOutputs(baseline=s, candidate=s) for name, s in side.items()}
        pages.append(render_comparison_html(report, found))
    text = pages[0]
    assert pages[0].encode() == pages[1].encode()
    assert len(text.encode("utf-8")) < 1_000_000
    assert_self_contained(text)
    assert "<script" not in text and "<img" not in text
    assert not re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text)  # shown as ␀ ␛ ␡
    assert "␀␛[31m␡ 日本" in text
    svg_texts(text)  # every SVG still parses as XML
    shown = set(Parsed(text).texts)
    for label in labels:
        assert any(label in piece for piece in shown), label
    assert any('T<0000>&"' in piece for piece in shown)


def test_gate_writes_html_and_refuses_to_overwrite(
    run_cli, runs: dict[str, Path], tmp_path: Path
) -> None:
    target = tmp_path / "gate.html"
    result = run_cli("gate", runs["baseline"], runs["candidate-a"], "--html", target,
                     "--resamples", 300)  # fmt: skip
    assert result.exit_code in (0, 1), result.stderr
    assert f"wrote {target}" in result.stdout
    text = target.read_text()
    assert text.startswith("<!doctype html>") and "evalkit gate: candidate-a vs baseline" in text
    assert_self_contained(text)
    again = run_cli("gate", runs["baseline"], runs["candidate-a"], "--html", target)
    assert_one_line_error(again, "gate.html", "--force")


def test_compare_page_shows_both_outputs_of_a_flip(
    compare_page: str, runs: dict[str, Path]
) -> None:
    report = gate(runs["baseline"], runs["candidate-a"], resamples=500)
    flip = next(f for f in report.flips if f.direction == "negative")
    row = re.search(rf"<tr><td><code>{flip.id}</code>.*?</tr>", compare_page, flags=re.S)
    assert row is not None
    assert row.group(0).count("<pre>") + row.group(0).count("(no prediction)") == 2


def test_score_page_shows_the_summary_figures(runs: dict[str, Path]) -> None:
    import json

    summary = json.loads((runs["baseline"] / "summary.json").read_text())
    text = (runs["baseline"] / "report.html").read_text()
    assert f"{summary['overall']['content_accuracy']:.3f}" in text
    assert f"{summary['overall']['format_validity']:.3f}" in text
    for category, stats in summary["errors"].items():
        assert category in text and stats["example_id"] in text
        assert escape(stats["example_detail"]) in text
    labels = svg_texts(text)
    for label in summary["classes"]:
        assert (f"{label} rare" if label in RARE else label) in labels
    assert "Confusion matrix" in text and "product_question" in labels


def test_text_widths_count_wide_narrow_and_zero_width_characters() -> None:
    from evalkit.report.html.svg import fit, text_width

    assert text_width("ab") == pytest.approx(2 * 6.8)
    assert text_width("日本") == pytest.approx(24.0)  # a CJK ideograph takes a full em
    assert text_width("😀") == pytest.approx(12.0)
    assert text_width("e\u0301\u200b") == pytest.approx(6.8)  # combining accent, zero width
    assert text_width("AB") == pytest.approx(18.0) and text_width("WШ") == pytest.approx(24.0)
    assert text_width("ab", 10.0, bold=True) == pytest.approx(2 * 6.8 * 10 / 12 * 1.1)
    assert fit("abc", 100) == "abc"
    cut = fit("日" * 30, 100)
    assert cut == "日" * 7 + "…" and text_width(cut) <= 100


def test_a_wide_class_label_gets_the_margin_it_needs_or_is_cut_to_fit() -> None:
    from evalkit.report.html.charts import Estimate, IntervalPanel, Row, interval_chart
    from evalkit.report.html.svg import text_width

    def margin_and_label(label: str) -> tuple[float, str]:
        """The x the row labels end at, and the first row's label as drawn (no tooltip)."""
        rows = [Row(label, rare=True), Row("billing")]
        panel = IntervalPanel("c", [Estimate(0.1, (0.0, 0.2), failed="rule"), Estimate(0.0)])
        svg = str(interval_chart(rows, [panel], "chart"))
        x = float(re.search(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end"', svg).group(1))
        drawn = re.search(r'text-anchor="end" class="bold">(?:<title>.*?</title>)?([^<]*)', svg)
        return x, drawn.group(1)

    x, shown = margin_and_label("請求書の問題")  # 6 ideographs: 72 px, 79 bold, and the tag
    assert shown == "請求書の問題"
    assert x >= text_width(shown, bold=True) + text_width(" rare", 10.0, bold=True)
    x, shown = margin_and_label("請" * 40)  # 480 px: cut to fit the 300 px margin
    assert shown.endswith("…") and x + 8 <= 300
    assert x >= text_width(shown, bold=True) + text_width(" rare", 10.0, bold=True)
