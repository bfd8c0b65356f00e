"""The library names parameters, never flags; the command line renders flags in one place.

A Python caller has no ``--force``: an error or a piece of advice the library
gives names the parameter (``force=True``), and ``evalkit.cli._vocabulary``
renders the same error with the running command's flags. The scan below reads
every string literal of the library (f-string parts included; docstrings,
pydantic ``description=`` values and the declarations of options,
:func:`evalkit.options.option`, are documentation, not messages) and fails on
a ``--flag`` that is not in :data:`ALLOWED`, each entry with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import evalkit
from evalkit import vocabulary

LIBRARY = Path(evalkit.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

CSS = "a CSS custom property of the HTML report, not a flag"
PERSISTED = "written into an output file that users and checks read; it stays byte-identical"
CLI_ONLY = "a renderer only the command line calls (no library entry uses it)"
OTHER_TOOL = "another tool's flag, quoted as the command to run"
QUOTED = "a whole evalkit command line to run, quoted as the walkthrough shows it"

_PAGE_CSS = ("--blue", "--fail-bg", "--ink", "--line", "--muted", "--orange", "--pass-bg",
             "--rare-bg", "--sky", "--soft", "--vermillion")  # fmt: skip
_TOKENS_CSS = ("--blue", "--line", "--muted", "--pass-bg", "--soft", "--vermillion")
_RECOMMEND = ("--batch-size", "--seq-len", "--eval-batch-size", "--grad-checkpointing",
              "--optimizer", "--gpus")  # fmt: skip

#: (file relative to evalkit/, flag) -> why the literal may name it.
ALLOWED: dict[tuple[str, str], str] = {
    **{("report/html/page.py", flag): CSS for flag in _PAGE_CSS},
    **{("report/html/tokens.py", flag): CSS for flag in _TOKENS_CSS},
    # Persisted: what a file says stays as it is, byte for byte.
    ("comparison/decision.py", "--card"): f"{PERSISTED} (decision record: missing pins)",
    ("comparison/decision.py", "--adapter"): f"{PERSISTED} (decision record: missing pins)",
    ("comparison/decision.py", "--base-model"): f"{PERSISTED} (decision record: missing pins)",
    ("comparison/provenance.py", "--factor"): f"{PERSISTED} (report.json: a rule's reason)",
    ("comparison/test_set.py", "--no-ledger"): f"{PERSISTED} (report.json: the ledger's reasons)",
    ("provenance/ledger_state.py", "--freeze"): f"{PERSISTED} (report.json: FREEZE_ADVICE)",
    ("model/smoke_run.py", "--lr"): f"{PERSISTED} (the smoke report's problems)",
    ("model/smoke_run.py", "--steps"): f"{PERSISTED} (the smoke report's problems)",
    ("plan/gpus.py", "--gpu"): f"{PERSISTED} (plan.json: a GPU's source)",
    **{
        ("plan/recommend.py", flag): f"{PERSISTED} (plan.json: the recommendation's advice)"
        for flag in _RECOMMEND
    },
    ("plan/work.py", "--train-tokens"): f"{PERSISTED} (plan.json: the tokens' source)",
    ("plan/work.py", "--seq-len"): f"{PERSISTED} (plan.json: how the tokens were counted)",
    ("provenance/card.py", "--base"): f"{PERSISTED} (card.json: the unpinned_base problem)",
    ("provenance/card.py", "--base-revision"): f"{PERSISTED} (card.json: unpinned_base)",
    ("report/html/score.py", "--on-duplicate"): f"{PERSISTED} (report.html of a result)",
    ("report/html/tokens.py", "--seq-len"): f"{PERSISTED} (the tokens --html page)",
    ("report/html/tokens.py", "--sample"): f"{PERSISTED} (the tokens --html page)",
    ("report/provenance_markdown.py", "--allow-base-change"): f"{PERSISTED} (report.md)",
    ("tokens/checks.py", "--encode"): f"{PERSISTED} (the tokens report: a check's detail)",
    ("tokens/checks.py", "--seq-len"): f"{PERSISTED} (the tokens report: a check's detail)",
    # Terminal summaries of one command each.
    ("report/audit_summary.py", "--json"): f"{CLI_ONLY} (audit)",
    ("report/audit_summary.py", "--within"): f"{CLI_ONLY} (audit)",
    ("report/prompts_summary.py", "--pred-format"): f"{CLI_ONLY} (prompts: the next command)",
    ("report/prompts_summary.py", "--pred"): f"{CLI_ONLY} (prompts: the next command)",
    ("report/score_summary.py", "--on-duplicate"): f"{CLI_ONLY} (score, rescore)",
    ("report/look_lines.py", "--no-ledger"): f"{CLI_ONLY} (rescore: why no look)",
    ("report/look_lines.py", "--ledger"): f"{CLI_ONLY} (rescore: why no look)",
    ("report/split_summary.py", "--near-dup"): f"{CLI_ONLY} (split)",
    **{
        ("report/plan_sheet.py", flag): f"{CLI_ONLY} (plan: the order sheet and the cadence)"
        for flag in ("--price-per-hour", "--save-every", "--max-lost-minutes", "--save-total-limit")
    },
    ("comparison/results.py", "--contract"): f"{QUOTED} (evalkit rescore)",
    ("comparison/results.py", "--out"): f"{QUOTED} (evalkit rescore)",
    ("leakage/distributed/cluster.py", "--head"): f"{OTHER_TOOL} (ray start --head)",
    ("tokens/load.py", "--local-dir"): f"{OTHER_TOOL} (huggingface-cli download)",
    ("plan/stacks.py", "--index-url"): f"{OTHER_TOOL} (pip install torch: the ROCm or CUDA build)",
    ("plan/stacks.py", "--no-build-isolation"): f"{OTHER_TOOL} (pip install flash-attn)",
}


def _documentation(tree: ast.AST) -> set[int]:
    """The ids of string nodes that document rather than say: docstrings, descriptions."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            for statement in body:  # module, class, function and attribute docstrings
                if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
                    skipped.add(id(statement.value))
        if isinstance(node, ast.keyword) and node.arg == "description":
            skipped.update(id(inner) for inner in ast.walk(node.value))
        if isinstance(node, ast.Call) and _declares_an_option(node):
            # an option's declaration: its flags and --help (evalkit.options.option, or a
            # shared field of evalkit.vocabulary)
            for argument in [*node.args, *(keyword.value for keyword in node.keywords)]:
                skipped.update(id(inner) for inner in ast.walk(argument))
    return skipped


