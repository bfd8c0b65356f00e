"""docs/security.md names a test for every attack: each one it names must exist.

The page's promise is that every row was reproduced and is now refused; a row
whose test was renamed or removed would be a claim nothing checks.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "security.md"


def _test_sources() -> str:
    return "".join(path.read_text() for path in sorted((ROOT / "tests").rglob("*.py")))


def test_every_test_the_security_page_names_exists() -> None:
    text = PAGE.read_text()
    files = set(re.findall(r"`(?:tests/)?(test_\w+\.py)", text))
    names = set(re.findall(r"`(?:[\w/]+\.py::)?(test_\w+)", text)) - {f[:-3] for f in files}
    assert len(names) > 50, "the page should name the tests behind its tables"
    sources = _test_sources()
    missing = sorted(name for name in names if f"def {name}" not in sources)
    assert missing == [], f"docs/security.md names tests that do not exist: {missing}"
    assert sorted(f for f in files if not list((ROOT / "tests").rglob(f))) == []


def test_the_page_says_what_evalkit_cannot_detect() -> None:
    headings = re.findall(r"^## (.+)$", PAGE.read_text(), re.M)
    assert "What evalkit cannot detect" in headings
