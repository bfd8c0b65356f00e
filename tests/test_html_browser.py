"""report.html in a real browser: Debian's headless Chromium renders it cleanly and visibly.

Chromium runs with the network off (no background requests, every host name
unresolvable) and a fresh profile, logs the page's console to stderr, and
takes a screenshot. A page passes when the console says nothing (a blocked
external reference, an SVG or CSS error would each say something) and the
screenshot shows the charts' colours, not a blank page.

``make test`` installs the ``chromium`` package when it is missing (as root,
with apt-get). Elsewhere the test is skipped with that hint, except under CI
(``CI`` set), where a missing browser fails it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from simulated_runs import scored_run

from evalkit import compare
from evalkit.comparison.outputs import flip_outputs
from evalkit.report.html.compare import render_comparison_html
from evalkit.report.html.page import PALETTE

pytestmark = pytest.mark.slow  # a headless browser

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--hide-scrollbars",
    "--enable-logging=stderr",
    "--v=0",
]


@pytest.fixture(scope="module")
def chromium() -> str:
    path = shutil.which("chromium")
    if path is None:
        hint = "Debian's chromium package is not installed (make test installs it as root)"
        if os.environ.get("CI"):
            pytest.fail(hint)
        pytest.skip(hint)
    return path


def render(chromium: str, page: Path, folder: Path, height: int = 1600) -> tuple[list[str], Path]:
    """Open ``page``; return its console messages and the screenshot."""
    screenshot = folder / f"{page.stem}.png"
    command = [
        chromium,
        *FLAGS,
        f"--user-data-dir={folder / 'profile'}",
        f"--screenshot={screenshot}",
        f"--window-size=1280,{height}",
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert screenshot.is_file(), done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    return console, screenshot


def pixels(screenshot: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(screenshot) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int16)


def near(image: np.ndarray, colour: str, tolerance: int = 40) -> int:
    """How many pixels are within ``tolerance`` of ``colour`` in every channel."""
    rgb = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(image - rgb) <= tolerance).all(axis=2).sum())


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("browser")
    runs = {name: scored_run(folder, name, seed, rate, cli=True)
            for name, seed, rate in (("baseline", 1, 0.4), ("candidate-a", 2, 0.2),
                                     ("candidate-b", 3, 0.3))}  # fmt: skip
    report = compare(runs["baseline"], runs["candidate-a"], runs["candidate-b"], resamples=500)
    compared = folder / "compare.html"
    compared.write_text(render_comparison_html(report, flip_outputs(report.candidates)))
    return {"compare": compared, "score": runs["baseline"] / "report.html"}


@pytest.mark.parametrize("name", ["compare", "score"])
def test_the_page_renders_without_console_messages_and_is_not_blank(
    chromium: str, pages: dict[str, Path], name: str, tmp_path: Path
) -> None:
    console, screenshot = render(chromium, pages[name], tmp_path)
    assert console == []
    image = pixels(screenshot)
    assert image.shape == (1600, 1280, 3)
    assert image.std() > 20  # not one flat colour
    assert (image.min(axis=2) < 200).mean() > 0.02  # ink: text, marks, shading
    assert near(image, PALETTE["blue"]) > 100  # the charts' marks were drawn


def test_the_console_check_catches_an_external_reference(
    chromium: str, pages: dict[str, Path], tmp_path: Path
) -> None:
    text = pages["compare"].read_text()
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace("<main>", '<main><img src="https://example.com/x.png">'))
    console, _ = render(chromium, broken, tmp_path)
    assert any("Content Security Policy" in line for line in console), console


def test_a_blank_page_is_caught(chromium: str, tmp_path: Path) -> None:
    blank = tmp_path / "blank.html"
    blank.write_text("<!doctype html><title>blank</title>")
    console, screenshot = render(chromium, blank, tmp_path)
    assert console == []
    assert pixels(screenshot).std() < 1
