"""The fresh process of ``evalkit reload-check``: load, regenerate (hf or vllm), compare.

Run as ``python -m evalkit.model.worker REQUEST.json RESULT.json`` by
:func:`evalkit.model.reload.reload_check`, never by hand. A new interpreter
is the point: nothing of the process that trained, merged or generated
(weights in memory, a model left in training mode, a patched module, a
cached kernel choice) can make the check pass. The parent has already
verified every pinned hash; this process loads what ``run.json`` names (or
the merged folder), renders the prompts again through the same code path,
regenerates the control examples' batches in the run's layout, and writes
a :class:`~evalkit.records._run.ReloadReport` (or the error) as JSON.
With ``--backend vllm`` the engine runs here too (this module is the
``__main__`` vLLM's spawned workers need).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from evalkit._version import __version__
from evalkit.errors import DeviceUnavailable
from evalkit.model.regenerate import Regeneration
from evalkit.records._run import REPORT_VERSION, TOKENS_FILE, Divergence, ReloadReport, RunRecord


def _device(requested: str | None, run: RunRecord) -> str:
    """The device asked for, else the run's; a run on CUDA checked without a GPU is refused."""
    if requested is not None:
        return requested
    if run.device.type == "cuda":
        from evalkit.model.runtime import torch_module

        if not torch_module().cuda.is_available():
            raise DeviceUnavailable(
                "the run generated on cuda and this machine has no CUDA GPU; pass {device} "
                "to check on the CPU (tokens may then differ for numerical reasons alone)",
                refs={"device": "cpu"},
            )
    return run.device.type


def _load(request: dict[str, Any], run: RunRecord) -> Any:
    from evalkit.model.folders import has_tokenizer
    from evalkit.model.load import load_model

    device = _device(request.get("device"), run)
    dtype = request.get("dtype") or run.dtype
    merged = request.get("merged")
    if merged is not None:
        folder = Path(merged)
        tokenizer = None if has_tokenizer(folder) else run.tokenizer.path
        return load_model(folder, None, tokenizer=tokenizer, device=device, dtype=dtype)
    adapter = run.adapter.path if run.adapter is not None else None
    return load_model(
        run.base.path, adapter, tokenizer=run.tokenizer.path, device=device, dtype=dtype
    )


def regenerate_hf(request: dict[str, Any], run: RunRecord, tokens: Any) -> Regeneration:
    """The hf backend's regeneration: transformers + PEFT, with the logits at the run's top ids.

    A run the hf backend made is regenerated batch by batch in its own
    layout (same members, order and padding), so only the artifact can
    differ; a run of another backend has no such layout, and its controls are
    decoded alone, longest first, in batches of the run's batch size.
    """
    import polars as pl

    from evalkit.leakage.progress import Progress
    from evalkit.model.decode import DecodeSettings, decode_batches, plan_batches
    from evalkit.model.regenerate import control_prompts

    loaded = _load(request, run)
    prompts, controls = control_prompts(
        request, run, tokens, loaded.tokenizer, loaded.tokenizer_folder
    )
    if run.backend == "hf":
        batch_of = tokens["batch"].to_list()
        wanted = sorted({batch_of[row] for row in controls})
        members = (
            tokens.with_row_index("row")
            .filter(pl.col("batch").is_in(wanted))
            .sort(["batch", "batch_row"])
            .group_by("batch", maintain_order=True)
            .agg(pl.col("row"))
        )
        batches = [list(rows) for rows in members["row"].to_list()]
    else:
        lengths = [len(prompts.prompt_ids[row]) for row in controls]
        planned = plan_batches(lengths, run.generation.batch_size)
        batches = [[controls[place] for place in batch] for batch in planned]
    generation = run.generation
    settings = DecodeSettings(
        generation.max_new_tokens,
        list(generation.eos_token_ids),
        generation.pad_token_id,
        generation.top_k_logits,
    )
    total = sum(len(batch) for batch in batches)
    with Progress(bool(request.get("progress"))).stage("reloading", total, "examples") as tick:
        regenerated = decode_batches(
            loaded,
            prompts.prompt_ids,
            batches,
            settings,
            reference=tokens["top_ids"].to_list(),
            advance=tick,
        )
    return Regeneration(
        tokenizer=loaded.tokenizer,
        prompts=prompts,
        controls=controls,
        generations=regenerated,
        device="cuda" if loaded.device == "cuda" else "cpu",
        dtype=loaded.dtype,
    )


def check(request: dict[str, Any]) -> ReloadReport:
    """Regenerate the control examples of a run and compare them with its tokens."""
    import polars as pl

    from evalkit.model.backends import backend_spec, implementation
    from evalkit.model.divergence import output_divergence, prompt_divergence
    from evalkit.records._run import read_run

    run_dir = Path(request["run_dir"])
    run = read_run(run_dir)
    tokens = pl.read_parquet(run_dir / TOKENS_FILE)
    backend = request.get("backend") or run.backend
    regenerate = implementation(backend_spec(backend), "regenerate")
    done: Regeneration = regenerate(request, run, tokens)
    prompts, tokenizer = done.prompts, done.tokenizer
    run_outputs = tokens["output_ids"].to_list()
    run_top_ids = tokens["top_ids"].to_list()
    run_top_logits = tokens["top_logits"].to_list()
    run_prompts = tokens["prompt_ids"].to_list()
    differences: list[Divergence] = []
    for row in done.controls:
        example = prompts.ids[row]
        found = prompt_divergence(
            example, run_prompts[row], prompts.prompt_ids[row], tokenizer
        ) or output_divergence(
            example,
            run_outputs[row],
            run_top_ids[row],
            run_top_logits[row],
            done.generations[row],
            tokenizer,
        )
        if found is not None:
            differences.append(found)
    merged = request.get("merged")
    identical = len(done.controls) - len(differences)
    rate = identical / len(done.controls)
    min_match = float(request.get("min_match", 1.0))
    return ReloadReport(
        format_version=REPORT_VERSION,
        evalkit_version=__version__,
        run=str(run_dir),
        artifact="merged" if merged is not None else run.kind,
        backend=backend,
        run_backend=run.backend,
        vllm=done.vllm,
        merged=request.get("merged_pins"),
        device="cuda" if done.device == "cuda" else "cpu",
        dtype=done.dtype,  # type: ignore[arg-type]
        seed=int(request["seed"]),
        controls=[prompts.ids[row] for row in done.controls],
        regenerated=len(done.generations),
        identical=identical,
        match_rate=rate,
        min_match=min_match,
        differences=differences,
        pins_checked=list(request.get("pins_checked", [])),
        verdict="pass" if rate >= min_match else "fail",
    )


def main(argv: list[str]) -> int:
    """Read the request, run the check, write the report or the error; exit 0 either way."""
    from evalkit.model.fresh import worker_main

    return worker_main(argv, lambda request: check(request).model_dump(mode="json"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
