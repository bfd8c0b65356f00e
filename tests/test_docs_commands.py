"""The README's and docs/*.md's ``evalkit`` command lines: every one parses, marked blocks run.

Every ``evalkit ...`` line of a code block (``$ evalkit ...`` after a prompt, or
a bare line in a block without prompts) is parsed against the real click
command line, without running it: an unknown command, an unknown option, a
bad choice or a deprecated spelling fails, naming the page and the line. The
shell around a command is read as a shell would (``\\`` continuations,
``# comments``, ``VAR=value`` prefixes, pipes, ``;``, redirections). A usage
line (``[--seq-len N]``, ``keep_start|keep_end``) has every option it names
and every choice it lists checked. An upper-case placeholder (``FILE``,
``DIR``, ``N``), ``<...>`` or ``$var`` stands for any value. A line elided with
``…`` may leave a required option out. A line whose shown output is
``evalkit: error: ...`` may fail to parse, but only with the error the page
shows.

A block marked ``<!-- run -->`` on the line before its fence runs, top to
bottom with the page's other marked blocks (like the cells of a notebook), in a
temporary folder holding a copy of ``examples/`` and ``contracts/``;
``<!-- run after: CMD -->`` runs setup lines first that the page does not show
(one command a line), ``<!-- run slow ... -->`` makes the page's test slow.
Each command's exit code must be the one the page states (``# exit 1`` on the
line, ``$ echo $?`` and the code after it, ``evalkit: error:`` for 2; else 0),
and its shown output, lines after a ``$`` command or the plain block right
after a bare one, must be what it prints (see :func:`output_matches`).
docs/development.md documents the markers.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import itertools
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest

from evalkit.cli import cli, main

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(
    r"(?:^<!--\s*(?P<run>run)(?P<slow>\s+slow)?"
    r"(?:\s+after:(?P<after>(?:(?!-->).)*?))?\s*-->[ \t]*\n)?"
    r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$",
    re.MULTILINE | re.DOTALL,
)
SHELL_BLOCKS = {"", "console", "bash", "sh", "shell", "text"}
SEPARATORS = {"|", "||", "&&", ";", "&"}
REDIRECT = re.compile(r"^\d*(>>?|<)(&\d+)?")
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_]*|<[^>]*>|\$\w+|\$\{\w+\})$")
ELISION = {"…", "..."}
SHELL_WORDS = {"do", "then", "else", "time"}  # before a command: for ...; do evalkit ...


@dataclass
class Command:
    """One ``evalkit`` command line of a page, and what the page shows it doing."""

    page: str
    line: int
    text: str
    argvs: list[list[str]]  # one argv per alternative of a synopsis line
    elided: bool = False
    synopsis: bool = False  # a usage line: [--opt N], a|b; its options and choices are checked
    output: str = ""
    exit_code: int | None = None  # stated by the page; None: 0 unless it shows an error
    shell: bool = False  # pipes, redirections or variables: runs in bash

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}: {self.text}"

    def expected_exit(self) -> int:
        if self.exit_code is not None:
            return self.exit_code
        return 2 if self.output.lstrip().startswith("evalkit: error:") else 0


@dataclass
class Block:
    """A code block of a page: its commands, and whether the page marks it to run."""

    page: str
    line: int
    body: str
    run: bool
    after: list[str]  # setup lines, run first
    prompted: bool
    slow: bool = False
    commands: list[Command] = field(default_factory=list)
    shell_lines: list[tuple[str, str, int | None]] = field(default_factory=list)


def _page_name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _logical_lines(body: str, prompted: bool) -> Iterator[tuple[int, str]]:
    """``(offset of the first line, text)`` of each line, ``\\`` continuations joined,
    and, in a block without prompts, the indented lines that go on a usage line."""
    lines = body.split("\n")
    index = 0
    while index < len(lines):
        start, text = index, lines[index]
        while index + 1 < len(lines):
            following = lines[index + 1]
            if text.rstrip().endswith("\\"):
                text = text.rstrip()[:-1]
            elif prompted or not _is_usage(text) or not following[:1].isspace():
                break
            index += 1
            text = text.rstrip() + " " + following.strip()
        yield start, text
        index += 1


def _is_usage(line: str) -> bool:
    return bool(re.match(r"^\s*evalkit\s[^#]*\[", line))


def _segments(tokens: list[str]) -> list[list[str]]:
    """The simple commands of a shell line: split at pipes and ``;``, redirections dropped."""
    segments: list[list[str]] = [[]]
    skip = False
    for token in tokens:
        if skip:
            skip = False
            continue
        if token in SEPARATORS:
            segments.append([])
            continue
        if (match := REDIRECT.match(token)) is not None:
            skip = match.end() == len(token)  # "> file": the file is the next word
            continue
        if token.endswith(";") and len(token) > 1:
            segments[-1].append(token[:-1])
            segments.append([])
            continue
        segments[-1].append(token)
    return [segment for segment in segments if segment]


def _evalkit_argv(segment: list[str]) -> list[str] | None:
    words = list(segment)
    while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in SHELL_WORDS):
        words.pop(0)
    return words[1:] if words and words[0] == "evalkit" else None


def parse_line(text: str) -> tuple[list[list[str]], bool, bool]:
    """The argvs of the ``evalkit`` commands of one shell line, whether it is elided
    (``…``), and whether it needs a shell to run (anything but one plain command)."""
    elided = any(mark in text for mark in ELISION)
    if _is_usage(text):  # [--seq-len N]: words, brackets and all; see check_usage
        words = text.split("#")[0].split()
        return [words[words.index("evalkit") + 1 :]], elided, True
    tokens = shlex.split(text, comments=True)
    segments = _segments(tokens)
    argvs = []
    for segment in segments:
        argv = _evalkit_argv(segment)
        if argv is not None:
            argvs.append([word for word in argv if word not in ELISION])
    shell = len(segments) != 1 or bool(re.search(r"[|;<>$]|^\s*\w+=", text.split("#")[0]))
    return argvs, elided, shell


def _stated_exit(text: str) -> int | None:
    match = re.search(r"#.*?\bexit (\d+)", text)
    return int(match.group(1)) if match else None


def _output_after(logical: list[tuple[int, str]], position: int) -> str:
    """What a prompted block shows after the command at ``position``, up to the next prompt."""
    shown = []
    for _, later in logical[position + 1 :]:
        if later.startswith("$ "):
            break
        shown.append(later)
    return "\n".join(shown)


def _echoed_exit(logical: list[tuple[int, str]], position: int, stated: int | None) -> int | None:
    """The exit code a ``$ echo $?`` right after the command at ``position`` shows."""
    following = [n for n in range(position + 1, len(logical)) if logical[n][1].startswith("$ ")]
    if following and logical[following[0]][1].strip() == "$ echo $?":
        echoed = logical[following[0] + 1][1].strip() if following[0] + 1 < len(logical) else ""
        return int(echoed) if echoed.isdigit() else stated
    return stated


def _output_block(text: str, fences: list[re.Match[str]], index: int) -> str | None:
    """The plain block right after fence ``index`` (nothing but blank lines between): the
    output of a bare command; None when there is none."""
    if index + 1 >= len(fences):
        return None
    fence, following = fences[index], fences[index + 1]
    if text[fence.end() : following.start()].strip() or following.group("run") is not None:
        return None
    output = following.group("body")
    if following.group("lang") not in ("", "text") or re.search(r"^\$ |^evalkit\s", output, re.M):
        return None
    return output


def blocks_of(text: str, page: str) -> list[Block]:
    """The shell blocks of a page that hold an ``evalkit`` command (or are marked to run)."""
    fences = list(FENCE.finditer(text))
    blocks = []
    for index, fence in enumerate(fences):
        if fence.group("lang") not in SHELL_BLOCKS:
            continue
        body = fence.group("body")
        first_line = text.count("\n", 0, fence.start("lang")) + 2
        prompted = any(line.startswith("$ ") for line in body.split("\n"))
        run = fence.group("run") is not None
        setup = (fence.group("after") or "").split("\n")
        after = [
            line.strip() for line in setup if line.strip() and not line.strip().startswith("#")
        ]
        block = Block(page, first_line, body, run, after, prompted, bool(fence.group("slow")))
        logical = list(_logical_lines(body, prompted))
        for position, (offset, line) in enumerate(logical):
            if (prompted and not line.startswith("$ ")) or not line.strip("$ ").split("#")[0]:
                continue
            command_text = line[2:] if prompted else line
            if not prompted and not re.match(r"^\s*(\w+=\S*\s+)*evalkit\s", line):
                block.shell_lines.append((command_text, "", None))
                continue
            output = _output_after(logical, position) if prompted else ""
            try:
                argvs, elided, shell = parse_line(command_text)
            except ValueError as error:  # shlex: an unbalanced quote
                raise AssertionError(f"{page}:{first_line + offset}: {error}") from None
            exit_code = _stated_exit(command_text)
            if prompted:
                exit_code = _echoed_exit(logical, position, exit_code)
            if not argvs:
                block.shell_lines.append((command_text, output, exit_code))
                continue
            command = Command(page, first_line + offset, command_text.strip(), argvs, elided)
            command.synopsis = _is_usage(command_text)
            command.output, command.exit_code, command.shell = output, exit_code, shell
            block.commands.append(command)
            block.shell_lines.append((command_text, output, exit_code))
        output = _output_block(text, fences, index)
        if not prompted and len(block.commands) == 1 and output is not None:
            block.commands[0].output = output
            command_text, _, exit_code = block.shell_lines[-1]
            block.shell_lines[-1] = (command_text, output, exit_code)
        if block.commands or block.run:
            blocks.append(block)
    return blocks


# -- parsing against the click command line ----------------------------------------------


def _resolve(words: list[str]) -> tuple[click.Command, click.Context, list[str]]:
    """The (sub)command ``words`` name, its context under ``evalkit``, and the words after it."""
    group: click.Command = cli
    ctx = cli.make_context("evalkit", list(words), resilient_parsing=False)
    rest = [*getattr(ctx, "_protected_args", []), *ctx.args]
    while isinstance(group, click.Group) and rest:
        name, command, rest = group.resolve_command(ctx, rest)
        assert command is not None and name is not None
        ctx = click.Context(command, info_name=name, parent=ctx)
        group = command
    return group, ctx, rest


def check_argv(argv: list[str]) -> list[str]:
    """Parse ``argv`` as ``evalkit`` would, without running the command.

    Raises click's error for a line click refuses; returns the deprecated
    spellings the line uses.
    """
    command, probe, args = _resolve(argv)
    if isinstance(command, click.Group):
        return []  # "evalkit contract": the group's help
    aliases = getattr(command, "aliases", {})
    deprecated = [word for word in args if word.split("=")[0] in aliases]
    assert probe.parent is not None
    command.make_context(probe.info_name, args, parent=probe.parent, resilient_parsing=False)
    return deprecated


def _is_placeholder_for(error: click.BadParameter, argv: list[str]) -> bool:
    """Whether the value click refused is a placeholder (``N``, ``<rev>``, ``$engine``)."""
    if error.param is None:
        return False
    names = [*error.param.opts, *error.param.secondary_opts]
    return any(
        word in names and PLACEHOLDER.match(value) for word, value in itertools.pairwise(argv)
    )


def check_usage(command: Command) -> None:
    """A usage line: every option it names exists (not deprecated), every choice it lists is one."""
    words = [word.strip("[]()") for word in command.argvs[0]]
    found, _, _ = _resolve([word for word in words[:2] if re.match(r"^[a-z][\w-]*$", word)][:1])
    if isinstance(found, click.Group):
        found, _, _ = _resolve(words[:2])
    options = {
        name: param for param in found.params for name in [*param.opts, *param.secondary_opts]
    }
    aliases = getattr(found, "aliases", {})
    text = " ".join(words)
    for flag in re.findall(r"(?<![\w-])--?[a-zA-Z][\w-]*", text):
        assert flag not in aliases, f"{command.where}\n  {flag} is a deprecated spelling"
        assert flag in options, f"{command.where}\n  No such option: {flag}"
    for flag, values in re.findall(r"(--[\w-]+)[ =]([\w.,:-]+(?:\|[\w.,:-]+)+)", text):
        kind = options[flag].type
        if isinstance(kind, click.Choice):
            for value in values.split("|"):
                assert value in kind.choices, (
                    f"{command.where}\n  {flag}: {value!r} is not one of {list(kind.choices)}"
                )


def check_command(command: Command) -> None:
    """Fail unless every argv of ``command`` parses, as the page shows it."""
    if command.synopsis:
        check_usage(command)
        return
    for argv in command.argvs:
        try:
            deprecated = check_argv(argv)
        except click.exceptions.Exit:  # --help, --version
            continue
        except click.MissingParameter:
            if command.elided:
                continue
            raise
        except click.UsageError as error:
            shown = command.output.strip()
            if shown.startswith("evalkit: error:") and error.format_message() in shown:
                continue
            if isinstance(error, click.BadParameter) and _is_placeholder_for(error, argv):
                continue
            raise AssertionError(f"{command.where}\n  {error.format_message()}") from None
        for word in deprecated:
            assert f"{word.split('=')[0]} is deprecated" in command.output, (
                f"{command.where}\n  {word} is a deprecated spelling; use the current one"
            )


def _page_commands(page: Path) -> list[Command]:
    text = page.read_text(encoding="utf-8")
    return [command for block in blocks_of(text, _page_name(page)) for command in block.commands]


@pytest.mark.parametrize("page", PAGES, ids=_page_name)
def test_every_command_line_of_the_page_parses(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # an empty folder: a path the page names (demo-out/..., examples/...) is not checked
    monkeypatch.chdir(tmp_path)
    failures = []
    for command in _page_commands(page):
        try:
            check_command(command)
        except (AssertionError, click.ClickException) as error:
            message = error.format_message() if isinstance(error, click.ClickException) else error
            failures.append(
                f"{command.where}\n  {message}"
                if command.where not in str(message)
                else str(message)
            )
    assert not failures, "\n".join(failures)


def test_the_docs_show_many_commands() -> None:
    """The extractor finds the commands the pages show (a reader that finds none passes)."""
    commands = [command for page in PAGES for command in _page_commands(page)]
    assert len(commands) >= 90, len(commands)
    assert sum(1 for page in PAGES if _page_commands(page)) >= 20
    # and the run markers: a marker the reader misses would leave its block untested
    marked = [block for page in PAGES for block in _marked_blocks(page)]
    assert len(marked) >= 20 and all(block.commands for block in marked), len(marked)
    stray = [page.name for page in PAGES if "<!-- run" in FENCE.sub("", page.read_text())]
    assert not stray, f"a run marker not on the line before a fence: {stray}"


# -- the extractor and the parser on planted lines ---------------------------------------

NEAR_DUP_ERROR = (
    "evalkit: error: Invalid value for '--near-dup': must be a Jaccard threshold in (0, 1], "
    "got 1.5 (see 'evalkit split --help')"
)
PLANTED = """\
prose
```console
$ evalkit split data.jsonl --out split --group g \\
    --seed 7 --sizes 8,1,1   # a comment
split 10 items
$ cat p.jsonl | GITHUB_ACTIONS=true evalkit score --contract C --gold G --pred /dev/stdin \\
    --out s -q 2>/dev/null
$ evalkit gate a b   # exit 1
FAIL
$ evalkit gate a c
FAIL
$ echo $?
1
$ evalkit split data.jsonl --out split --group g --near-dup 1.5
evalkit: error: Invalid value for '--near-dup': must be a Jaccard threshold in (0, 1], \
got 1.5 (see 'evalkit split --help')
```

