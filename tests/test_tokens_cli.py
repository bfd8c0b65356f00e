"""``evalkit tokens`` on the command line: exit codes, bad input, --json, --html."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import ROOT, assert_one_line_error
from tokens_fixtures import build_tokenizer, conversations, write_conversations, write_jsonl

pytest.importorskip("transformers")

SCHEMA = ROOT / "docs" / "schemas" / "tokens-report.schema.json"


@pytest.fixture(scope="module")
def chatml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tokenizer(tmp_path_factory.mktemp("tok") / "chatml", "chatml")


@pytest.fixture(scope="module")
def splits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder like evalkit split writes: manifest.json naming train and test."""
    folder = tmp_path_factory.mktemp("split")
    write_conversations(folder / "train.jsonl", conversations(30, seed=1))
    write_conversations(folder / "test.jsonl", conversations(10, seed=2))
    (folder / "manifest.json").write_text(json.dumps({"splits": {"train": {}, "test": {}}}))
    return folder


def test_a_correct_setup_exits_0_and_prints_every_check(run_cli, chatml, splits):
    result = run_cli("tokens", splits, "--tokenizer", chatml, "--text", "messages", "--id", "id")
    assert result.exit_code == 0, result.stderr
    for name in ("template", "render_parity", "double_bos", "stop_token", "pad_is_eos"):
        assert name in result.stdout
    assert "train" in result.stdout and "test" in result.stdout
    assert "pass: every check passed" in result.stdout


def test_a_failing_check_exits_1(run_cli, splits, tmp_path):
    wrong_eos = build_tokenizer(tmp_path / "t", "chatml", eos="<|endoftext|>")
    result = run_cli("tokens", splits, "--tokenizer", wrong_eos, "--text", "messages")
    assert result.exit_code == 1
    assert "FAIL: stop_token" in result.stdout
    assert "'<|im_end|>'" in result.stdout  # what the turns end with


def test_json_report_follows_its_schema_and_is_deterministic(run_cli, chatml, splits, tmp_path):
    import jsonschema

    args = ["tokens", splits, "--tokenizer", chatml, "--text", "messages", "--id", "id"]
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert run_cli(*args, "--seq-len", "60", "--json", first).exit_code == 1
    assert run_cli(*args, "--seq-len", "60", "--json", second).exit_code == 1
    assert first.read_bytes() == second.read_bytes()
    report = json.loads(first.read_text())
    jsonschema.validate(report, json.loads(SCHEMA.read_text()))
    assert list(report["splits"]) == ["train", "test"]
    truncation = next(c for c in report["checks"] if c["name"] == "truncation")
    assert truncation["count"] == sum(truncation["counts"].values())
    assert report["tokenizer"]["chat_template_sha256"]


def test_html_shows_sampled_tokens_and_is_self_contained(run_cli, chatml, splits, tmp_path):
    args = ["tokens", splits, "--tokenizer", chatml, "--text", "messages", "--id", "id"]
    page, again = tmp_path / "a.html", tmp_path / "b.html"
    assert run_cli(*args, "--html", page, "--sample", "2").exit_code == 0
    assert run_cli(*args, "--html", again, "--sample", "2").exit_code == 0
    html = page.read_text()
    assert page.read_bytes() == again.read_bytes()
    assert "<script" not in html and "http://" not in html and "https://" not in html
    assert html.count("<h3 ") == 4  # 2 examples x 2 splits
    assert "&lt;|im_end|&gt;<sub>" in html  # the special token, with its id
    assert 'class="tok sup' in html and "inference prompt" in html


