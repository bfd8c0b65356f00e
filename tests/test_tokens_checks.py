"""``evalkit.check_tokens`` against transformers itself: masks, lengths, and every check.

The reference for each figure is computed here, example by example, the slow
and obvious way: ``apply_chat_template(tokenize=True)`` per conversation for
the ids, ``return_assistant_tokens_mask=True`` on the family's template with
``{% generation %}`` markers for the loss mask, and plain Python over those
for counts, quantiles (numpy) and truncation. Every failure is planted in a
tokenizer or in the data, and a correct setup must pass every check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tokens_fixtures import (
    FAMILIES,
    build_tokenizer,
    conversations,
    write_conversations,
    write_jsonl,
)

pytest.importorskip("transformers")

from evalkit.tokens.api import check_tokens
from evalkit.tokens.load import load_tokenizer

N = 48


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every family's tokenizer, plain and with generation markers."""
    root = tmp_path_factory.mktemp("tokenizers")
    made = {}
    for name in FAMILIES:
        made[name] = build_tokenizer(root / name, name)
        made[f"{name}-marked"] = build_tokenizer(root / f"{name}-marked", name, marked=True)
    return made


@pytest.fixture(scope="module")
def chats() -> list[list[dict[str, str]]]:
    return conversations(N, seed=3, multi_turn=0.3)


@pytest.fixture(scope="module")
def split_file(tmp_path_factory: pytest.TempPathFactory, chats: Any) -> Path:
    return write_conversations(tmp_path_factory.mktemp("data") / "train.jsonl", chats)


def reference(folder: Path, chats: list[list[dict[str, str]]]) -> list[tuple[list[int], list[int]]]:
    """(ids, assistant mask) per conversation, from transformers' own assistant mask."""
    tokenizer = load_tokenizer(folder)
    result = []
    for chat in chats:
        out = tokenizer.apply_chat_template(
            chat, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
        )
        result.append((list(out["input_ids"]), list(out["assistant_masks"])))
    return result


def template_ids(tokenizer: Any, chat: Any, *, prompt: bool = False) -> list[int]:
    """``apply_chat_template(tokenize=True)``'s ids (transformers 5 returns a dict by default)."""
    return list(
        tokenizer.apply_chat_template(
            chat, tokenize=True, add_generation_prompt=prompt, return_dict=False
        )
    )


def runs(mask: list[int]) -> list[tuple[int, int]]:
    """Maximal stretches of 1s: (first, last)."""
    found, start = [], None
    for index, value in enumerate([*mask, 0]):
        if value and start is None:
            start = index
        if not value and start is not None:
            found.append((start, index - 1))
            start = None
    return found


def quantiles(values: list[int]) -> dict[str, float]:
    p50, p95, p99 = np.percentile(np.asarray(values), [50, 95, 99])
    return {"p50": round(p50, 4), "p95": round(p95, 4), "p99": round(p99, 4), "max": max(values)}


