"""Benchmark ``evalkit generate`` and ``evalkit reload-check`` on the example model.

Run: ``.venv/bin/python bench/bench_generate.py`` (``--n 48``,
``--max-new-tokens 32``, ``--batch-size 8``, ``--repeat 3``).

Data: the first ``--n`` conversations of ``examples/tickets/tickets_chat.jsonl``
(system prompt, ticket, reference answer),
answered by the example model (``examples/model/``: a 2-layer random Llama,
hidden size 64, with its LoRA adapter) on the CPU in float32.

Timed, best of ``--repeat``:

* ``decode, batched`` - what ``generate`` does once the model is loaded and
  the prompts encoded: greedy decoding in left-padded batches of
  ``--batch-size``, top-k logits recorded;
* ``reference, one by one`` - ``model.generate(do_sample=False)`` of
  transformers + peft on each prompt alone (the loop people write), same
  model, same prompts, same number of new tokens;
* ``evalkit generate CLI`` and ``evalkit reload-check CLI`` - whole fresh
  processes (imports, loading, pinning, writing; the check's own fresh
  process included), as a user runs them.

The tiny model makes decoding cheap, so these figures show evalkit's own
overhead and the batching gain on a CPU, not the speed of a real model (on a
GPU, batching is what makes evaluation affordable).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

BASE = ROOT / "examples" / "model" / "base"
ADAPTER = ROOT / "examples" / "model" / "adapter"
EVALKIT = [sys.executable, "-m", "evalkit"]


def best(seconds: list[float]) -> float:
    return min(seconds)


def timed(action, repeat: int) -> float:  # type: ignore[no-untyped-def]
    runs = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        runs.append(time.perf_counter() - started)
    return best(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=48)
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    args = parser.parse_args()

    if args.threads:
        os.environ["OMP_NUM_THREADS"] = str(args.threads)  # the CLI processes too
    import torch
    from transformers.utils import logging

    from evalkit.model import generate as model_generate
    from evalkit.model import load_model
    from evalkit.model.decode import decode_batches, default_settings, plan_batches
    from evalkit.model.prompts import read_prompts

    if args.threads:
        torch.set_num_threads(args.threads)
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        data = work / "chat.jsonl"
        chat = ROOT / "examples" / "tickets" / "tickets_chat.jsonl"
        with chat.open(encoding="utf-8") as source:
            data.write_text("".join(next(source) for _ in range(args.n)), encoding="utf-8")
        options = {"id_column": "ticket_id", "text": ["messages"]}

        def batched() -> None:
            model_generate(BASE, data, adapter=ADAPTER, max_new_tokens=args.max_new_tokens,
                           batch_size=args.batch_size, device="cpu", **options)  # fmt: skip

        loaded = load_model(BASE, ADAPTER, device="cpu")
        settings = default_settings(loaded, args.max_new_tokens)
        prompts = read_prompts(data, "ticket_id", ["messages"], loaded.tokenizer,
                               tokenizer_folder=BASE)  # fmt: skip

        def one_by_one() -> None:
            with torch.no_grad():
                for ids in prompts.prompt_ids:
                    loaded.model.generate(
                        input_ids=torch.tensor([ids]),
                        attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                        do_sample=False,
                        max_new_tokens=args.max_new_tokens,
                    )

        def decode_only() -> None:
            lengths = [len(ids) for ids in prompts.prompt_ids]
            batches = plan_batches(lengths, args.batch_size)
            decode_batches(loaded, prompts.prompt_ids, batches, settings)

        def plain_batched() -> None:
            lengths = [len(ids) for ids in prompts.prompt_ids]
            pad = settings.pad_token_id
            with torch.inference_mode():
                for batch in plan_batches(lengths, args.batch_size):
                    rows = [prompts.prompt_ids[row] for row in batch]
                    width = max(len(ids) for ids in rows)
                    ids = [[pad] * (width - len(r)) + r for r in rows]
                    mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
                    loaded.model.generate(
                        input_ids=torch.tensor(ids),
                        attention_mask=torch.tensor(mask),
                        do_sample=False,
                        max_new_tokens=args.max_new_tokens,
                    )

        batched_s = timed(batched, args.repeat)
        decode_s = timed(decode_only, args.repeat)
        reference_s = timed(one_by_one, args.repeat)
        plain_s = timed(plain_batched, args.repeat)
        run = work / "run"

        def cli_generate() -> None:
            subprocess.run([*EVALKIT, "generate", "--base", BASE, "--adapter", ADAPTER,
                            "--data", data, "--id", "ticket_id", "--text", "messages",
                            "--out", run, "--force", "--quiet", "--device", "cpu",
                            "--max-new-tokens", str(args.max_new_tokens),
                            "--batch-size", str(args.batch_size)],
                           check=True, capture_output=True)  # fmt: skip

        def cli_reload() -> None:
            subprocess.run([*EVALKIT, "reload-check", run, "--n", "16", "--quiet"],
                           check=True, capture_output=True)  # fmt: skip

        generate_cli_s = timed(cli_generate, args.repeat)
        reload_cli_s = timed(cli_reload, args.repeat)

    tokens = args.n * args.max_new_tokens
    print(f"{date.today()} {platform.machine()} {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}; torch {torch.__version__}, "
          f"{torch.get_num_threads()} threads; n={args.n}, {args.max_new_tokens} new tokens, "
          f"batch {args.batch_size}, best of {args.repeat}")  # fmt: skip
    print(f"decode, batched (model loaded):             {decode_s:7.2f} s "
          f"({tokens / decode_s:,.0f} tokens/s)")  # fmt: skip
    print(f"reference, model.generate one by one:       {reference_s:7.2f} s "
          f"({tokens / reference_s:,.0f} tokens/s) -> batched "
          f"{reference_s / decode_s:.1f}x faster")  # fmt: skip
    print(f"reference, model.generate in the same batches, nothing recorded: {plain_s:7.2f} s "
          f"-> evalkit's recording costs {decode_s / plain_s - 1:+.0%}")  # fmt: skip
    print(f"generate() library call (load, pin, decode): {batched_s:7.2f} s")
    print(f"evalkit generate CLI (fresh process):        {generate_cli_s:7.2f} s")
    print(f"evalkit reload-check CLI, 16 controls:       {reload_cli_s:7.2f} s")


if __name__ == "__main__":
    main()
