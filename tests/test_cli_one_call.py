"""One run path: a command is its library call; ``evalkit/cli/`` touches no file itself.

Each command is options -> one library call -> render -> exit code
(DESIGN.md, "Layout: one path per concept"). Two checks hold it there:

* for each command that writes, the files its command line writes equal,
  byte for byte (timestamps aside), those its library call writes with the
  same options to the same paths: the call is the command's path, not a
  second one beside it;
* no module of ``evalkit/cli/`` opens, reads or writes a file, or checks an
  output path itself: an AST scan for the calls that do (``open``,
  ``read_text``, ``write_bytes``, the atomic writers, ``json.dump``,
  ``pl.read_*``, ``to_parquet``, ...), shown to find each one in a planted
  module, so it can fail.

smoke and reload-check load models (slow): their byte check is left to
their own tests; here their library call is shown to own the output check
(an output that would replace an input is refused there, before any model
loads, in the command's words on the command line).
"""

from __future__ import annotations

import ast
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest
from scored_results import write_result

import evalkit
from evalkit.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
CLI = ROOT / "evalkit" / "cli"
TICKETS = ROOT / "examples" / "tickets" / "tickets.jsonl"
CHAT = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
TOKENIZER = ROOT / "examples" / "tokenizer"
LLAMA7 = ROOT / "examples" / "plan" / "llama-2-7b"
ADAPTER = ROOT / "examples" / "model" / "adapter"
BASE = ROOT / "examples" / "model" / "base"
TRIAGE = ROOT / "contracts" / "ticket-triage.yaml"

# An ISO 8601 time (with or without zone): when a file was made, not what it says.
TIMESTAMP = re.compile(rb"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")


def _contents(paths: list[Path]) -> dict[str, bytes]:
    """Every file under ``paths`` (a file, or a folder's files), timestamps normalised."""
    found: dict[str, bytes] = {}
    for path in paths:
        files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
        for file in files:
            found[str(file)] = TIMESTAMP.sub(b"<time>", file.read_bytes())
    return found


def _remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        else:
            path.unlink()


def assert_same_files(
    run_cli: Callable[..., object],
    args: list[object],
    library_call: Callable[[], object],
    outputs: list[Path],
    exit_codes: tuple[int, ...] = (0,),
) -> None:
    """The command line's ``outputs`` equal, byte for byte, the library call's at the same paths."""
    result = run_cli(*args)
    assert result.exit_code in exit_codes, (result.exit_code, result.stderr)  # type: ignore[attr-defined]
    assert all(path.exists() for path in outputs), outputs
    written = _contents(outputs)
    assert written, "the command wrote nothing to compare"
    _remove(outputs)
    library_call()
    assert _contents(outputs) == written


def test_the_timestamp_normalisation_leaves_the_rest_alone() -> None:
    stamped = b'{"at": "2026-12-06T11:45:57.123+00:00", "n": 2026}'
    assert TIMESTAMP.sub(b"<time>", stamped) == b'{"at": "<time>", "n": 2026}'


# Byte for byte: the command line's files are its library call's.