def statuses(result: Any) -> dict[str, str]:
    return {check.name: check.status for check in result.report.checks}


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("marked", [False, True])
def test_the_mask_is_transformers_assistant_mask(folders, chats, split_file, family, marked):
    folder = folders[f"{family}-marked" if marked else family]
    expected = reference(folders[f"{family}-marked"], chats)
    result = check_tokens(
        [split_file], tokenizer=folder, text="messages", id_column="id", sample=N, seed=1
    )
    assert len(result.samples) == N
    for sample in result.samples:
        ids, mask = expected[int(sample.id[1:])]
        assert [t.id for t in sample.train] == ids, sample.id
        assert [int(t.supervised) for t in sample.train] == mask, sample.id
    split = result.report.splits["train"]
    assert split.tokens is not None
    totals = [len(ids) for ids, _ in expected]
    answers = [sum(mask) for _, mask in expected]
    assert split.tokens.total.model_dump() == quantiles(totals)
    assert split.tokens.answer.model_dump() == quantiles(answers)
    assert split.tokens.prompt.model_dump() == quantiles(
        [t - a for t, a in zip(totals, answers, strict=True)]
    )
    assert split.supervised_ratio == round(sum(answers) / sum(totals), 6)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_correct_setup_passes_every_check(folders, split_file, family):
    result = check_tokens([split_file], tokenizer=folders[family], text="messages", id_column="id")
    assert statuses(result) == {
        "template": "pass",
        "render_parity": "pass",
        "double_bos": "pass",
        "stop_token": "pass",
        "pad_is_eos": "pass",
        "special_tokens_in_text": "pass",
        "empty_mask": "pass",
        "truncation": "skip",
    }
    assert result.report.status == "pass" and not result.failed
    assert all(check.count == 0 for check in result.report.checks)


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("limit", [40, 70, 110])
@pytest.mark.parametrize("mode", ["keep_start", "keep_end"])
def test_truncation_counts_match_a_manual_count(folders, chats, split_file, family, limit, mode):
    expected = reference(folders[f"{family}-marked"], chats)
    stops = {load_tokenizer(folders[family]).convert_tokens_to_ids(FAMILIES[family].eos)}
    stops |= {
        load_tokenizer(folders[family]).convert_tokens_to_ids(t)
        for t in FAMILIES[family].generation_eos
    }
    over = partly = fully = eos_lost = 0
    lost_ids, empty_ids, over_ids = [], [], []
    for row, (ids, mask) in enumerate(expected):
        n = len(ids)
        low, high = (0, min(n, limit)) if mode == "keep_start" else (max(0, n - limit), n)
        kept = sum(mask[low:high])
        supervised = sum(mask)
        lost = False
        for first, last in runs(mask):
            assert ids[last] in stops  # every turn of the correct setup ends with a stop
            if any(low <= i < high for i in range(first, last + 1)) and not low <= last < high:
                lost = True
        over += n > limit
        partly += 0 < kept < supervised
        fully += supervised > 0 and kept == 0
        eos_lost += lost
        if lost or (supervised > 0 and kept == 0):
            lost_ids.append(f"c{row:03d}")
        if kept == 0:
            empty_ids.append(f"c{row:03d}")
        if n > limit:
            over_ids.append(f"c{row:03d}")
    if mode == "keep_start":  # the data reaches every case, so each count is really tested
        assert partly and fully and eos_lost and over
    result = check_tokens(
        [split_file],
        tokenizer=folders[family],
        text="messages",
        id_column="id",
        seq_len=limit,
        truncation_mode=mode,
    )
    cut = result.report.splits["train"].truncation
    assert cut is not None
    assert (cut.over_limit, cut.answer_cut_partly, cut.answer_cut_fully, cut.eos_lost) == (
        over,
        partly,
        fully,
        eos_lost,
    )
    truncation = result.report.check("truncation")
    if lost_ids:
        assert truncation.status == "fail" and truncation.count == len(lost_ids)
        assert [e.id for e in truncation.examples] == lost_ids[:5]
    elif over_ids:
        assert truncation.status == "warn" and truncation.count == len(over_ids)
    else:
        assert truncation.status == "pass"
    empty = result.report.check("empty_mask")
    assert empty.count == len(empty_ids)
    assert [e.id for e in empty.examples] == empty_ids[:5]
    assert (empty.status == "fail") == bool(empty_ids)


def test_keep_end_cuts_only_prompts_and_warns(folders, tmp_path):
    long_prompt = [
        {"role": "user", "content": " ".join(["refund please"] * 60)},
        {"role": "assistant", "content": '{"category": "billing"}'},
    ]
    split = write_conversations(tmp_path / "train.jsonl", [long_prompt] * 3)
    result = check_tokens(
        [split],
        tokenizer=folders["chatml"],
        text="messages",
        seq_len=30,
        truncation_mode="keep_end",
    )
    check = result.report.check("truncation")
    assert (check.status, check.count) == ("warn", 3)
    cut = result.report.splits["train"].truncation
    assert cut is not None and (cut.answer_cut_fully, cut.eos_lost) == (0, 0)
    assert not result.failed


def test_double_bos_when_the_render_is_tokenized_again(folders, chats, split_file):
    tokenizer = load_tokenizer(folders["header"])
    renders = [tokenizer.apply_chat_template(chat, tokenize=False) for chat in chats]
    again = [tokenizer(render)["input_ids"] for render in renders]
    bos = tokenizer.bos_token_id
    doubled = [row for row, ids in enumerate(again) if ids[0] == ids[1] == bos]
    assert len(doubled) == N  # the planted defect: the template's BOS and the tokenizer's
    result = check_tokens(
        [split_file], tokenizer=folders["header"], text="messages", id_column="id", encode="text"
    )
    check = result.report.check("double_bos")
    assert (check.status, check.count) == ("fail", len(doubled))
    # The inference prompt (one BOS) is then not a prefix of the training ids either.
    prompts = [template_ids(tokenizer, chat[:-1], prompt=True) for chat in chats]
    diverging = sum(ids[: len(p)] != p for ids, p in zip(again, prompts, strict=True))
    parity = result.report.check("render_parity")
    assert (parity.status, parity.count) == ("fail", diverging)
    assert result.failed
    plain = check_tokens([split_file], tokenizer=folders["header"], text="messages")
    assert plain.report.check("double_bos").status == "pass"