<!-- run slow after: mkdir x
     touch x/y -->
```sh
evalkit tokens SPLIT --tokenizer DIR --text messages [--seq-len N] [--loss assistant|completion]
```

```
tokens output
```
""".replace("NEAR_DUP_ERROR", NEAR_DUP_ERROR)


def test_the_extractor_reads_prompts_continuations_pipes_and_synopses() -> None:
    blocks = blocks_of(PLANTED, "planted.md")
    assert [(block.line, block.run, block.slow, block.after) for block in blocks] == [
        (3, False, False, []),
        (21, True, True, ["mkdir x", "touch x/y"]),
    ]
    split, score, gate, echoed, bad, tokens = [c for block in blocks for c in block.commands]
    assert (split.line, split.argvs, split.output) == (
        3,
        [
            [
                "split",
                "data.jsonl",
                "--out",
                "split",
                "--group",
                "g",
                "--seed",
                "7",
                "--sizes",
                "8,1,1",
            ]
        ],
        "split 10 items",
    )
    assert score.line == 6 and score.shell
    assert score.argvs == [
        ["score", "--contract", "C", "--gold", "G", "--pred", "/dev/stdin", "--out", "s", "-q"]
    ]
    assert [c.expected_exit() for c in (gate, echoed, split, bad)] == [1, 1, 0, 2]
    assert echoed.output == "FAIL"
    assert tokens.synopsis and tokens.argvs == [
        ["tokens", "SPLIT", "--tokenizer", "DIR", "--text", "messages", "[--seq-len", "N]",
         "[--loss", "assistant|completion]"],
    ]  # fmt: skip
    assert tokens.output == "tokens output\n"
    for command in (split, score, gate, echoed, bad, tokens):
        check_command(command)


@pytest.mark.parametrize(
    ("line", "complaint"),
    [
        ("$ evalkit splitt data.jsonl --out s", "No such command 'splitt'"),
        ("$ evalkit split data.jsonl --out s --group g --sizez 8,1,1", "No such option '--sizez'"),
        (
            "$ evalkit tokens s --tokenizer t --text m --loss everything",
            "'everything' is not one of",
        ),
        ("$ evalkit tokens s --tokenizer t --text m [--loss assistant|everything]", "everything"),
        ("$ evalkit tokens s --tokenizer t [--seq-lenn N]", "No such option: --seq-lenn"),
        ("$ evalkit split data.jsonl", "Missing option '--out'"),
        ("$ evalkit plan --config c --batch 2", "--batch is a deprecated spelling"),
        ("$ evalkit split d --out s --near-dup 1.5\nevalkit: error: not this one", "near-dup"),
    ],
)
def test_a_planted_bad_line_fails_naming_page_and_line(line: str, complaint: str) -> None:
    page = f"prose\n```console\n{line}\n```\n"
    (command,) = blocks_of(page, "planted.md")[0].commands
    with pytest.raises((AssertionError, click.UsageError)) as failure:
        check_command(command)
    message = (
        failure.value.format_message()
        if isinstance(failure.value, click.UsageError)
        else str(failure.value)
    )
    assert complaint in message, message
    if isinstance(failure.value, AssertionError):
        assert message.startswith("planted.md:3: "), message


# -- the marked blocks run ---------------------------------------------------------------


TIMESTAMP = re.compile(r"\b\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?")


def _normalised(text: str, folder: Path) -> list[str]:
    """``text``'s lines, trailing spaces, the run's folder and its clock times left out."""
    text = text.replace(str(folder) + os.sep, "").replace(str(folder), ".")
    text = TIMESTAMP.sub("<time>", text)
    lines = [line.rstrip() for line in text.rstrip().splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    return lines


def output_matches(shown: list[str], printed: list[str]) -> bool:
    """Whether ``printed`` is the ``shown`` output, where a line ``…`` stands for any lines."""
    if not shown:
        return not printed
    if shown[0].strip() in ELISION:
        return any(output_matches(shown[1:], printed[skip:]) for skip in range(len(printed) + 1))
    return bool(printed) and shown[0] == printed[0] and output_matches(shown[1:], printed[1:])


def test_an_elided_output_matches_any_lines_in_its_place() -> None:
    assert output_matches(["a", "…", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "…"], ["a"])
    assert not output_matches(["a", "…", "d"], ["a", "b", "c"])
    assert not output_matches(["a", "b"], ["a", "c"])


def _run_in_process(argv: list[str]) -> tuple[int, str]:
    """``evalkit argv`` in this process: exit code, stdout and stderr as a terminal shows them."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
    code: object = 0
    with contextlib.redirect_stdout(stream), contextlib.redirect_stderr(stream):
        try:
            main(list(argv))
        except SystemExit as done:
            code = done.code
    stream.flush()
    return (code if isinstance(code, int) else 0 if code is None else 1), raw.getvalue().decode()


