"""``--backend vllm``: the adapter as vLLM serves it, with everything else as the hf backend.

Everything but the decoding is the hf backend's code: the folders checked,
the tokenizer chosen, the prompts rendered and encoded by evalkit (the render
``evalkit tokens`` checks), the context checked, every file pinned, the same
``predictions.jsonl``, ``tokens.parquet`` and ``run.json``. What vLLM does
is decode, in :mod:`evalkit.model.vllm_worker`'s process, from token ids.

Before the engine starts (a minute on a CPU, a rented GPU's time on one):
vLLM must be installed (else exit 2 naming the extra), and the adapter's
card must say vLLM serves it as it is (else exit 2 naming the rule: it would
refuse the adapter, or serve its embeddings without what was trained). The
card also gives ``max_lora_rank``: the adapter's rank rounded up to a rank
vLLM allows.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from evalkit.errors import AdapterNotServable, ModelLoadError
from evalkit.model.decode import Generation
from evalkit.model.generate import GenerateResult
from evalkit.model.load import LoadedModel
from evalkit.model.options import GenerateParams
from evalkit.model.regenerate import Regeneration
from evalkit.records._card import AdapterCard
from evalkit.records._run import DeviceInfo, RunRecord, VllmSettings

WORKER_MODULE = "evalkit.model.vllm_worker"


def servable_rank(card: AdapterCard, adapter: Path) -> int:
    """The ``max_lora_rank`` vLLM needs for the adapter; exit 2 naming the rule it breaks."""
    servable = card.servable
    if servable is None or not servable.vllm or servable.max_lora_rank is None:
        problems = servable.problems if servable is not None else []
        first = f"{problems[0].code}: {problems[0].message}" if problems else "not assessed"
        more = (
            f" (and {len(problems) - 1} more: evalkit card {adapter})" if len(problems) > 1 else ""
        )
        raise AdapterNotServable(
            f"{adapter}: vLLM does not serve this adapter as it is; {first}{more}"
        )
    return servable.max_lora_rank


def load_tokenizer_only(base: Path, adapter: Path | None, tokenizer: Path | None) -> LoadedModel:
    """The folders checked and the tokenizer loaded as ``load_model`` does, without weights.

    vLLM loads the weights in its own process; what evalkit needs here is the
    tokenizer (to render and to decode), ``config.json`` (the context and the
    vocabulary) and ``generation_config.json`` (the eos ids).
    """
    from evalkit.model.folders import (
        check_adapter_folder,
        check_model_folder,
        has_tokenizer,
        read_json,
    )
    from evalkit.model.load import choose_tokenizer_folder
    from evalkit.tokens.load import load_tokenizer

    config = check_model_folder(base)
    if adapter is not None:
        check_adapter_folder(adapter)
    folder = choose_tokenizer_folder(base, adapter, tokenizer)
    if tokenizer is None and not has_tokenizer(folder):
        raise ModelLoadError(
            f"{folder}: holds no tokenizer files (tokenizer.json, tokenizer_config.json); pass "
            "{tokenizer}, the tokenizer the model was trained with",
            refs={"tokenizer": "DIR"},
        )
    loaded_tokenizer = load_tokenizer(folder)
    rows = config.get("vocab_size")
    if isinstance(rows, int) and len(loaded_tokenizer) > rows:
        raise ModelLoadError(
            f"{folder}: the tokenizer has {len(loaded_tokenizer)} tokens but the model in {base} "
            f"has {rows} embedding rows (config.json vocab_size); pass the tokenizer it was "
            "trained with ({tokenizer})",
            refs=["tokenizer"],
        )
    generation_file = base / "generation_config.json"
    return LoadedModel(
        model=None,
        tokenizer=loaded_tokenizer,
        base=base,
        adapter=adapter,
        tokenizer_folder=folder,
        device="cpu",  # vLLM's, known once its worker reports
        dtype="float32",
        config=config,
        generation_config=read_json(generation_file) if generation_file.is_file() else {},
    )


def _generation(found: dict[str, Any]) -> Generation:
    return Generation(
        output_ids=list(found["output_ids"]),
        stop=found["stop"],
        top_ids=found["top_ids"],
        top_logits=found["top_logits"],
    )


def _request(
    base: Path,
    adapter: Path | None,
    prompts: list[list[int]],
    *,
    rank: int | None,
    device: str,
    dtype: str,
    max_new_tokens: int,
    stops: list[int],
    top_k: int,
    seed: int,
    batch_size: int,
) -> dict[str, Any]:
    return {
        "base": str(base),
        "adapter": str(adapter) if adapter is not None else None,
        "max_lora_rank": rank,
        "device": device,
        "dtype": dtype,
        "prompts": prompts,
        "max_new_tokens": max_new_tokens,
        "stop_token_ids": stops,
        "top_k": top_k,
        "seed": seed,
        "max_num_seqs": batch_size,
    }


def generate_vllm(
    base_path: Path, data: Any, given: GenerateParams, *, progress: bool, debug: bool
) -> GenerateResult:
    """The vllm backend of :func:`evalkit.generate` (the options and checks as for hf)."""
    from evalkit.io import read_table
    from evalkit.model.decode import default_settings, plan_batches
    from evalkit.model.fresh import run_worker
    from evalkit.model.generate import assemble, check_context, settings_record
    from evalkit.model.pins import adapter_record, base_pins
    from evalkit.model.prompts import read_prompts

    adapter = given.adapter
    loaded = load_tokenizer_only(base_path, adapter, given.tokenizer)
    pinned_adapter = adapter_record(adapter, base_path) if adapter is not None else None
    rank = (
        servable_rank(pinned_adapter.card, adapter)
        if pinned_adapter is not None and adapter is not None
        else None
    )
    table = read_table(data, name="data", ids=[given.id_column])
    prompts = read_prompts(
        table,
        given.id_column,
        given.text,
        loaded.tokenizer,
        tokenizer_folder=loaded.tokenizer_folder,
    )
    check_context(loaded, prompts, given.max_new_tokens)
    settings = default_settings(loaded, given.max_new_tokens)
    order = plan_batches([len(ids) for ids in prompts.prompt_ids], len(prompts))[0]
    request = _request(
        base_path,
        adapter,
        [prompts.prompt_ids[row] for row in order],
        rank=rank,
        device=given.device,
        dtype=given.dtype,
        max_new_tokens=given.max_new_tokens,
        stops=list(settings.eos_token_ids),
        top_k=settings.top_k,
        seed=given.seed,
        batch_size=given.batch_size,
    )
    with tempfile.TemporaryDirectory(prefix="evalkit-vllm-") as scratch:
        log = Path(scratch) / "engine.log"
        request["log"], request["debug"] = str(log), debug
        report = run_worker(
            WORKER_MODULE, request, Path(scratch), what="vllm", log=log, debug=debug
        )
    by_row = {
        row: _generation(found) for row, found in zip(order, report["generations"], strict=True)
    }
    generation = settings_record(loaded, settings, given.batch_size).model_copy(
        update={"padding_side": "none"}
    )
    return assemble(
        loaded,
        table,
        prompts,
        [by_row[row] for row in range(len(prompts))],
        [order],
        base=base_pins(base_path),
        adapter=pinned_adapter,
        generation=generation,
        device=DeviceInfo(type=report["device"], name=report["name"], cuda=report.get("cuda")),
        dtype=report["dtype"],
        text_columns=given.text,
        vllm=VllmSettings.model_validate(report["settings"]),
    )


def regenerate_vllm(request: dict[str, Any], run: RunRecord, tokens: Any) -> Regeneration:
    """The vllm backend of ``reload-check``, in its fresh process: the controls, decoded by vLLM.

    The run's base + adapter (or ``--merged``) with the run's dtype and its
    greedy settings; the engine's seed is the run's when vLLM made it. vLLM
    has no batch layout to reproduce: the controls are submitted alone,
    longest first.
    """
    from evalkit.model.decode import plan_batches
    from evalkit.model.folders import has_tokenizer
    from evalkit.model.regenerate import control_prompts
    from evalkit.model.vllm_worker import generate_with_vllm

    merged = request.get("merged")
    base = Path(merged) if merged is not None else Path(run.base.path)
    adapter = Path(run.adapter.path) if merged is None and run.adapter is not None else None
    tokenizer = None if merged is not None and has_tokenizer(base) else Path(run.tokenizer.path)
    loaded = load_tokenizer_only(base, adapter, tokenizer)
    prompts, controls = control_prompts(
        request, run, tokens, loaded.tokenizer, loaded.tokenizer_folder
    )
    lengths = [len(prompts.prompt_ids[row]) for row in controls]
    order = [controls[place] for place in plan_batches(lengths, len(controls))[0]]
    generation = run.generation
    found = generate_with_vllm(
        {
            **_request(
                base,
                adapter,
                [prompts.prompt_ids[row] for row in order],
                rank=request.get("max_lora_rank") if adapter is not None else None,
                device=request.get("device") or "auto",
                dtype=request.get("dtype") or run.dtype,
                max_new_tokens=generation.max_new_tokens,
                stops=list(generation.eos_token_ids),
                top_k=generation.top_k_logits,
                seed=run.vllm.seed if run.vllm is not None else 0,
                batch_size=generation.batch_size,
            ),
            "log": request.get("log"),
        }
    )
    return Regeneration(
        tokenizer=loaded.tokenizer,
        prompts=prompts,
        controls=controls,
        generations={
            row: _generation(one) for row, one in zip(order, found["generations"], strict=True)
        },
        device=found["device"],
        dtype=found["dtype"],
        vllm=VllmSettings.model_validate(found["settings"]),
    )