def test_stop_token_fails_when_generation_stops_on_another_token(chats, split_file, tmp_path):
    # Gemma-style without generation_config.json: turns end with <end_of_turn>, eos is <eos>.
    folder = build_tokenizer(tmp_path / "turn", "turn", generation_config=False)
    expected = reference(build_tokenizer(tmp_path / "m", "turn", marked=True), chats)
    eos = load_tokenizer(folder).eos_token_id
    unclosed = [
        row
        for row, (ids, mask) in enumerate(expected)
        if any(ids[last] != eos for _, last in runs(mask))
    ]
    result = check_tokens([split_file], tokenizer=folder, text="messages", id_column="id")
    check = result.report.check("stop_token")
    assert (check.status, check.count) == ("fail", len(unclosed))
    assert "'<end_of_turn>'" in check.detail and "'<eos>'" in check.detail
    assert result.failed


def test_stop_token_fails_for_chatml_whose_eos_is_endoftext(split_file, tmp_path):
    folder = build_tokenizer(tmp_path / "t", "chatml", eos="<|endoftext|>", pad="<|endoftext|>")
    result = check_tokens([split_file], tokenizer=folder, text="messages")
    assert result.report.check("stop_token").count == N
    assert result.report.check("pad_is_eos").status == "warn"  # pad = eos as well


def test_pad_is_eos_counts_the_examples_whose_stop_token_would_be_masked(
    chats, split_file, tmp_path
):
    folder = build_tokenizer(tmp_path / "t", "chatml", pad="<|im_end|>")
    result = check_tokens([split_file], tokenizer=folder, text="messages")
    check = result.report.check("pad_is_eos")
    assert (check.status, check.count) == ("warn", N)
    assert not result.failed  # a warning, not a failure
    no_pad = build_tokenizer(tmp_path / "none", "chatml", pad=None)
    check = check_tokens([split_file], tokenizer=no_pad, text="messages").report.check("pad_is_eos")
    assert (check.status, check.count) == ("warn", N)
    assert "no pad token" in check.detail


@pytest.mark.parametrize(
    ("name", "generation_prompt"),
    [
        ("think", "<|im_start|>assistant\\n<think>\\n\\n</think>\\n\\n"),  # a char-level change
        ("space", "<|im_start|>assistant: "),  # a prefix in characters, not in tokens
    ],
)
def test_render_parity_fails_like_apply_chat_template(
    chats, split_file, tmp_path, name, generation_prompt
):
    if name == "space":
        template = (
            "{%- for message in messages %}"
            "{%- if message['role'] == 'assistant' %}{{- '<|im_start|>assistant: ' }}"
            "{%- else %}{{- '<|im_start|>' + message['role'] + '\\n' }}{%- endif %}"
            "{{- message['content'] + '<|im_end|>\\n' }}{%- endfor %}"
        )
        # An answer in words: " refund" is one token of the vocabulary, " " another.
        chats = [[*chat[:-1], {"role": "assistant", "content": "refund please"}] for chat in chats]
        split_file = write_conversations(tmp_path / "train.jsonl", chats)
    else:
        template = FAMILIES["chatml"].template.split("{%- if add_generation_prompt")[0]
    template += "{%- if add_generation_prompt %}{{- '" + generation_prompt + "' }}{%- endif %}"
    folder = build_tokenizer(tmp_path / name, "chatml", template=template)
    tokenizer = load_tokenizer(folder)
    diverging = []
    for row, chat in enumerate(chats):
        ids = template_ids(tokenizer, chat)
        prompt = template_ids(tokenizer, chat[:-1], prompt=True)
        if ids[: len(prompt)] != prompt:
            diverging.append(f"c{row:03d}")
    assert diverging  # the planted defect shows in transformers itself
    result = check_tokens([split_file], tokenizer=folder, text="messages", id_column="id")
    check = result.report.check("render_parity")
    assert (check.status, check.count) == ("fail", len(diverging))
    assert [e.id for e in check.examples] == diverging[:5]
    assert "token" in check.detail and result.failed


