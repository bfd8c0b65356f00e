"""docs/python.md and the README run: every ```python block, in order, its output real.

The blocks run like the cells of one notebook (one namespace, top to bottom)
in a temporary folder that holds a copy of the repository's ``examples/`` and
``contracts/``, so a block may read ``examples/...`` and write where it likes. A ```text
block that follows a python block with nothing but blank lines between them
is that block's exact printed output (trailing spaces aside). Any section
added to the page is run the same way.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "python.md"
FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    """A python block of the page, where it starts, and the output shown after it."""

    code: str
    line: int
    output: str | None


def python_blocks(text: str) -> list[Block]:
    """The page's python blocks, each with the text block that directly follows it."""
    fences = list(FENCE.finditer(text))
    blocks = []
    for index, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        following = fences[index + 1] if index + 1 < len(fences) else None
        adjacent = following is not None and not text[fence.end() : following.start()].strip()
        output = following.group(2) if adjacent and following.group(1) == "text" else None
        line = text.count("\n", 0, fence.start()) + 2
        blocks.append(Block(fence.group(2), line, output))
    return blocks


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.rstrip().splitlines()]


def test_the_block_reader_pairs_code_with_its_output() -> None:
    page = (
        "```python\nprint(1)\n```\n\n```text\n1\n```\nprose\n```python\nx = 2\n```\n"
        "between\n```text\nnot an output\n```\n"
    )
    blocks = python_blocks(page)
    assert [(b.code, b.line, b.output) for b in blocks] == [
        ("print(1)\n", 2, "1\n"),
        ("x = 2\n", 10, None),
    ]


@pytest.mark.slow
@pytest.mark.parametrize("page", [PAGE, ROOT / "README.md"], ids=["docs/python.md", "README"])
def test_every_python_block_of_the_page_runs(
    page: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocks = python_blocks(page.read_text(encoding="utf-8"))
    assert blocks, f"{page} has no python block"
    for folder in ("examples", "contracts"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.chdir(tmp_path)
    # Offline always: nothing from the page may reach for the Hub.
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(variable, "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    namespace: dict[str, object] = {"__name__": "docs_python"}
    for block in blocks:
        capsys.readouterr()
        exec(compile(block.code, f"{page.name}:{block.line}", "exec"), namespace)
        printed = capsys.readouterr().out
        if block.output is not None:
            assert _lines(printed) == _lines(block.output), (
                f"output of the block at line {block.line}"
            )
