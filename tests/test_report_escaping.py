"""Names, ids and outputs from a candidate's files never act: not as workflow commands, not as HTML.

A candidate's author controls its name (``--name``), the ids and the model's
outputs. Under GitHub Actions every line a step prints may be a workflow
command; a Markdown report is rendered on the pull request. These tests
read what evalkit prints the way the runner does (actions/runner's
ActionCommand: a trimmed line starting ``::``, or ``##[`` anywhere) and
render the Markdown with a CommonMark renderer.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from evalkit.cli._workflow_guard import WorkflowGuard
from evalkit.report.github import escape_data, escape_property, inert_line
from evalkit.report.markdown_text import code, text

ROOT = Path(__file__).resolve().parents[1]
CONTRACT = ROOT / "contracts" / "ticket-triage.yaml"
HOSTILE_NAME = (
    'cand\n::stop-commands::pwned\r::add-mask::x ##[stop-commands]y <img src=x onerror="alert(1)">'
)


def runner_commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """The workflow commands GitHub's runner would run in ``output``: (name, properties, data)."""
    found = []
    for line in re.split(r"\r\n|\r|\n", output):
        trimmed = line.lstrip()
        if trimmed.startswith("::"):
            end = trimmed.find("::", 2)
            if end > 0:
                info, data = trimmed[2:end], trimmed[end + 2 :]
                name, _, props = info.partition(" ")
                properties = {}
                for pair in filter(None, props.split(",")):
                    key, _, value = pair.partition("=")
                    properties[key] = _unescape(value, property_value=True)
                found.append((name, properties, _unescape(data)))
                continue
        if "##[" in line:
            found.append((line[line.index("##[") + 3 :].split("]")[0], {}, ""))
    return found


def _unescape(value: str, property_value: bool = False) -> str:
    pairs = [("%0D", "\r"), ("%0A", "\n")]
    if property_value:
        pairs += [("%3A", ":"), ("%2C", ",")]
    for escaped, raw in [*pairs, ("%25", "%")]:
        value = value.replace(escaped, raw)
    return value


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def hostile_results(run_cli, tmp_path: Path) -> tuple[Path, Path]:
    """A baseline, and a failing candidate whose name, ids and outputs are hostile."""
    ids = ["<b>bold</b>", "a`b``c", "plain-1", "plain-2", "::set-output name=x::y", "##[error]z"]
    gold = _write_jsonl(tmp_path / "split" / "test.jsonl", [
        {"ticket_id": i, "category": "billing", "priority": "low", "order_id": None,
         "amount": None} for i in ids])  # fmt: skip
    answer = json.dumps({"category": "billing", "priority": "low"})
    good = _write_jsonl(tmp_path / "good.jsonl", [{"ticket_id": i, "output": answer} for i in ids])
    bad_output = '{"category": "<script>alert(1)</script>", "priority": "low"}'
    bad = _write_jsonl(
        tmp_path / "bad.jsonl", [{"ticket_id": i, "output": bad_output} for i in ids]
    )
    runs = tmp_path / "runs"
    score = ["score", "--contract", CONTRACT, "--gold", gold, "--quiet"]
    assert run_cli(*score, "--pred", good, "--out", runs / "base", "--name", "base").exit_code == 0
    result = run_cli(*score, "--pred", bad, "--out", runs / "cand", "--name", HOSTILE_NAME)
    assert result.exit_code == 0, result.stderr
    return runs / "base", runs / "cand"


