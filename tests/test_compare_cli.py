"""``evalkit compare`` and ``evalkit gate`` on the command line: exit codes, files, CI hooks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import assert_one_line_error
from scored_results import contract, write_result

CLASSES = ["billing"] * 40 + ["shipping"] * 30 + ["account"] * 24 + ["legal_threat"] * 6
IDS = [f"T{i:04d}" for i in range(len(CLASSES))]
BASE_WRONG = set(range(0, 8)) | set(range(40, 46)) | set(range(70, 75))
RARE_BROKEN = {0, 1, 40, 41, 70, 95, 96, 97, 98}
# Tickets 10-19 (right in every run) lack an order id: the slice is never empty.
NO_ORDER = [10 <= i < 20 for i in range(len(CLASSES))]


def write(folder: Path, wrong: set[int], **extra) -> Path:
    correct = [i not in wrong for i in range(len(IDS))]
    extra.setdefault("slices", {"no-order-id": NO_ORDER})
    return write_result(folder, ids=IDS, classes=CLASSES, correct=correct, **extra)


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    return {
        "baseline": write(tmp_path / "baseline", BASE_WRONG),
        "candidate-a": write(tmp_path / "candidate-a", RARE_BROKEN),
        "candidate-b": write(tmp_path / "candidate-b", BASE_WRONG - {2, 3, 4}),
    }


def test_gate_passes_with_exit_0(run_cli, runs) -> None:
    result = run_cli("gate", runs["baseline"], runs["candidate-b"])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("PASS: candidate-b vs baseline")
    assert "content accuracy 0.810 → 0.840" in result.stdout


def test_gate_fails_with_exit_1_naming_the_class(run_cli, runs, tmp_path: Path) -> None:
    junit, markdown, report = tmp_path / "g.xml", tmp_path / "g.md", tmp_path / "g.json"
    result = run_cli(
        "gate", runs["baseline"], runs["candidate-a"],
        "--junit", junit, "--markdown", markdown, "--json", report,
    )  # fmt: skip
    assert result.exit_code == 1, result.stderr
    assert result.stdout.startswith("FAIL: candidate-a vs baseline")
    assert "✗ max_rare_class_drop @ class:legal_threat" in result.stdout
    assert "negative flips: T0095, T0096, T0097, T0098" in result.stdout
    assert "<failure" in junit.read_text()
    assert markdown.read_text().startswith("# ❌ FAIL")
    assert json.loads(report.read_text())["verdict"] == "fail"
    assert result.stderr == ""


def test_gate_refuses_contract_version_1_against_2_with_exit_2(run_cli, tmp_path: Path) -> None:
    v1 = write(tmp_path / "v1", BASE_WRONG, normalized=contract(version=1))
    v2 = write(tmp_path / "v2", BASE_WRONG, normalized=contract(version=2))
    result = run_cli("gate", v1, v2)
    assert_one_line_error(result, "different contracts", "ticket-triage v1", "v2", "sha256:")


def test_gate_bad_input_is_exit_2(run_cli, runs, tmp_path: Path) -> None:
    assert_one_line_error(run_cli("gate", runs["baseline"], tmp_path / "nope"), "no such folder")
    (runs["candidate-a"] / "summary.json").write_text("{")
    assert_one_line_error(
        run_cli("gate", runs["baseline"], runs["candidate-a"]), "summary.json", "not valid JSON"
    )


def test_gate_does_not_overwrite_reports_without_force(run_cli, runs, tmp_path: Path) -> None:
    junit = tmp_path / "gate.xml"
    junit.write_text("keep me")
    result = run_cli("gate", runs["baseline"], runs["candidate-b"], "--junit", junit)
    assert_one_line_error(result, "gate.xml", "--force")
    assert junit.read_text() == "keep me"
    forced = run_cli("gate", runs["baseline"], runs["candidate-b"], "--junit", junit, "--force")
    assert forced.exit_code == 0 and junit.read_text().startswith("<?xml")


def test_gate_under_github_actions_annotates_and_writes_the_step_summary(
    run_cli, runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = run_cli("gate", runs["baseline"], runs["candidate-a"])
    assert result.exit_code == 1
    errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert len(errors) == 1 and "class%3Alegal_threat" in errors[0]
    text = summary.read_text()
    assert text.startswith("earlier step\n# ❌ FAIL: candidate-a vs baseline")


def test_gate_outside_github_actions_prints_no_annotations(
    run_cli, runs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = run_cli("gate", runs["baseline"], runs["candidate-a"])
    assert "::error" not in result.stdout


def test_gate_warns_about_unpaired_ids(run_cli, runs, tmp_path: Path) -> None:
    short = write_result(
        tmp_path / "short",
        ids=IDS[:-1],
        classes=CLASSES[:-1],
        correct=[i not in BASE_WRONG for i in range(len(IDS) - 1)],
    )
    result = run_cli("gate", runs["baseline"], short)
    assert "1 ids only in the baseline" in result.stderr and "T0099" in result.stderr


def test_compare_writes_four_reports_and_ranks(run_cli, runs, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    result = run_cli(
        "compare", runs["baseline"], runs["candidate-a"], runs["candidate-b"], "--out", out
    )
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "junit.xml",
        "report.html",
        "report.json",
        "report.md",
    ]
    report = json.loads((out / "report.json").read_text())
    assert report["decision"]["outcome"] == "adopt"
    assert report["decision"]["candidate"] == "candidate-b"
    assert [entry["candidate"] for entry in report["ranking"]] == ["candidate-b", "candidate-a"]
    assert "Decision: Adopt candidate-b" in result.stdout
    assert (out / "report.md").read_text().startswith("# evalkit compare: baseline vs 2")


def test_compare_json_is_the_report_json_of_out(run_cli, runs, tmp_path: Path) -> None:
    out, alone = tmp_path / "reports", tmp_path / "alone.json"
    both = [runs["baseline"], runs["candidate-a"], runs["candidate-b"]]
    first = run_cli("compare", *both, "--out", out, "--json", alone)
    assert first.exit_code == 0, first.stderr
    assert alone.read_bytes() == (out / "report.json").read_bytes()
    assert f"wrote {alone}" in first.stdout
    piped = run_cli("compare", *both, "--json", "-")
    assert piped.exit_code == 0 and piped.stdout.encode() == alone.read_bytes()
    assert "Decision: Adopt candidate-b" in piped.stderr  # stdout holds the JSON alone
    quiet = run_cli("compare", *both, "--json", tmp_path / "q.json", "-q")
    assert quiet.exit_code == 0 and quiet.stdout == f"{tmp_path / 'q.json'}\n"


def test_compare_is_byte_identical_for_a_seed(run_cli, runs, tmp_path: Path) -> None:
    outputs = []
    for name in ("one", "two"):
        out = tmp_path / name
        run_cli("compare", runs["baseline"], runs["candidate-a"], "--out", out, "--seed", 3)
        outputs.append({p.name: p.read_bytes() for p in out.iterdir()})
    assert outputs[0] == outputs[1]


def test_compare_refuses_an_existing_out_without_force(run_cli, runs, tmp_path: Path) -> None:
    out = tmp_path / "reports"
    out.mkdir()
    (out / "mine.txt").write_text("x")
    result = run_cli("compare", runs["baseline"], runs["candidate-b"], "--out", out)
    assert_one_line_error(result, "reports", "--force")
    assert (out / "mine.txt").exists()
    # --force replaces an earlier report, never a folder evalkit did not write.
    refused = run_cli("compare", runs["baseline"], runs["candidate-b"], "--out", out, "--force")
    assert_one_line_error(refused, "no report.json", "refusing to replace it")
    assert (out / "mine.txt").exists()
    (out / "mine.txt").unlink()
    assert run_cli("compare", runs["baseline"], runs["candidate-b"], "--out", out).exit_code == 0
    (out / "stale.txt").write_text("x")
    forced = run_cli("compare", runs["baseline"], runs["candidate-b"], "--out", out, "--force")
    assert forced.exit_code == 0 and not (out / "stale.txt").exists()


def test_output_never_replaces_an_input(run_cli, runs, tmp_path: Path) -> None:
    result = run_cli("compare", runs["baseline"], runs["candidate-b"], "--out", runs["baseline"],
                     "--force")  # fmt: skip
    assert_one_line_error(result, "would replace the input")
    assert (runs["baseline"] / "summary.json").exists()
    result = run_cli("gate", runs["baseline"], runs["candidate-b"], "--markdown",
                     runs["baseline"] / "summary.json", "--force")  # fmt: skip
    assert_one_line_error(result, "would replace the input")


def test_edited_contract_block_is_refused(run_cli, runs, tmp_path: Path) -> None:
    import json
    import shutil

    edited = tmp_path / "edited"
    shutil.copytree(runs["baseline"], edited)
    summary = json.loads((edited / "summary.json").read_text())
    summary["contract"]["normalized"]["gate"]["vs_baseline"]["max_rare_class_drop"] = 1.0
    (edited / "summary.json").write_text(json.dumps(summary))
    result = run_cli("gate", edited, runs["candidate-a"])
    assert_one_line_error(result, "summary.json", "edited after scoring")


def test_unwritable_step_summary_keeps_the_verdict(run_cli, runs, monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "/nonexistent-dir/summary.md")
    result = run_cli("gate", runs["baseline"], runs["candidate-b"])
    assert result.exit_code == 0
    assert "cannot append to $GITHUB_STEP_SUMMARY" in result.stderr


def test_compare_exits_0_even_when_no_candidate_passes(run_cli, runs) -> None:
    result = run_cli("compare", runs["baseline"], runs["candidate-a"])
    assert result.exit_code == 0
    assert "Decision: No candidate passes the gate" in result.stdout


def test_compare_needs_a_candidate(run_cli, runs) -> None:
    result = run_cli("compare", runs["baseline"])
    assert result.exit_code == 2
    assert "Missing argument" in result.stderr


def test_compare_refuses_a_different_gold_file(run_cli, runs, tmp_path: Path) -> None:
    other = write(tmp_path / "other", BASE_WRONG, gold_sha256="e" * 64)
    result = run_cli("compare", runs["baseline"], runs["candidate-b"], other)
    assert_one_line_error(result, "different gold files", "e" * 64)


@pytest.mark.slow
def test_gate_exit_codes_through_the_console_script(runs) -> None:
    def code(*args: Path) -> int:
        command = [sys.executable, "-m", "evalkit", "gate", *map(str, args)]
        return subprocess.run(command, capture_output=True, check=False).returncode

    assert code(runs["baseline"], runs["candidate-b"]) == 0
    assert code(runs["baseline"], runs["candidate-a"]) == 1
    assert code(runs["baseline"], runs["baseline"] / "missing") == 2