def _run_in_shell(line: str, folder: Path) -> tuple[int, str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    completed = subprocess.run(
        ["bash", "-c", line], cwd=folder, env=env, capture_output=True, text=True, check=False
    )
    return completed.returncode, completed.stderr + completed.stdout


def _marked_blocks(page: Path) -> list[Block]:
    return [
        block
        for block in blocks_of(page.read_text(encoding="utf-8"), _page_name(page))
        if block.run
    ]


# Commands that load a tokenizer or a model: a page that runs one is a slow test
# (`make unit-fast` leaves it out, `make test` runs it).
LOADS_MODELS = {"tokens", "smoke", "generate", "reload-check"}


def _run_param(page: Path) -> object:
    commands = [c for block in _marked_blocks(page) for c in block.commands]
    afters = [parse_line(line)[0] for block in _marked_blocks(page) for line in block.after]
    names = {argv[0] for c in commands for argv in c.argvs if argv} | {
        argv[0] for argvs in afters for argv in argvs if argv
    }
    slow = names & LOADS_MODELS or any(block.slow for block in _marked_blocks(page))
    marks = [pytest.mark.slow] if slow else []
    return pytest.param(page, id=_page_name(page), marks=marks)


RUN_PAGES = [_run_param(page) for page in PAGES if _marked_blocks(page)]


@pytest.mark.parametrize("page", RUN_PAGES)
def test_the_marked_blocks_of_the_page_run_as_shown(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for folder in ("examples", "contracts"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    for variable in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(variable, "1")
    failures = [
        failure for block in _marked_blocks(page) for failure in _run_block(block, tmp_path)
    ]
    assert not failures, "\n\n".join(failures)


def _run_block(block: Block, folder: Path) -> list[str]:
    """Run a marked block in ``folder``: what differs from the page, one entry a command."""
    where = f"{block.page}:{block.line}"
    for line in block.after:
        argvs, _, shell = parse_line(line)
        ran = _run_in_process(argvs[0]) if argvs and not shell else _run_in_shell(line, folder)
        code, printed = ran
        if code != 0:
            return [f"{where}: the setup {line!r} exits {code}:\n{printed}"]
    if not block.prompted and len(block.commands) != len(block.shell_lines):
        code, printed = _run_in_shell(block.body, folder)  # a script: for loops, diff
        return [f"{where}: the block exits {code}:\n{printed}"] if code else []
    failures = []
    for text, shown, stated in block.shell_lines:
        if text.strip() == "echo $?":
            continue
        command = next((c for c in block.commands if c.text == text.strip()), None)
        if command is not None and not command.shell:
            code, printed = _run_in_process(command.argvs[0])
            expected = command.expected_exit()
        else:
            code, printed = _run_in_shell(text, folder)
            expected = stated if stated is not None else 0
        label = f"{where}: {text.strip()}"
        if code != expected:
            failures.append(f"{label}\n  exit {code}, the page says {expected}:\n{printed}")
            continue
        shown_lines = _normalised(shown, folder)
        printed_lines = _normalised(printed, folder)
        if shown_lines and not output_matches(shown_lines, printed_lines):
            diff = difflib.unified_diff(
                shown_lines, printed_lines, "the page", "evalkit", lineterm=""
            )
            lines = list(diff)
            cut = [f"... {len(lines) - 40} more lines of the diff"] if len(lines) > 40 else []
            failures.append(f"{label}\n  prints another output:\n" + "\n".join(lines[:40] + cut))
    return failures