def test_a_hostile_name_under_github_actions_runs_no_command(
    run_cli, hostile_results, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    summary = tmp_path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base, cand = hostile_results
    result = run_cli("gate", base, cand)
    assert result.exit_code == 1
    commands = runner_commands(result.stdout) + runner_commands(result.stderr)
    assert commands, "the gate's failures are annotated"
    assert {name for name, _, _ in commands} == {"error"}, commands
    for _, properties, data in commands:
        # The runner reads back exactly what evalkit meant: the name, line breaks and all.
        assert HOSTILE_NAME in data
        assert properties["title"].startswith("evalkit gate: ")
    assert "%3A:stop-commands::pwned" in result.stdout  # shown, but inert
    assert "#%23[stop-commands]y" in result.stdout


def test_error_messages_are_guarded_too(run_cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    hostile = tmp_path / "x\n::stop-commands::pwned"
    result = run_cli("ledger", hostile)
    assert result.exit_code == 2
    assert runner_commands(result.stderr) == []
    assert "stop-commands" in result.stderr


def test_escapes_follow_githubs_rules() -> None:
    assert escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    for value in ("%0A", "x%25y", ":,%\r\n::"):
        assert _unescape(escape_data(value)) == value
        assert _unescape(escape_property(value), property_value=True) == value


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("::stop-commands::x", "%3A:stop-commands::x"),
        ("   \t::error::x", "   \t%3A:error::x"),
        ("name ##[error]x", "name #%23[error]x"),
        ("a :: b", "a :: b"),
        ("PASS: cand vs base", "PASS: cand vs base"),
    ],
)
def test_inert_line(line: str, expected: str) -> None:
    assert inert_line(line) == expected
    assert runner_commands(inert_line(line)) == []


def test_the_guard_sees_commands_split_across_writes_and_flushes() -> None:
    raw = io.StringIO()
    guard = WorkflowGuard(raw)  # type: ignore[arg-type]
    for piece in ("ok\n", " ", ":", ":stop-commands::a\n", "b #", "#", "[error]c\rd\n"):
        guard.write(piece)
        guard.flush()
    guard.write("::unfinished::e")
    guard.close_guard()
    guard.command("::error::meant")
    assert [name for name, _, _ in runner_commands(raw.getvalue())] == ["error"]
    assert raw.getvalue().endswith("::error::meant\n")


def test_markdown_report_shows_hostile_values_as_text(run_cli, hostile_results, tmp_path) -> None:
    from markdown_it import MarkdownIt

    base, cand = hostile_results
    report = tmp_path / "report.md"
    assert run_cli("gate", base, cand, "--markdown", report).exit_code == 1
    markdown = report.read_text()
    rendered = MarkdownIt("commonmark").enable("table").render(markdown)
    # Our own markup only: the footer's <sub>, and the tags Markdown produces.
    tags = set(re.findall(r"<([a-zA-Z][a-zA-Z0-9]*)", rendered))
    assert tags <= {"h1", "h2", "h3", "p", "strong", "code", "ul", "li", "table", "thead",
                    "tbody", "tr", "th", "td", "sub", "blockquote"}, tags  # fmt: skip
    assert "<script" not in rendered and "<img" not in rendered and "<b>" not in rendered
    assert "&lt;img src=x" in rendered  # the name is shown, as text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in rendered  # the output, as text
    assert "<code>a`b``c</code>" in rendered  # an id with backticks stays one code span


@pytest.mark.parametrize(
    "value", ["plain", "a`b", "``x``", "`", "<b>", "x\ny", "ends with `", "a | b"]
)
def test_code_spans_render_exactly_the_value(value: str) -> None:
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").render(code(value)).strip()
    import html

    shown = value.replace("\n", " ")
    assert rendered == f"<p><code>{html.escape(shown, quote=False)}</code></p>"


def test_text_escapes_html_and_keeps_one_line() -> None:
    assert text("<b>x</b> & y\nz") == "&lt;b>x&lt;/b> & y z"
    plain = "p 0.03 < 0.05, a <= b, &amp; &#60;"
    assert text(plain) == "p 0.03 < 0.05, a <= b, &amp;amp; &amp;#60;"


@pytest.mark.parametrize(
    "value",
    ["<b>x</b>", "<img src=x onerror=alert(1)>", "<!-- c -->", "<?php ?>", "<https://x.y>",
     "&lt;b&gt;", "&#60;script&#62;", "a < b > c & d", "<", "&"],
)  # fmt: skip
def test_text_renders_exactly_the_value(value: str) -> None:
    import html

    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").render(f"x {text(value)} y").strip()
    assert rendered == f"<p>x {html.escape(value, quote=False)} y</p>"