def test_special_tokens_typed_in_text_are_counted(folders, tmp_path):
    special = {2: "<|im_end|>", 7: "<|im_start|>", 11: "<|endoftext|>"}
    chats = conversations(20, seed=9, special=special)
    split = write_conversations(tmp_path / "train.jsonl", chats)
    tokens = ["<|im_end|>", "<|im_start|>", "<|endoftext|>"]
    holding = [
        f"c{row:03d}"
        for row, chat in enumerate(chats)
        if any(token in m["content"] for m in chat for token in tokens)
    ]
    result = check_tokens([split], tokenizer=folders["chatml"], text="messages", id_column="id")
    check = result.report.check("special_tokens_in_text")
    assert len(holding) == 3
    assert (check.status, check.count) == ("warn", len(holding))
    assert [e.id for e in check.examples] == holding
    assert "'<|im_end|>'" in check.detail


def test_conversations_without_an_answer_have_an_empty_mask(folders, tmp_path):
    chats = conversations(12, seed=4, no_answer=(1, 5, 6))
    split = write_conversations(tmp_path / "train.jsonl", chats)
    empty = [
        f"c{row:03d}"
        for row, chat in enumerate(chats)
        if not any(m["role"] == "assistant" for m in chat)
    ]
    result = check_tokens([split], tokenizer=folders["chatml"], text="messages", id_column="id")
    check = result.report.check("empty_mask")
    assert (check.status, [e.id for e in check.examples]) == ("fail", empty)
    assert check.count == len(empty) >= 1


def test_completion_loss_supervises_what_follows_the_prompt(folders, chats, tmp_path):
    tokenizer = load_tokenizer(folders["chatml"])
    rows = [
        {"id": f"c{i:03d}", "prompt": c[:-1], "completion": c[-1:]} for i, c in enumerate(chats)
    ]
    split = write_jsonl(tmp_path / "train.jsonl", rows)
    answers = []
    for chat in chats:
        ids = template_ids(tokenizer, chat)
        prompt = template_ids(tokenizer, chat[:-1], prompt=True)
        answers.append(len(ids) - len(prompt))  # TRL's completion mask
    result = check_tokens(
        [split], tokenizer=folders["chatml"], text=["prompt", "completion"], loss="completion"
    )
    tokens = result.report.splits["train"].tokens
    assert tokens is not None and tokens.answer.model_dump() == quantiles(answers)
    # The completion ends "<|im_end|>\n": the newline after the stop token is allowed.
    assert statuses(result)["stop_token"] == "pass"


def test_text_columns_are_tokenized_as_the_tokenizer_does(folders, tmp_path):
    tokenizer = load_tokenizer(folders["header"])
    rows = [
        {"id": i, "prompt": f"Question {i}: refund?", "completion": f" Answer {i}: yes."}
        for i in range(30)
    ]
    split = write_jsonl(tmp_path / "train.jsonl", rows)
    full = [tokenizer(r["prompt"] + r["completion"])["input_ids"] for r in rows]
    prompts = [tokenizer(r["prompt"])["input_ids"] for r in rows]
    result = check_tokens(
        [split], tokenizer=folders["header"], text=["prompt", "completion"], id_column="id"
    )
    assert result.report.options.loss == "completion"
    tokens = result.report.splits["train"].tokens
    assert tokens is not None
    assert tokens.total.model_dump() == quantiles([len(ids) for ids in full])
    assert tokens.answer.model_dump() == quantiles(
        [len(f) - len(p) for f, p in zip(full, prompts, strict=True)]
    )
    diverging = sum(f[: len(p)] != p for f, p in zip(full, prompts, strict=True))
    assert result.report.check("render_parity").count == diverging
    # No eos at the end of a text: a warning (TRL appends one), not a failure.
    assert result.report.check("stop_token").status == "warn"
    assert result.report.check("template").status == "skip"
    single = check_tokens([split], tokenizer=folders["header"], text="prompt")
    assert single.report.options.loss == "all"
    assert single.report.check("render_parity").status == "skip"
    assert single.report.splits["train"].tokens.total.max == max(len(p) for p in prompts)  # type: ignore[union-attr]


def test_chunks_change_nothing(folders, split_file, monkeypatch):
    from evalkit.tokens import figures

    def run() -> tuple[str, list[Any]]:
        result = check_tokens(
            [split_file],
            tokenizer=folders["turn"],
            text="messages",
            id_column="id",
            seq_len=80,
            sample=N,
        )
        return result.report.model_dump_json(), result.samples

    whole = run()
    monkeypatch.setattr(figures, "CHUNK_ROWS", 7)  # 48 rows: six full chunks and a short one
    assert run() == whole


