"""The house drawn from the code: layers kept, no import circle (function-level imports count).

``make lint`` runs import-linter with the layers of ``pyproject.toml`` (cli >
report > features > chat > records > io > base). Here: the contract holds on
the tree, a planted import that runs back up a layer breaks it (so the check
can fail), and no module or package imports itself through others, a check
import-linter's layers do not make between the features of one layer.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")
MODULES = {
    ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
    for p in (ROOT / "evalkit").rglob("*.py")
}


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.skipif(not LINT.exists(), reason="import-linter is not installed")
def test_the_layers_hold_and_a_planted_violation_breaks_them(tmp_path: Path) -> None:
    kept = _lint(ROOT)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    shutil.copytree(
        ROOT / "evalkit", tmp_path / "evalkit", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    planted = tmp_path / "evalkit" / "io" / "_files.py"
    planted.write_text(
        planted.read_text()
        + "\n\ndef _planted() -> None:\n    from evalkit.cli import main  # runs back up\n"
    )
    broken = _lint(tmp_path)
    assert broken.returncode != 0
    assert "BROKEN" in broken.stdout and "evalkit.io._files" in broken.stdout


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _face_block(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` of a package's public face: names for type checkers only, which
    the face loads lazily on first use (evalkit/_lazy.py), so no import at run time."""
    return (
        isinstance(node, ast.If)
        and isinstance(node.test, ast.Name)
        and node.test.id == "TYPE_CHECKING"
    )


def _imports(path: Path) -> set[str]:
    """The evalkit modules ``path`` imports, anywhere in it (functions, TYPE_CHECKING; a
    package face's re-exports for type checkers aside)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if path.name == "__init__.py":
        tree.body = [node for node in tree.body if not _face_block(node)]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            # "from evalkit.plan import bounds" imports a submodule, not the package's
            # face; "from evalkit.io import read_table" a name of the face.
            found.update(
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                for alias in node.names
            )
    return {item for item in found if item.startswith("evalkit.")}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def _graph() -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    modules = {_module_name(p): p for p in (ROOT / "evalkit").rglob("*.py")}
    graph = {name: set() for name in modules}
    for name, path in modules.items():
        for target in _imports(path):
            # "from evalkit.io import read_table" names a module or a name in one
            owner = target if target in modules else target.rpartition(".")[0]
            if owner in modules and owner != name:
                graph[name].add(owner)
    packages: dict[str, set[str]] = {}
    for name, targets in graph.items():
        top = ".".join(name.split(".")[:2])
        for target in targets:
            other = ".".join(target.split(".")[:2])
            packages.setdefault(top, set())
            if other != top and top != "evalkit" and other != "evalkit":
                packages[top].add(other)
    return graph, packages


def test_no_module_or_package_imports_itself_through_others() -> None:
    modules, packages = _graph()
    assert _circles(modules) == [], "module circles"
    assert _circles(packages) == [], "package circles"


def test_the_circle_finder_finds_a_circle() -> None:
    """The check can fail: a planted circle is found, a chain is not."""
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": {"c"}, "c": set()}) == []
