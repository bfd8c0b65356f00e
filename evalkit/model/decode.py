"""Greedy decoding in left-padded batches, through ``model.generate`` itself.

Why ``generate`` and not a loop of our own: it is what the scored outputs
must equal (tests compare against it one prompt at a time), it handles the
KV cache and the position ids of left-padded rows for every architecture,
and it is maintained with the models. evalkit adds what an evaluation needs
around it:

* **Greedy, exactly.** ``generate`` fills every setting the caller leaves
  unset from the model's ``generation_config.json`` (a repetition penalty,
  suppressed tokens, a minimum length, …), so the model's own config is
  replaced by a clean one for the call: argmax of the raw logits, stopping
  on the eos ids. What the model's file asked for and was not applied is
  recorded in ``run.json``.
* **Batches that do not change tokens.** Prompts are sorted by length
  (longest first: a batch that does not fit in memory fails at once) and
  left-padded with an attention mask; the batch a prompt was in is recorded,
  so a reload regenerates it in the same company and the same layout.
* **The logits behind each token.** A logits processor that changes nothing
  records the ``top_k`` highest logits at every step; a reload check also
  asks it for its logits at the run's top ids, which is how it tells a
  near-tie flip (a difference in the fifth decimal) from a changed model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from evalkit.model import runtime
from evalkit.model.load import LoadedModel

Stop = Literal["eos", "length"]
TOP_K = 8


@dataclass(frozen=True)
class Generation:
    """What greedy decoding produced for one prompt."""

    output_ids: list[int]
    """The generated ids, the stop token included when one was generated."""
    stop: Stop
    """``eos`` (a stop token was generated) or ``length`` (``max_new_tokens`` reached)."""
    top_ids: list[list[int]]
    """Per generated token, the ``top_k`` ids of highest logit (the first is the token)."""
    top_logits: list[list[float]]
    """Their raw logits (float32)."""
    reference_logits: list[list[float]] | None = None
    """With a reference: per step, this model's logits at the reference's top ids."""


@dataclass(frozen=True)
class DecodeSettings:
    """The settings of one greedy decoding, as ``run.json`` records them."""

    max_new_tokens: int
    """At most this many tokens per output."""
    eos_token_ids: list[int]
    """Decoding of a row stops at the first of these."""
    pad_token_id: int
    """The id left padding uses (masked out: it changes no token)."""
    top_k: int = TOP_K
    """How many of the highest logits are kept per generated token."""


def plan_batches(lengths: Sequence[int], batch_size: int) -> list[list[int]]:
    """Row indices in batches: longest prompts first, ties in row order."""
    order = sorted(range(len(lengths)), key=lambda row: (-lengths[row], row))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def eos_ids(loaded: LoadedModel) -> list[int]:
    """The ids decoding stops on: the tokenizer's eos and ``generation_config.json``'s eos ids.

    The same ids the ``stop_token`` check of ``evalkit tokens`` validates the
    training data against (and what servers such as vLLM stop on). Without a
    ``generation_config.json``, transformers takes the eos of ``config.json``.
    """
    from evalkit.tokens.load import stop_token_ids

    stops = set(stop_token_ids(loaded.tokenizer, loaded.base))
    if not loaded.generation_config:
        configured = loaded.config.get("eos_token_id")
        values = configured if isinstance(configured, list) else [configured]
        stops.update(value for value in values if isinstance(value, int))
    return sorted(stops)


def default_settings(loaded: LoadedModel, max_new_tokens: int) -> DecodeSettings:
    """Greedy settings for ``loaded``: its eos ids, its pad token (else the first eos)."""
    stops = eos_ids(loaded)
    pad = loaded.tokenizer.pad_token_id
    if pad is None:
        pad = stops[0] if stops else 0
    return DecodeSettings(max_new_tokens, stops, int(pad))


class _Recorder:
    """A logits processor that changes nothing and keeps the top logits of each step."""

    def __init__(self, top_k: int, reference: Any | None) -> None:
        self.top_k = top_k
        self.reference = reference
        self.ids: list[Any] = []
        self.values: list[Any] = []
        self.at_reference: list[Any] = []

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        top = scores.topk(min(self.top_k, scores.shape[-1]), dim=-1)
        self.ids.append(top.indices.cpu())
        self.values.append(top.values.float().cpu())
        step = len(self.ids) - 1
        if self.reference is not None and step < self.reference.shape[1]:
            wanted = self.reference[:, step, :].to(scores.device)
            self.at_reference.append(scores.gather(1, wanted).float().cpu())
        return scores


def _inner_model(model: Any) -> Any:
    """The transformers model under a PEFT wrapper (or the model itself)."""
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def _clean_generation_config(settings: DecodeSettings, inner: Any) -> Any:
    transformers = runtime.transformers_module()
    return transformers.GenerationConfig(
        do_sample=False,
        num_beams=1,
        max_new_tokens=settings.max_new_tokens,
        eos_token_id=list(settings.eos_token_ids) or None,
        pad_token_id=settings.pad_token_id,
        bos_token_id=getattr(inner.generation_config, "bos_token_id", None),
    )


def _left_padded(prompts: Sequence[Sequence[int]], pad: int, device: str) -> tuple[Any, Any]:
    torch = runtime.torch_module()
    width = max(len(ids) for ids in prompts)
    ids = [[pad] * (width - len(row)) + list(row) for row in prompts]
    mask = [[0] * (width - len(row)) + [1] * len(row) for row in prompts]
    return (
        torch.tensor(ids, dtype=torch.long, device=device),
        torch.tensor(mask, dtype=torch.long, device=device),
    )


def _reference_tensor(reference: Sequence[Sequence[Sequence[int]]], top_k: int) -> Any:
    torch = runtime.torch_module()
    steps = max((len(row) for row in reference), default=0)
    table = torch.zeros((len(reference), max(steps, 1), top_k), dtype=torch.long)
    for row, ids in enumerate(reference):
        if ids:
            table[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
    return table


def _trim(generated: list[int], stops: set[int], limit: int) -> tuple[list[int], Stop]:
    for position, token in enumerate(generated):
        if token in stops:
            return generated[: position + 1], "eos"
    return generated[:limit], "length"


def decode_batch(
    loaded: LoadedModel,
    prompts: Sequence[Sequence[int]],
    settings: DecodeSettings,
    *,
    reference: Sequence[Sequence[Sequence[int]]] | None = None,
) -> list[Generation]:
    """Greedy outputs of one batch of prompt ids (left-padded together).

    ``reference`` (per prompt, per step, ``top_k`` ids) asks for this model's
    logits at those ids too: a reload check passes the run's top ids.
    """
    torch = runtime.torch_module()
    transformers = runtime.transformers_module()
    inner = _inner_model(loaded.model)
    input_ids, attention_mask = _left_padded(prompts, settings.pad_token_id, loaded.device)
    table = _reference_tensor(reference, settings.top_k) if reference is not None else None
    recorder = _Recorder(settings.top_k, table)
    own_config = inner.generation_config
    inner.generation_config = _clean_generation_config(settings, inner)
    try:
        with torch.inference_mode(), runtime.quiet_warnings():
            sequences = loaded.model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                logits_processor=transformers.LogitsProcessorList([recorder]),
            )
    finally:
        inner.generation_config = own_config
    width = input_ids.shape[1]
    generated = sequences[:, width:].cpu().tolist()
    top_ids = torch.stack(recorder.ids, dim=1).tolist() if recorder.ids else []
    top_values = torch.stack(recorder.values, dim=1).tolist() if recorder.values else []
    at_reference = (
        torch.stack(recorder.at_reference, dim=1).tolist() if recorder.at_reference else None
    )
    stops = set(settings.eos_token_ids)
    results: list[Generation] = []
    for row, tokens in enumerate(generated):
        output, stop = _trim(tokens, stops, settings.max_new_tokens)
        steps = len(output)
        results.append(
            Generation(
                output_ids=output,
                stop=stop,
                top_ids=top_ids[row][:steps] if top_ids else [],
                top_logits=top_values[row][:steps] if top_values else [],
                reference_logits=(
                    at_reference[row][:steps]
                    if at_reference is not None and table is not None
                    else None
                ),
            )
        )
    return results


def decode_batches(
    loaded: LoadedModel,
    prompts: Sequence[Sequence[int]],
    batches: Sequence[Sequence[int]],
    settings: DecodeSettings,
    *,
    reference: Sequence[Sequence[Sequence[int]]] | None = None,
    advance: Callable[[int], object] = lambda _count: None,
) -> dict[int, Generation]:
    """Greedy outputs of ``prompts`` (row -> ids), decoded batch by batch as planned.

    ``advance`` is called with each batch's size (a progress bar).
    """
    from evalkit.errors import OutOfDeviceMemory

    out_of_memory = runtime.torch_module().cuda.OutOfMemoryError
    results: dict[int, Generation] = {}
    for number, batch in enumerate(batches, start=1):
        rows = list(batch)
        wanted = [reference[row] for row in rows] if reference is not None else None
        chosen = [prompts[row] for row in rows]
        try:
            generations = decode_batch(loaded, chosen, settings, reference=wanted)
        except out_of_memory as error:
            first = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
            raise OutOfDeviceMemory(
                f"{loaded.device} ran out of memory decoding batch {number} of {len(batches)} "
                f"({len(rows)} prompts, the longest {max(len(ids) for ids in chosen)} tokens, "
                f"up to {settings.max_new_tokens} new; {first}); lower {{batch_size}} (it was "
                f"{len(rows)}) or {{max_new_tokens}}",
                refs=["batch_size", "max_new_tokens"],
            ) from None
        for row, generation in zip(rows, generations, strict=True):
            results[row] = generation
        advance(len(rows))
    return results
