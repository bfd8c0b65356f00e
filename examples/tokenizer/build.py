"""Build the example tokenizer: a small byte-level BPE trained on the tickets.

The walkthrough needs a real tokenizer folder (for ``evalkit tokens`` and
the tiny example model) without downloading one. This script trains a
1,024-token byte-level BPE with ``tokenizers`` on the ticket texts and the
JSON answers a triage model gives, adds ChatML-style special tokens, and
saves it with transformers, so the folder is what ``AutoTokenizer`` loads:
``tokenizer.json``, ``tokenizer_config.json`` and ``chat_template.jinja``.

The chat template is written here in the style of the ChatML families
(Qwen, Yi, many fine-tunes): each turn is ``<|im_start|>role\\n…<|im_end|>\\n``,
the end-of-turn token is the eos that generation stops on, and padding has
a token of its own (so a collator that masks padding does not mask the stop
token). Run ``python examples/tokenizer/build.py``; the same input gives the
same files.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

HERE = Path(__file__).resolve().parent
TICKETS = HERE.parent / "tickets" / "tickets.jsonl"
VOCAB_SIZE = 1024
BOS, EOS, PAD = "<|im_start|>", "<|im_end|>", "<|endoftext|>"
SPECIAL_TOKENS = [PAD, BOS, EOS]
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# The same ChatML turns, with tools in the style of Qwen's templates (written here):
# the conversation's tools listed in the system turn, each tool call written as
# <tool_call>{"name": …, "arguments": …}</tool_call> after the turn's text, and a run of
# tool answers sent back as one user turn of <tool_response> blocks. On conversations
# without tools, tool calls or tool answers it renders exactly what CHAT_TEMPLATE does.
TOOL_CHAT_TEMPLATE = (
    "{%- if tools %}"
    "{{- '<|im_start|>system\\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] + '\\n\\n' }}{%- endif %}"
    "{{- '# Tools\\n\\nYou may call one or more functions. Their signatures, within "
    "<tools></tools>:\\n<tools>' }}"
    "{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nFor each call, write a JSON object with the function name and "
    'arguments within <tool_call></tool_call>:\\n<tool_call>\\n{"name": <function-name>, '
    '"arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n\' }}'
    "{%- endif %}"
    "{%- for message in messages %}"
    "{%- if message['role'] == 'system' and loop.first and tools %}"
    "{%- elif message['role'] == 'assistant' and message['tool_calls'] %}"
    "{{- '<|im_start|>assistant\\n' + (message['content'] or '') }}"
    "{%- for call in message['tool_calls'] %}"
    "{%- if message['content'] or not loop.first %}{{- '\\n' }}{%- endif %}"
    "{{- '<tool_call>\\n{\"name\": \"' + call['function']['name'] + '\", \"arguments\": ' }}"
    "{%- if call['function']['arguments'] is string %}{{- call['function']['arguments'] }}"
    "{%- else %}{{- call['function']['arguments'] | tojson }}{%- endif %}"
    "{{- '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- elif message['role'] == 'tool' %}"
    "{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' %}"
    "{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message['content'] + '\\n</tool_response>' }}"
    "{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' %}"
    "{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- else %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
ANSWER_KEYS = ("category", "priority", "order_id", "amount")


def training_texts(tickets: Path) -> list[str]:
    """Ticket texts and the JSON answers a triage model writes for them."""
    texts: list[str] = []
    with tickets.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            texts.append(record["text"])
            texts.append(json.dumps({key: record.get(key) for key in ANSWER_KEYS}))
    return texts


def build(out: Path, *, tools: bool = False) -> None:
    """Train the tokenizer and save it as a transformers tokenizer folder in ``out``, with
    the tool-capable template when ``tools``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(training_texts(TICKETS), trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token=EOS, pad_token=PAD, model_max_length=2048
    )
    wrapped.chat_template = TOOL_CHAT_TEMPLATE if tools else CHAT_TEMPLATE
    out.mkdir(parents=True, exist_ok=True)
    wrapped.save_pretrained(str(out))
    # transformers 5 names its own backend class; the name every release since
    # 4.x loads is PreTrainedTokenizerFast (the same fast tokenizer).
    config_path = out / "tokenizer_config.json"
    config = json.loads(config_path.read_text(encoding="utf-8"))
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    config.pop("backend", None)
    config_path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="folder to write (default: here)")
    parser.add_argument(
        "--tools",
        action="store_true",
        help="save the tool-capable template (examples/tokenizer-tools: "
        "python examples/tokenizer/build.py --tools --out examples/tokenizer-tools)",
    )
    arguments = parser.parse_args()
    build(arguments.out, tools=arguments.tools)


if __name__ == "__main__":
    main()