def test_html_marks_the_first_divergence(run_cli, tmp_path):
    template = (
        "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>\\n' }}{%- endfor %}"
        "{%- if add_generation_prompt %}"
        "{{- '<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    )
    folder = build_tokenizer(tmp_path / "t", "chatml", template=template)
    split = write_conversations(tmp_path / "train.jsonl", conversations(5, seed=1))
    page = tmp_path / "page.html"
    result = run_cli("tokens", split, "--tokenizer", folder, "--text", "messages", "--html", page)
    assert result.exit_code == 1 and "render_parity" in result.stdout
    html = page.read_text()
    outlined = re.findall(r'class="tok[^"]* div"', html)
    assert len(outlined) == 1 + 10  # the legend, and both columns of each of 5 examples
    assert "leaves the training sequence at token" in html


def test_no_chat_template_fails_naming_it(run_cli, splits, tmp_path):
    bare = build_tokenizer(tmp_path / "bare", "chatml", template=None)
    result = run_cli(
        "tokens", splits, "--tokenizer", bare, "--text", "messages", "--json", tmp_path / "r.json"
    )
    assert result.exit_code == 1
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1 and "has no chat template" in lines[0] and str(bare) in lines[0]
    report = json.loads((tmp_path / "r.json").read_text())
    template = next(c for c in report["checks"] if c["name"] == "template")
    assert (template["status"], template["count"]) == ("fail", 40)


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--seq-len", "0"], ["--seq-len", "positive"]),
        (["--seq-len", "-3"], ["--seq-len", "-3"]),
        (["--text", "msgs"], ["no column 'msgs'", "train.jsonl"]),
        (["--sample", "3"], ["--sample", "--html"]),
        (["--loss", "completion"], ["--loss completion", "two --text"]),
    ],
)
def test_bad_options_are_one_line(run_cli, chatml, splits, args, fragments):
    text = [] if "--text" in args else ["--text", "messages"]
    result = run_cli("tokens", splits, "--tokenizer", chatml, *text, *args)
    assert_one_line_error(result, *fragments)


def test_bad_tokenizer_folders_are_one_line(run_cli, splits, tmp_path):
    args = ["--text", "messages"]
    missing = run_cli("tokens", splits, "--tokenizer", tmp_path / "nope", *args)
    assert_one_line_error(missing, "nope", "no such folder")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert_one_line_error(
        run_cli("tokens", splits, "--tokenizer", empty, *args), "holds no tokenizer files"
    )
    hub = run_cli("tokens", splits, "--tokenizer", "Qwen/Qwen2.5-0.5B-Instruct", *args)
    assert_one_line_error(hub, "Hub id", "never downloads")


def test_text_options_that_do_not_fit_the_data(run_cli, chatml, tmp_path):
    split = write_jsonl(
        tmp_path / "train.jsonl", [{"id": i, "text": f"refund {i}"} for i in range(5)]
    )
    base = ["tokens", split, "--tokenizer", chatml, "--text", "text"]
    assert_one_line_error(run_cli(*base, "--loss", "assistant"), "--loss assistant", "text")
    assert_one_line_error(run_cli(*base, "--encode", "template"), "--encode template")
    result = run_cli(*base)
    assert result.exit_code == 0, result.stderr  # a text column: the text checks pass or warn


def test_malformed_conversation_names_the_line(run_cli, chatml, tmp_path):
    split = write_jsonl(
        tmp_path / "train.jsonl",
        [
            {"id": 1, "messages": [{"role": "user", "content": "hi"}]},
            {"id": 2, "messages": [{"role": "user"}]},
        ],
    )
    result = run_cli("tokens", split, "--tokenizer", chatml, "--text", "messages")
    assert_one_line_error(result, "train.jsonl:2", "message 0")


def test_a_template_that_refuses_a_conversation_names_the_row(run_cli, tmp_path):
    template = (
        "{%- for message in messages %}{%- if message['role'] == 'system' %}"
        "{{- raise_exception('System role not supported') }}{%- endif %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
        "{%- endfor %}"
    )
    folder = build_tokenizer(tmp_path / "t", "chatml", template=template)
    chats = [
        [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}],
        [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}],
    ]
    split = write_conversations(tmp_path / "train.jsonl", chats)
    result = run_cli("tokens", split, "--tokenizer", folder, "--text", "messages")
    assert_one_line_error(result, "train.jsonl:2", "System role not supported")


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{%- for message in messages %}{{ message['content'] }", "TemplateSyntaxError"),
        ("{%- for message in messages %}{{ message['content'] | nosuch }}{%- endfor %}",
         "No filter named 'nosuch'"),
    ],
)  # fmt: skip
def test_a_template_that_does_not_compile_is_named_not_the_row(run_cli, tmp_path, template, reason):
    # No conversation is at fault: the error names the template's file and line.
    folder = build_tokenizer(tmp_path / "t", "chatml", template=template)
    split = write_conversations(tmp_path / "train.jsonl", conversations(3, seed=1))
    result = run_cli("tokens", split, "--tokenizer", folder, "--text", "messages")
    where = (
        "chat_template.jinja" if (folder / "chat_template.jinja").exists() else "tokenizer_config"
    )
    assert_one_line_error(result, where, "line 1", "does not compile", reason, "fix the template")
    assert "train.jsonl" not in result.stderr
    result = run_cli("split", split, "--out", tmp_path / "s", "--group", "id", "--text",
                     "messages", "--tokenizer", folder, "--sizes", "2,1")  # fmt: skip
    assert_one_line_error(result, where, "does not compile")


