"""The fresh process of ``evalkit reload-check``: load, regenerate, compare.

Run as ``python -m evalkit.model.worker REQUEST.json RESULT.json`` by
:func:`evalkit.model.reload.reload_check`, never by hand. A new interpreter
is the point: nothing of the process that trained, merged or generated
(weights in memory, a model left in training mode, a patched module, a
cached kernel choice) can make the check pass. The parent has already
verified every pinned hash; this process loads what ``run.json`` names (or
the merged folder), renders the prompts again through the same code path,
regenerates the control examples' batches in the run's layout, and writes
a :class:`~evalkit.records._run.ReloadReport` (or the error) as JSON.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from evalkit._version import __version__
from evalkit.errors import ArtifactChanged, DeviceUnavailable
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


def check(request: dict[str, Any]) -> ReloadReport:
    """Regenerate the control examples of a run and compare them with its tokens."""
    import polars as pl

    from evalkit.leakage.progress import Progress
    from evalkit.model.decode import DecodeSettings, decode_batches
    from evalkit.model.divergence import choose_controls, output_divergence, prompt_divergence
    from evalkit.model.pins import read_run
    from evalkit.model.prompts import read_prompts

    run_dir = Path(request["run_dir"])
    run = read_run(run_dir)
    tokens = pl.read_parquet(run_dir / TOKENS_FILE)
    loaded = _load(request, run)
    prompts = read_prompts(
        Path(str(run.data.path)),  # a run from a frame is refused before (check_pins)
        run.data.id_column,
        run.data.text_columns,
        loaded.tokenizer,
        tokenizer_folder=loaded.tokenizer_folder,
    )
    stored_ids = tokens[run.data.id_column].to_list()
    if stored_ids != prompts.ids:
        raise ArtifactChanged(
            f"{run_dir / TOKENS_FILE}: its ids are not the data's ids in the data's order; "
            "the run folder was edited: run evalkit generate again"
        )
    controls = choose_controls(prompts.ids, int(request["n"]), int(request["seed"]))
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
    generation = run.generation
    settings = DecodeSettings(
        generation.max_new_tokens,
        list(generation.eos_token_ids),
        generation.pad_token_id,
        generation.top_k_logits,
    )
    run_outputs = tokens["output_ids"].to_list()
    run_top_ids = tokens["top_ids"].to_list()
    run_top_logits = tokens["top_logits"].to_list()
    run_prompts = tokens["prompt_ids"].to_list()
    total = sum(len(batch) for batch in batches)
    with Progress(bool(request.get("progress"))).stage("reloading", total, "examples") as tick:
        regenerated = decode_batches(
            loaded, prompts.prompt_ids, batches, settings, reference=run_top_ids, advance=tick
        )
    differences: list[Divergence] = []
    for row in controls:
        example = prompts.ids[row]
        found = prompt_divergence(
            example, run_prompts[row], prompts.prompt_ids[row], loaded.tokenizer
        ) or output_divergence(
            example,
            run_outputs[row],
            run_top_ids[row],
            run_top_logits[row],
            regenerated[row],
            loaded.tokenizer,
        )
        if found is not None:
            differences.append(found)
    merged = request.get("merged")
    return ReloadReport(
        format_version=REPORT_VERSION,
        evalkit_version=__version__,
        run=str(run_dir),
        artifact="merged" if merged is not None else run.kind,
        merged=request.get("merged_pins"),
        device="cuda" if loaded.device == "cuda" else "cpu",
        dtype=loaded.dtype,
        seed=int(request["seed"]),
        controls=[prompts.ids[row] for row in controls],
        regenerated=total,
        identical=len(controls) - len(differences),
        differences=differences,
        pins_checked=list(request.get("pins_checked", [])),
        verdict="fail" if differences else "pass",
    )


def main(argv: list[str]) -> int:
    """Read the request, run the check, write the report or the error; exit 0 either way."""
    from evalkit.model.fresh import worker_main

    return worker_main(argv, lambda request: check(request).model_dump(mode="json"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