def _declares_an_option(call: ast.Call) -> bool:
    name = _called(call) or ""
    return name == "option" or (name.endswith("_field") and name in VOCABULARY_FIELDS)


VOCABULARY_FIELDS = {name for name in dir(vocabulary) if name.endswith("_field")}


def _called(call: ast.Call) -> str | None:
    function = call.func
    if isinstance(function, ast.Attribute):
        return function.attr
    return function.id if isinstance(function, ast.Name) else None


def literal_strings(tree: ast.AST) -> list[ast.Constant]:
    """The string literals of ``tree`` that say something (f-string parts included)."""
    skipped = _documentation(tree)
    strings = [node for node in ast.walk(tree) if isinstance(node, ast.Constant)]
    return [node for node in strings if isinstance(node.value, str) and id(node) not in skipped]


def flags_in_library() -> list[tuple[str, int, str]]:
    """Every ``(file, line, --flag)`` a string literal of the library names."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(LIBRARY.rglob("*.py")):
        relative = path.relative_to(LIBRARY).as_posix()
        if relative.startswith("cli/"):
            continue
        for node in literal_strings(ast.parse(path.read_text(encoding="utf-8"))):
            found += [(relative, node.lineno, flag) for flag in FLAG.findall(node.value)]
    return found


def test_no_library_message_names_a_flag() -> None:
    named = [
        f"evalkit/{file}:{line}: {flag}"
        for file, line, flag in flags_in_library()
        if (file, flag) not in ALLOWED
    ]
    assert not named, "the library names parameters ({name} refs), not flags:\n" + "\n".join(named)


def test_every_allowlist_entry_is_still_needed() -> None:
    used = {(file, flag) for file, _, flag in flags_in_library()}
    assert sorted(set(ALLOWED) - used) == []


def test_the_scan_reads_f_strings_and_skips_documentation() -> None:
    source = (
        '"""--module"""\n'
        "class A:\n"
        '    """--class"""\n'
        "    x: int = Field(description='--field')\n"
        "    y: int = option(1, flag='--why', help='--help')\n"
        '    """--attribute"""\n'
        "def f(x):\n"
        '    """--function"""\n'
        '    return f"pass --force {x}" + "or --no-ledger"\n'
    )
    flags = [FLAG.findall(node.value) for node in literal_strings(ast.parse(source))]
    assert sorted(flag for found in flags for flag in found) == ["--force", "--no-ledger"]
    assert FLAG.findall("a--b ---c --ok x-y--z") == ["--ok"]