def test_a_template_that_rewrites_the_answer_asks_for_markers(run_cli, tmp_path):
    template = (
        "{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] | upper + '<|im_end|>\\n' }}{%- endfor %}"
    )
    folder = build_tokenizer(tmp_path / "t", "chatml", template=template)
    split = write_conversations(tmp_path / "train.jsonl", conversations(3, seed=1))
    result = run_cli("tokens", split, "--tokenizer", folder, "--text", "messages")
    assert_one_line_error(result, "train.jsonl:1", "{% generation %}")


def test_outputs_are_not_overwritten_without_force(run_cli, chatml, splits, tmp_path):
    out = tmp_path / "r.json"
    out.write_text("keep me")
    args = ["tokens", splits, "--tokenizer", chatml, "--text", "messages", "--json", out]
    assert_one_line_error(run_cli(*args), "exists already", "--force")
    assert out.read_text() == "keep me"
    assert run_cli(*args, "--force").exit_code == 0
    assert json.loads(out.read_text())["status"] == "pass"


def test_the_example_tokenizer_folder_loads_as_auto_tokenizer_does(tmp_path):
    from transformers import AutoTokenizer

    from evalkit.tokens.load import load_tokenizer

    folder = tmp_path / "example"
    shutil.copytree(ROOT / "examples" / "tokenizer", folder)
    ours = load_tokenizer(folder)
    auto = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    assert type(ours) is type(auto)
    text = "<|im_start|>user\nMy order ORD-123456 never arrived.<|im_end|>\n"
    assert ours(text)["input_ids"] == auto(text)["input_ids"]
    assert ours.chat_template == auto.chat_template
    assert (ours.eos_token, ours.pad_token, ours.bos_token) == (
        auto.eos_token,
        auto.pad_token,
        auto.bos_token,
    )


def test_the_tokenizer_hash_is_the_adapter_cards(tmp_path):
    from evalkit.provenance.folder_files import hash_files, tokenizer_info
    from evalkit.tokens.load import tokenizer_sha256

    folder = ROOT / "examples" / "tokenizer"
    card = tokenizer_info(folder, hash_files(folder))
    assert card is not None and tokenizer_sha256(folder) == card.sha256


def test_a_split_of_no_items_is_measured_as_empty(run_cli, chatml, tmp_path):
    # evalkit split writes an empty JSONL file for a split that gets no items: it has no
    # columns, and tokens must read it as the other splits' kind, not fail on it.
    data = write_conversations(tmp_path / "all.jsonl", conversations(6, seed=1))
    out = tmp_path / "split"
    result = run_cli("split", data, "--out", out, "--group", "id", "--text", "messages",
                     "--sizes", "6,0", "--names", "train,test", "--format", "jsonl")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert (out / "test.jsonl").read_bytes() == b""
    report = tmp_path / "r.json"
    result = run_cli("tokens", out, "--tokenizer", chatml, "--text", "messages", "--id", "id",
                     "--json", report)  # fmt: skip
    assert result.exit_code == 0, result.stderr
    splits = json.loads(report.read_text())["splits"]
    assert (splits["train"]["n"], splits["test"]["n"]) == (6, 0)
    assert splits["test"]["tokens"] is None
    # A split of no rows on its own (Parquet keeps the type): skipped checks say why.
    import polars as pl

    pl.read_ndjson(data).clear().write_parquet(tmp_path / "none.parquet")
    result = run_cli("tokens", tmp_path / "none.parquet", "--tokenizer", chatml, "--text",
                     "messages", "--json", report, "--force")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    checks = {c["name"]: c for c in json.loads(report.read_text())["checks"]}
    assert checks["render_parity"]["status"] == "skip"
    assert "text column" not in checks["render_parity"]["detail"]
