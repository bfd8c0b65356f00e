"""The command line as a whole: help for every command, version, exit codes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from evalkit.cli import COMMANDS, cli

ROOT = Path(__file__).resolve().parents[1]


def test_top_level_help_lists_every_command() -> None:
    result = CliRunner().invoke(cli, ["--help"])
    assert result.exit_code == 0
    for name in COMMANDS:
        assert name in result.output


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_help_and_is_documented(name: str) -> None:
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output
    assert len(result.output.splitlines()) > 5
    readme = (ROOT / "README.md").read_text()
    # the README's table links the command's page, which shows the command
    pages = re.findall(r"\[(`[^\]]*`)\]\((docs/[^)#]+)\)", readme)
    linked = [page for label, page in pages if name in re.findall(r"`([^`]+)`", label)]
    if name == "contract":  # documented with score, on the contracts page
        linked = ["docs/contracts.md"]
    assert linked, f"the README's commands table does not link a page for {name}"
    assert any(f"evalkit {name}" in (ROOT / page).read_text() for page in linked), name


def test_the_readme_is_short_and_starts_with_the_two_commands() -> None:
    readme = (ROOT / "README.md").read_text().splitlines()
    assert len(readme) <= 300
    fence = readme.index("```sh")
    assert readme[fence + 1].startswith("make demo") and readme[fence + 2].startswith("make test")


def test_version() -> None:
    from evalkit import __version__

    result = CliRunner().invoke(cli, ["--version"])
    assert result.exit_code == 0
    assert __version__ in result.output


def test_unknown_command_is_a_usage_error() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "evalkit", "no-such-command"], capture_output=True, text=True
    )
    assert completed.returncode == 2
    assert "No such command" in completed.stderr


HEAVY = (
    "polars", "pyarrow", "sklearn", "pandera", "numpy", "scipy", "pydantic", "jsonschema",
    "torch", "transformers", "peft", "ray",
)  # fmt: skip


@pytest.mark.parametrize("command", [[], *([name] for name in sorted(COMMANDS))])
def test_help_does_not_import_heavy_libraries(command: list[str]) -> None:
    """Start-up is what CI loops pay: help must not load polars, numpy and friends."""
    code = (
        "import sys; from evalkit.cli import main\n"
        f"try:\n    main({[*command, '--help']!r})\nexcept SystemExit:\n    pass\n"
        f"heavy = [m for m in {HEAVY!r} if m in sys.modules]\n"
        "print('HEAVY=' + ','.join(heavy))"
    )
    completed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert completed.stdout.strip().splitlines()[-1] == "HEAVY=", completed.stdout


def test_help_imports_no_heavy_library() -> None:
    # The whole process, as a user runs it: `python -X importtime` lists every
    # module imported. An import graph, not a stopwatch: a heavy import at
    # start-up (which costs seconds) fails here on a busy machine and an idle one alike.
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "evalkit", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = [line for line in completed.stderr.splitlines() if line.startswith("import time:")]
    modules = {line.rsplit("|", 1)[-1].strip() for line in lines[1:]}
    assert "evalkit.cli" in modules  # the listing is the real one
    heavy = {module.split(".")[0] for module in modules} & set(HEAVY)
    assert not heavy, sorted(heavy)
    # No command's implementation either: only the CLI's own modules and the commands'
    # options (light modules, read to build the options) load.
    packages = ("evalkit.scoring", "evalkit.splitting", "evalkit.leakage")
    loaded = {m for m in modules if m.startswith(packages)}
    options = {"evalkit.splitting", "evalkit.splitting.options"}
    options |= {"evalkit.scoring", "evalkit.scoring.options"}
    assert loaded <= options | {"evalkit.leakage", "evalkit.leakage.options"}, sorted(loaded)
