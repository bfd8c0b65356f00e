"""Tokenizer folders and conversations for the tokens tests, built here, never downloaded.

Three chat families, each a small byte-level BPE trained with ``tokenizers``
and a chat template written in the style of the family:

- ``chatml`` (Qwen, Yi): ``<|im_start|>role\\n…<|im_end|>\\n``; the eos is
  ``<|im_end|>``; no BOS.
- ``header`` (Llama 3): a BOS written by the template, then
  ``<|start_header_id|>role<|end_header_id|>\\n\\n…<|eot_id|>``; the tokenizer
  also adds BOS when asked for special tokens (so rendering and re-tokenizing
  gives two).
- ``turn`` (Gemma): ``<start_of_turn>model\\n…<end_of_turn>\\n``; the eos is
  ``<eos>``, and ``generation_config.json`` lists ``<end_of_turn>`` as a stop.

Each family also has a ``marked`` template: the same text with the
assistant's content and end-of-turn token inside ``{% generation %}``, so
that ``apply_chat_template(return_assistant_tokens_mask=True)`` gives an
independent reference mask.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHATML = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
CHATML_MARKED = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}"
    "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
    "{%- else %}{{- message['content'] + '<|im_end|>' }}{%- endif %}"
    "{{- '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
HEADER = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"
    "{{- message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
HEADER_MARKED = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' }}"
    "{%- if message['role'] == 'assistant' %}"
    "{%- generation %}{{- message['content'] | trim + '<|eot_id|>' }}{%- endgeneration %}"
    "{%- else %}{{- message['content'] | trim + '<|eot_id|>' }}{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}"
)
TURN = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{- '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"
)
TURN_MARKED = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{- '<start_of_turn>' + role + '\\n' }}"
    "{%- if message['role'] == 'assistant' %}"
    "{%- generation %}{{- message['content'] | trim + '<end_of_turn>' }}{%- endgeneration %}"
    "{%- else %}{{- message['content'] | trim + '<end_of_turn>' }}{%- endif %}"
    "{{- '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class Family:
    """A chat family: its special tokens, roles of some of them, and templates."""

    specials: list[str]
    bos: str | None
    eos: str
    pad: str | None
    template: str
    marked: str
    adds_bos: bool = False
    generation_eos: list[str] = field(default_factory=list)


FAMILIES = {
    "chatml": Family(
        ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        None,
        "<|im_end|>",
        "<|endoftext|>",
        CHATML,
        CHATML_MARKED,
    ),
    "header": Family(
        [
            "<|begin_of_text|>",
            "<|start_header_id|>",
            "<|end_header_id|>",
            "<|eot_id|>",
            "<|finetune_right_pad_id|>",
        ],
        "<|begin_of_text|>",
        "<|eot_id|>",
        "<|finetune_right_pad_id|>",
        HEADER,
        HEADER_MARKED,
        adds_bos=True,
    ),
    "turn": Family(
        ["<pad>", "<eos>", "<bos>", "<start_of_turn>", "<end_of_turn>"],
        "<bos>",
        "<eos>",
        "<pad>",
        TURN,
        TURN_MARKED,
        adds_bos=True,
        generation_eos=["<eos>", "<end_of_turn>"],
    ),
}

WORDS = [
    "order",
    "refund",
    "parcel",
    "arrived",
    "late",
    "broken",
    "charge",
    "twice",
    "account",
    "password",
    "locked",
    "invoice",
    "shipping",
    "address",
    "wrong",
    "item",
    "return",
    "label",
    "tracking",
    "update",
    "please",
    "help",
    "thanks",
    "urgent",
    "lawyer",
    "fraud",
    "card",
    "stolen",
    "screen",
    "crashes",
    "app",
    "login",
    "email",
    "changed",
    "delivery",
    "courier",
]
CATEGORIES = ("shipping", "billing", "account", "technical", "returns")

_TRAINED: dict[str, str] = {}


def _corpus() -> list[str]:
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 30))) for _ in range(300)]
    texts += [answer(rng) for _ in range(200)]
    return texts


def _trained(name: str) -> str:
    """The family's BPE (trained once per session), as tokenizer.json text."""
    if name not in _TRAINED:
        from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

        tokenizer = Tokenizer(models.BPE())
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tokenizer.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=420,
            special_tokens=FAMILIES[name].specials,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        )
        tokenizer.train_from_iterator(_corpus(), trainer)
        _TRAINED[name] = tokenizer.to_str()
    return _TRAINED[name]


