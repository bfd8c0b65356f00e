"""The library names parameters, never flags; the command line renders flags in one place.

A Python caller has no ``--force``: an error or a piece of advice the library
gives names the parameter (``force=True``), and ``evalkit.cli._vocabulary``
renders the same error with the running command's flags. The scan below reads
every string literal of the library (f-string parts included; docstrings and
pydantic ``description=`` values are documentation, not messages) and fails on
a ``--flag`` that is not in :data:`ALLOWED`, each entry with its reason.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

import evalkit

LIBRARY = Path(evalkit.__file__).parent
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")

CSS = "a CSS custom property of the HTML report, not a flag"
PERSISTED = "written into an output file that users and checks read; it stays byte-identical"
CLI_ONLY = "a renderer only the command line calls (no library entry uses it)"
OTHER_TOOL = "another tool's flag, quoted as the command to run"

#: (file relative to evalkit/, flag) -> why the literal may name it.
ALLOWED: dict[tuple[str, str], str] = {}


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
    return skipped


def flags_in_library() -> list[tuple[str, int, str]]:
    """Every ``(file, line, --flag)`` a string literal of the library names."""
    found: list[tuple[str, int, str]] = []
    for path in sorted(LIBRARY.rglob("*.py")):
        relative = path.relative_to(LIBRARY).as_posix()
        if relative.startswith("cli/"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skipped = _documentation(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in skipped
            ):
                found += [(relative, node.lineno, flag) for flag in FLAG.findall(node.value)]
    return found


def test_no_library_message_names_a_flag() -> None:
    named = [
        f"evalkit/{file}:{line}: {flag}"
        for file, line, flag in flags_in_library()
        if (file, flag) not in ALLOWED
    ]
    assert not named, "the library names parameters ({name} refs), not flags:\n" + "\n".join(
        named
    )


def test_every_allowlist_entry_is_still_needed() -> None:
    used = {(file, flag) for file, _, flag in flags_in_library()}
    assert not set(ALLOWED) - used


def test_the_scan_finds_a_flag_in_an_f_string_and_skips_docstrings(tmp_path: Path) -> None:
    source = '"""--doc"""\ndef f(x):\n    """--doc"""\n    return f"pass --force {x}"\n'
    tree = ast.parse(source)
    skipped = _documentation(tree)
    strings = [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skipped
    ]
    assert [FLAG.findall(text) for text in strings] == [["--force"]]