@pytest.fixture(scope="module")
def split_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("split") / "split"
    evalkit.split(
        TICKETS,
        group=("conversation_id",),
        stratify="category",
        id_column="ticket_id",
        sizes=(840, 180, 180),
        seed=7,
        out=folder,
    )
    return folder


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_split(run_cli, tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "split"
    args = ["split", TICKETS, "--out", out, "--group", "conversation_id", "--stratify",
            "category", "--id", "ticket_id", "--sizes", "840,180,180", "--seed", "7",
            "--format", fmt, "-q"]  # fmt: skip
    assert_same_files(
        run_cli,
        args,
        lambda: evalkit.split(
            TICKETS,
            group=("conversation_id",),
            stratify="category",
            id_column="ticket_id",
            sizes=(840, 180, 180),
            seed=7,
            out=out,
            fmt=fmt,  # type: ignore[arg-type]
        ),
        [out],
    )


def test_audit(run_cli, tmp_path: Path, split_folder: Path) -> None:
    report = tmp_path / "audit.json"
    args = ["audit", split_folder, "--id", "ticket_id", "--text", "text", "--group",
            "conversation_id", "--near-dup", "0.8", "--json", report, "-q"]  # fmt: skip
    assert_same_files(
        run_cli,
        args,
        lambda: evalkit.audit(
            split_folder,
            id_column="ticket_id",
            text=("text",),
            group=("conversation_id",),
            near_dup=0.8,
            json=report,
        ),
        [report],
        exit_codes=(0, 1),
    )


def test_plan(run_cli, tmp_path: Path) -> None:
    report = tmp_path / "plan.json"
    args = ["plan", "--config", LLAMA7, "--method", "qlora", "--seq-len", "1024", "--json",
            report, "-q"]  # fmt: skip
    from evalkit.plan.api import plan

    assert_same_files(
        run_cli,
        args,
        lambda: plan(LLAMA7, method="qlora", seq_len=1024, json=report),
        [report],
    )


def test_card(run_cli, tmp_path: Path) -> None:
    report = tmp_path / "card.json"
    from evalkit.provenance.cards import card

    assert_same_files(
        run_cli,
        ["card", ADAPTER, "--base", BASE, "--json", report, "-q"],
        lambda: card(ADAPTER, base=BASE, json=report),
        [report],
        exit_codes=(0, 1),
    )


def test_tokens(run_cli, tmp_path: Path) -> None:
    from evalkit.report.html.tokens import tokens_page

    report, page = tmp_path / "tokens.json", tmp_path / "tokens.html"
    args = ["tokens", CHAT, "--tokenizer", TOKENIZER, "--text", "messages", "--id", "ticket_id",
            "--seq-len", "512", "--json", report, "--html", page, "-q"]  # fmt: skip
    assert_same_files(
        run_cli,
        args,
        lambda: evalkit.check_tokens(
            [CHAT],
            tokenizer=TOKENIZER,
            text=("messages",),
            id_column="ticket_id",
            seq_len=512,
            json=report,
            html=page,
            html_page=tokens_page,
        ),
        [report, page],
        exit_codes=(0, 1),
    )


def test_contract_schema(run_cli, tmp_path: Path) -> None:
    from evalkit.contract.schema import contract_json_schema_text

    out = tmp_path / "contract.schema.json"
    assert_same_files(
        run_cli,
        ["contract", "schema", "--out", out],
        lambda: contract_json_schema_text(out=out),
        [out],
    )


@pytest.fixture
def scored(tmp_path: Path) -> Path:
    """A gold split scored once (so its folder holds a ledger)."""
    folder = tmp_path / "gold"
    folder.mkdir()
    pl.DataFrame({
        "ticket_id": [f"T{i}" for i in range(6)], "category": ["billing"] * 6,
        "priority": ["low"] * 6, "order_id": [None] * 6, "amount": [1.0] * 6,
    }, schema_overrides={"order_id": pl.String}).write_parquet(folder / "test.parquet")  # fmt: skip
    answer = '{"category": "billing", "priority": "low", "order_id": null, "amount": 1.0}'
    predictions = folder.parent / "pred.jsonl"
    rows = [{"ticket_id": f"T{i}", "output": answer} for i in range(6)]
    predictions.write_text("".join(json.dumps(row) + "\n" for row in rows))
    evalkit.score(TRIAGE, folder / "test.parquet", predictions, out=tmp_path / "result")
    return folder


def test_ledger(run_cli, tmp_path: Path, scored: Path) -> None:
    from evalkit.provenance.ledger_state import ledger_report

    report = tmp_path / "ledger.json"
    assert_same_files(
        run_cli,
        ["ledger", scored, "--json", report, "-q"],
        lambda: ledger_report(scored, json=report),
        [report],
    )


CLASSES = ["billing"] * 20 + ["shipping"] * 15 + ["legal_threat"] * 5
IDS = [f"T{i:04d}" for i in range(len(CLASSES))]


@pytest.fixture
def results(tmp_path: Path) -> dict[str, Path]:
    def write(name: str, wrong: set[int]) -> Path:
        correct = [i not in wrong for i in range(len(IDS))]
        return write_result(tmp_path / name, ids=IDS, classes=CLASSES, correct=correct)

    return {
        "baseline": write("baseline", {0, 1, 20}),
        "a": write("a", {0, 35, 36, 37}),
        "b": write("b", {0}),
    }


def test_gate(run_cli, tmp_path: Path, results: dict[str, Path]) -> None:
    from evalkit.report.comparison_files import GATE_FILES

    files = {name: tmp_path / f"gate.{name}" for name in ("junit", "markdown", "html", "json")}
    args = ["gate", results["baseline"], results["a"], "-q"]
    for name, path in files.items():
        args += [f"--{name}", path]
    assert_same_files(
        run_cli,
        args,
        lambda: evalkit.gate(results["baseline"], results["a"], render=GATE_FILES, **files),
        list(files.values()),
        exit_codes=(1,),
    )


def test_compare(run_cli, tmp_path: Path, results: dict[str, Path]) -> None:
    from evalkit.report.comparison_files import COMPARE_FILES

    out, report = tmp_path / "reports", tmp_path / "compare.json"
    base, a, b = results["baseline"], results["a"], results["b"]
    assert_same_files(
        run_cli,
        ["compare", base, a, b, "--out", out, "--json", report, "-q"],
        lambda: evalkit.compare(base, a, b, out=out, json=report, render=COMPARE_FILES),
        [out, report],
    )


def test_the_step_summary_is_the_gates_markdown(
    run_cli, tmp_path: Path, results: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from evalkit.report.comparison_files import GATE_FILES

    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    assert_same_files(
        run_cli,
        ["gate", results["baseline"], results["b"]],
        lambda: evalkit.gate(
            results["baseline"], results["b"], step_summary=summary, render=GATE_FILES
        ),
        [summary],
    )


# smoke and reload-check: the library call owns the output check (no model is loaded).


def test_smoke_and_reload_check_refuse_an_output_over_an_input(run_cli, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text('{"messages": []}\n')
    with pytest.raises(UsageError, match="the output would replace the input"):
        evalkit.smoke(BASE, data, text=("messages",), json=data)
    result = run_cli("smoke", "--base", BASE, "--data", data, "--text", "messages",
                     "--json", data)  # fmt: skip
    assert result.exit_code == 2 and "the output would replace the input" in result.stderr
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text("{}")
    with pytest.raises(UsageError, match="the output would replace the input"):
        evalkit.reload_check(run, json=run / "run.json")
    result = run_cli("reload-check", run, "--json", run / "run.json")
    assert result.exit_code == 2 and "the output would replace the input" in result.stderr


def test_two_outputs_on_one_path_are_named_as_the_caller_names_them(
    run_cli, tmp_path: Path, results: dict[str, Path]
) -> None:
    from evalkit.report.comparison_files import GATE_FILES

    same = tmp_path / "gate.out"
    with pytest.raises(UsageError, match="junit and markdown name the same path"):
        evalkit.gate(
            results["baseline"], results["b"], junit=same, markdown=same, render=GATE_FILES
        )
    result = run_cli("gate", results["baseline"], results["b"], "--junit", same, "--markdown", same)
    assert result.exit_code == 2
    assert "--junit and --markdown name the same path" in result.stderr


# No module of evalkit/cli/ opens, reads or writes a file.

# Calls whose attribute name is file work wherever it appears (``path.read_text()``).
FILE_METHODS = {
    "open", "read_text", "write_text", "read_bytes", "write_bytes", "touch", "mkdir",
    "unlink", "rmdir", "rename", "symlink_to", "hardlink_to", "write_parquet", "write_csv",
    "write_ndjson", "write_json", "write_ipc", "sink_parquet", "sink_csv", "to_parquet",
    "to_csv", "to_json", "save_to_disk",
}  # fmt: skip
# Functions of modules that touch files (``json.dump``, ``os.replace``, ``pl.read_csv``).
MODULE_FUNCTIONS = {
    "json": {"dump", "load"}, "pickle": {"dump", "load"},
    "yaml": {"dump", "safe_dump_all", "load"}, "os": {"open", "fdopen", "replace", "rename",
    "remove", "unlink", "makedirs", "mkdir", "rmdir", "write", "read", "scandir", "listdir"},
    "shutil": {"copy", "copy2", "copyfile", "copytree", "move", "rmtree"}, "io": {"open"},
    "tempfile": {"mkstemp", "mkdtemp", "NamedTemporaryFile", "TemporaryDirectory"},
    "pq": {"read_table", "write_table"}, "pa": {"memory_map", "OSFile"},
}  # fmt: skip
# Prefixes of polars' and pandas' readers and writers (``pl.read_parquet``, ``pd.read_csv``).
FRAME_MODULES, FRAME_PREFIXES = {"pl", "polars", "pd", "pandas"}, ("read_", "scan_", "write_")
# evalkit's own file helpers: a command names none of them; its library call does the work.
HELPERS = {
    "atomic_write_bytes", "atomic_write_text", "atomic_directory", "write_table",
    "read_table", "read_bytes", "read_and_hash", "sha256_file", "hash_early", "load_json",
    "load_yaml", "load_document", "CommandFiles", "check_new_output", "ReportFile",
    "read_manifest", "read_ledger", "write_score", "resolve_hf_split", "resolve_ledger",
}  # fmt: skip


def file_work(source: str) -> list[str]:
    """Where ``source`` opens, reads or writes a file, or names a file helper (``line: what``)."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        what = None
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id == "open":
                what = "open()"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name, owner = node.func.attr, node.func.value
            module = owner.id if isinstance(owner, ast.Name) else None
            in_module = module in MODULE_FUNCTIONS and name in MODULE_FUNCTIONS[module]
            if in_module or (module in FRAME_MODULES and name.startswith(FRAME_PREFIXES)):
                what = f"{module}.{name}()"
            elif name in FILE_METHODS and module not in {"click", "sys"}:
                what = f".{name}()"
        if isinstance(node, ast.Name) and node.id in HELPERS:
            what = node.id
        elif isinstance(node, ast.Attribute) and node.attr in HELPERS:
            what = node.attr
        elif isinstance(node, ast.ImportFrom):
            named = [alias.name for alias in node.names if alias.name in HELPERS]
            what = ", ".join(named) or None
        if what is not None:
            found.append(f"{getattr(node, 'lineno', 0)}: {what}")
    return found


def test_no_cli_module_touches_a_file() -> None:
    touched = {
        module.name: work
        for module in sorted(CLI.glob("*.py"))
        if (work := file_work(module.read_text(encoding="utf-8")))
    }
    assert touched == {}, (
        f"a command's file work belongs in its library call (json=, out=, force=): {touched}"
    )


PLANTED = [
    "def f(path):\n    return open(path).read()\n",
    "def f(path):\n    path.write_text('x')\n",
    "def f(path):\n    return path.read_bytes()\n",
    "import json\ndef f(value, handle):\n    json.dump(value, handle)\n",
    "import polars as pl\ndef f(path):\n    return pl.read_parquet(path)\n",
    "def f(frame, path):\n    frame.to_parquet(path)\n",
    "def f(frame, path):\n    frame.write_parquet(path)\n",
    "import os\ndef f(a, b):\n    os.replace(a, b)\n",
    "from evalkit.io import atomic_write_text\ndef f(p, t):\n    atomic_write_text(p, t)\n",
    "def f(path):\n    from evalkit import io\n    io.CommandFiles().writes(path).check()\n",
    "import orjson\ndef f(path):\n    return orjson.loads(path.read_bytes())\n",
]


@pytest.mark.parametrize("source", PLANTED)
def test_the_scan_finds_planted_file_work(source: str) -> None:
    assert file_work(source), source


def test_the_scan_finds_a_planted_module_among_the_commands(tmp_path: Path) -> None:
    planted = tmp_path / "cli"
    shutil.copytree(CLI, planted)
    (planted / "planted_cmd.py").write_text(PLANTED[1])
    touched = [module.name for module in planted.glob("*.py") if file_work(module.read_text())]
    assert touched == ["planted_cmd.py"]


def test_the_scan_lets_printing_and_rendering_pass() -> None:
    source = (
        "import sys, click, orjson\n"
        "def f(report, text):\n"
        "    click.echo(orjson.dumps(report))\n"
        "    sys.stderr.write(text)\n"
        "    return text.replace('-', '_')\n"
    )
    assert file_work(source) == []