def build_tokenizer(
    folder: Path,
    name: str,
    *,
    template: str | bool | None = True,
    eos: str | None = None,
    pad: str | bool | None = True,
    generation_config: bool = True,
    marked: bool = False,
) -> Path:
    """Save a tokenizer folder of family ``name`` (``template=True``: the family's).

    ``template=None`` saves no chat template; ``pad=None`` no pad token;
    ``eos`` replaces the eos token; ``marked`` saves the marked template.
    """
    from tokenizers import Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    family = FAMILIES[name]
    backend = Tokenizer.from_str(_trained(name))
    if family.adds_bos:
        assert family.bos is not None
        bos_id = backend.token_to_id(family.bos)
        backend.post_processor = processors.TemplateProcessing(
            single=f"{family.bos} $A", special_tokens=[(family.bos, bos_id)]
        )
    kwargs: dict[str, Any] = {"eos_token": eos or family.eos}
    if family.bos is not None:
        kwargs["bos_token"] = family.bos
    chosen_pad = family.pad if pad is True else pad
    if chosen_pad is not None:
        kwargs["pad_token"] = chosen_pad
    wrapped = PreTrainedTokenizerFast(tokenizer_object=backend, model_max_length=4096, **kwargs)
    if template is True:
        wrapped.chat_template = family.marked if marked else family.template
    elif isinstance(template, str):
        wrapped.chat_template = template
    folder.mkdir(parents=True, exist_ok=True)
    wrapped.save_pretrained(str(folder))
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config_path.write_text(json.dumps(config, indent=2))
    if generation_config and family.generation_eos:
        ids = [backend.token_to_id(token) for token in family.generation_eos]
        (folder / "generation_config.json").write_text(json.dumps({"eos_token_id": ids}))
    return folder


def answer(rng: random.Random) -> str:
    """A JSON answer of the kind a triage model writes."""
    return json.dumps({"category": rng.choice(CATEGORIES), "priority": rng.choice(("low", "high"))})


def conversations(
    n: int,
    *,
    seed: int = 0,
    multi_turn: float = 0.25,
    system: bool = True,
    no_answer: tuple[int, ...] = (),
    special: dict[int, str] | None = None,
) -> list[list[dict[str, str]]]:
    """``n`` conversations; rows in ``no_answer`` have no assistant turn, rows of
    ``special`` hold that token string in their user message."""
    rng = random.Random(seed)
    rows = []
    for row in range(n):
        messages = []
        if system and rng.random() < 0.7:
            messages.append({"role": "system", "content": "Triage the ticket as JSON."})
        turns = 2 if rng.random() < multi_turn else 1
        for turn in range(turns):
            words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 80)))
            if special and row in special and turn == 0:
                words = f"{words} {special[row]} {rng.choice(WORDS)}"
            messages.append({"role": "user", "content": words.capitalize() + "."})
            if row in no_answer and turn == turns - 1:
                break
            messages.append({"role": "assistant", "content": answer(rng)})
        rows.append(messages)
    return rows


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` as JSONL."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_conversations(
    path: Path, chats: list[list[dict[str, str]]], column: str = "messages"
) -> Path:
    """A JSONL split of conversations with ids ``c000``…"""
    return write_jsonl(path, [{"id": f"c{i:03d}", column: chat} for i, chat in enumerate(chats)])
