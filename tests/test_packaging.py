"""What the wheel ships: the ``py.typed`` marker, so type checkers read evalkit's hints."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow  # builds a wheel in a subprocess


def test_the_wheel_ships_py_typed(tmp_path: Path) -> None:
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".venv*", ".git", "*.egg-info", "build", "demo-out", ".*cache", ".hypothesis"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        check=True,
        capture_output=True,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("evalkit-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "evalkit/py.typed" in names
    assert "evalkit/io/_table.py" in names  # the listing is the package's