def test_a_template_error_in_a_later_chunk_names_its_line(folders, tmp_path, monkeypatch):
    from evalkit.errors import EvalkitError
    from evalkit.tokens import figures

    chats = conversations(20, seed=2)
    chats[13] = [{"role": "user", "content": "BOOM"}, {"role": "assistant", "content": "x"}]
    template = (
        "{%- for message in messages %}{%- if message['content'] == 'BOOM' %}"
        "{{- raise_exception('no such content') }}{%- endif %}"
        "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}"
        "{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
    )
    folder = build_tokenizer(tmp_path / "t", "chatml", template=template)
    split = write_conversations(tmp_path / "train.jsonl", chats)
    monkeypatch.setattr(figures, "CHUNK_ROWS", 4)
    with pytest.raises(EvalkitError, match=r"train\.jsonl:14: the chat template refused"):
        check_tokens([split], tokenizer=folder, text="messages")


@pytest.mark.parametrize("family", ["header", "turn"])
def test_a_blank_earlier_answer_that_the_template_trims_is_no_rewrite(folders, tmp_path, family):
    # `| trim` renders a whitespace-only answer as nothing: that is no rewrite of the
    # answer (which only markers could locate). The turn's header anchors it, so it
    # supervises its closing token, as the marked template's generation block does.
    chats = conversations(6, seed=5)
    for row in (1, 4):
        user, answer = chats[row][-2], chats[row][-1]
        chats[row] = [*chats[row][:-1], {"role": "assistant", "content": " \t "}, user, answer]
    split = write_conversations(tmp_path / "train.jsonl", chats)
    expected = reference(folders[f"{family}-marked"], chats)
    result = check_tokens(
        [split], tokenizer=folders[family], text="messages", id_column="id", sample=6
    )
    for sample in result.samples:
        ids, mask = expected[int(sample.id[1:])]
        assert [t.id for t in sample.train] == ids, sample.id
        assert [int(t.supervised) for t in sample.train] == mask, sample.id
    assert result.report.check("empty_mask").status == "pass"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_a_blank_last_answer_supervises_its_closing_token(folders, tmp_path, family):
    # transformers' assistant mask on the marked template is the reference: the
    # generation block holds the (empty) content and the end-of-turn token.
    chats = conversations(8, seed=6)
    for row, text in {2: "", 5: "   "}.items():
        chats[row] = [*chats[row][:-1], {"role": "assistant", "content": text}]
    split = write_conversations(tmp_path / "train.jsonl", chats)
    expected = reference(folders[f"{family}-marked"], chats)
    result = check_tokens(
        [split], tokenizer=folders[family], text="messages", id_column="id", sample=8
    )
    for sample in result.samples:
        ids, mask = expected[int(sample.id[1:])]
        assert [t.id for t in sample.train] == ids, sample.id
        assert [int(t.supervised) for t in sample.train] == mask, sample.id
    assert result.report.check("empty_mask").status == "pass"
    assert result.report.check("stop_token").status == "pass"


@pytest.mark.parametrize("family", list(FAMILIES))
def test_answers_that_look_like_headers_or_padding_are_masked_as_transformers_does(
    folders, tmp_path, family
):
    # "assistant" is also the role name in the header before it, followed by a special
    # token (<|end_header_id|>); a padded answer a template trims leaves the header's
    # whitespace just before it. Only the token that closes a turn counts as a closer.
    answers = ["assistant", "model", "\n\nrefund please", "user", "  ok ok  "]
    chats = []
    for row, answer in enumerate(answers):
        chats.append(
            [
                {"role": "user", "content": "refund please"},
                {"role": "assistant", "content": answer},
                {"role": "user", "content": "and the order?"},
                {"role": "assistant", "content": answers[(row + 1) % len(answers)]},
            ]
        )
    split = write_conversations(tmp_path / "train.jsonl", chats)
    expected = reference(folders[f"{family}-marked"], chats)
    result = check_tokens(
        [split], tokenizer=folders[family], text="messages", id_column="id", sample=len(chats)
    )
    for sample in result.samples:
        ids, mask = expected[int(sample.id[1:])]
        assert [t.id for t in sample.train] == ids, sample.id
        assert [int(t.supervised) for t in sample.train] == mask, sample.id
