"""Chat templates render under a time limit, in the main thread, other threads and processes.

A template is code from the model's folder: jinja's sandbox blocks its
escapes (kept, tested here too), and a template that loops for ever (two
nested ``range(100000)``) is stopped once one conversation's render has used
the limit's CPU time: exit 2, one line naming the template file and the row.
A slow but finishing template is not stopped: the limit applies to each
conversation afresh. The limit is lowered here so that the tests take a
second, not ten.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT, assert_one_line_error

import evalkit.tokens.render as render
from evalkit.tokens.load import load_tokenizer
from evalkit.tokens.render import TemplateFailure, render_all
from evalkit.tokens.time_limit import TemplateTimeout, time_limit

pytest.importorskip("transformers")

ENDLESS = (
    "{%- for i in range(100000) %}{%- for j in range(100000) %}{%- endfor %}{%- endfor %}"
    "{%- for message in messages %}{{ message['content'] }}{%- endfor %}"
)
ESCAPE = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
CHAT = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
LIMIT = 0.5


def _tokenizer_with(folder: Path, template: str) -> Path:
    shutil.copytree(ROOT / "examples" / "tokenizer", folder, ignore=shutil.ignore_patterns("*.py"))
    (folder / "chat_template.jinja").write_text(template)
    return folder


@pytest.fixture
def short_limit(monkeypatch: pytest.MonkeyPatch) -> float:
    monkeypatch.setattr(render, "RENDER_SECONDS", LIMIT)
    return LIMIT


def test_tokens_stops_an_endless_template(run_cli, short_limit, tmp_path: Path) -> None:
    folder = _tokenizer_with(tmp_path / "tok", ENDLESS)
    data = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
    started = time.process_time()
    result = run_cli("tokens", data, "--tokenizer", folder, "--text", "messages")
    assert_one_line_error(
        result, str(folder / "chat_template.jinja"), f"more than {LIMIT:g} s of CPU time",
        "without finishing", "fix the template",
    )  # fmt: skip
    assert time.process_time() - started < 60  # not the hours the template asks for


def test_the_limit_holds_in_another_thread(short_limit, tmp_path: Path) -> None:
    tokenizer = load_tokenizer(_tokenizer_with(tmp_path / "tok", ENDLESS))
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(render_all, tokenizer, [CHAT, CHAT], where=lambda r: f"item {r}")
        with pytest.raises(TemplateTimeout, match="on item 0 without finishing"):
            future.result(timeout=120)
    assert threading.current_thread() is threading.main_thread()


def test_the_limit_holds_in_a_fresh_process(tmp_path: Path) -> None:
    """What a worker process (reload-check's, smoke's) is: a new interpreter's main thread."""
    folder = _tokenizer_with(tmp_path / "tok", ENDLESS)
    code = (
        "import evalkit.tokens.render as r\n"
        "from evalkit.tokens.load import load_tokenizer\n"
        f"r.RENDER_SECONDS = {LIMIT}\n"
        f"r.render_all(load_tokenizer({str(folder)!r}), [[{{'role': 'user', 'content': 'x'}}]])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert done.returncode != 0
    assert "TemplateTimeout" in done.stderr and "chat_template.jinja" in done.stderr


def test_a_slow_template_that_finishes_is_not_stopped(short_limit, tmp_path: Path) -> None:
    """Each conversation gets the whole limit: twelve renders of a quarter of it each pass.

    A quarter, not a half: the estimate from a short probe varies with the
    machine's caches, and the whole (three limits) still shows the limit is
    per conversation.
    """
    slow = (
        "{%- for i in range(N) %}{%- for j in range(1000) %}{%- endfor %}{%- endfor %}"
        "{{ messages[0]['content'] }}"
    )
    probe = load_tokenizer(_tokenizer_with(tmp_path / "probe", slow.replace("N", "20")))
    render_all(probe, [CHAT])  # compiled once
    started = time.thread_time()
    render_all(probe, [CHAT] * 5)  # the first conversation is rendered twice: 6 renders
    per_loop = (time.thread_time() - started) / 6 / 20
    loops = max(int(LIMIT / 4 / max(per_loop, 1e-9)), 1)  # a render of about a quarter
    tokenizer = load_tokenizer(_tokenizer_with(tmp_path / "tok", slow.replace("N", str(loops))))
    started = time.thread_time()
    assert render_all(tokenizer, [CHAT] * 12) == ["hi"] * 12
    assert time.thread_time() - started > 1.5 * LIMIT  # longer than one limit, as a whole


def test_no_exception_strays_after_the_block(tmp_path: Path) -> None:
    """A stop that fires as a render ends is taken back: nothing is raised later."""
    for _ in range(200):
        with time_limit(0.0005, "t", str) as watch:
            watch.at(0)
            total = sum(range(2000))
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:  # Python code running: a pending stop would land here
        total += 1
    assert total > 0


def test_the_sandbox_still_blocks_escapes(run_cli, tmp_path: Path) -> None:
    folder = _tokenizer_with(tmp_path / "tok", ESCAPE)
    tokenizer = load_tokenizer(folder)
    with pytest.raises(TemplateFailure, match=r"SecurityError|access to attribute"):
        render_all(tokenizer, [CHAT])
