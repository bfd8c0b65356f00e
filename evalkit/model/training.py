"""A few real optimizer steps: a new LoRA adapter (or the whole model), AdamW, the loss.

What ``evalkit smoke`` trains is kept as plain as a training script's
first steps, so that the memory it measures is the memory of the stack the
plan bounds (transformers' modules, PEFT, ``torch.optim.AdamW`` with its
defaults):

* ``lora``: ``peft.get_peft_model`` with a new adapter of rank ``r`` on the
  plan's targets (PEFT's defaults otherwise: ``lora_alpha`` 8, no dropout,
  A random and B zero), seeded; ``full``: every parameter trains.
* The loss is the mean cross-entropy over the supervised tokens of the
  batch, each predicted from the position before it, in float32: what
  transformers' causal-LM loss computes from ``labels`` (tests check it
  against ``model(input_ids, labels=…).loss``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evalkit.model import runtime
from evalkit.model.load import LoadedModel
from evalkit.tokens.sequences import IGNORE_INDEX, Batch


def new_adapter(loaded: LoadedModel, *, r: int, targets: Sequence[str], seed: int) -> None:
    """Wrap ``loaded.model`` in a new trainable LoRA adapter (in place), seeded."""
    torch = runtime.torch_module()
    peft = runtime.peft_module()
    config = peft.LoraConfig(task_type="CAUSAL_LM", r=r, target_modules=list(targets))
    torch.manual_seed(seed)
    with runtime.quiet_warnings():
        model = peft.get_peft_model(loaded.model, config)
    model.to(loaded.device)
    loaded.model = model


def train_everything(loaded: LoadedModel) -> None:
    """Full fine-tuning: every parameter of the model needs a gradient."""
    for parameter in loaded.model.parameters():
        parameter.requires_grad_(True)


def enable_checkpointing(loaded: LoadedModel) -> None:
    """transformers' per-layer gradient checkpointing (non-reentrant: LoRA needs no input grad)."""
    with runtime.quiet_warnings():  # transformers 5 renames it; the old name still works
        loaded.model.gradient_checkpointing_enable(
            gradient_checkpointing_kwargs={"use_reentrant": False}
        )


def trainable_parameters(model: Any) -> int:
    """Elements of every parameter the optimizer updates."""
    return sum(int(p.numel()) for p in model.parameters() if p.requires_grad)


@dataclass(frozen=True)
class Tensors:
    """A batch on the device."""

    input_ids: Any
    attention_mask: Any
    labels: Any


def to_tensors(batch: Batch, device: str) -> Tensors:
    """The batch's lists as ``long`` tensors on ``device``."""
    torch = runtime.torch_module()

    def tensor(rows: list[list[int]]) -> Any:
        return torch.tensor(rows, dtype=torch.long, device=device)

    return Tensors(tensor(batch.input_ids), tensor(batch.attention_mask), tensor(batch.labels))


def supervised_loss(logits: Any, labels: Any) -> Any:
    """Mean float32 cross-entropy of each supervised token given the positions before it."""
    torch = runtime.torch_module()
    predicted = logits[:, :-1, :].float()
    targets = labels[:, 1:]
    return torch.nn.functional.cross_entropy(
        predicted.reshape(-1, predicted.shape[-1]),
        targets.reshape(-1),
        ignore_index=IGNORE_INDEX,
        reduction="mean",
    )


def forward_logits(model: Any, tensors: Tensors) -> Any:
    """The model's logits on a batch (no KV cache: a training-shaped forward)."""
    return model(
        input_ids=tensors.input_ids, attention_mask=tensors.attention_mask, use_cache=False
    ).logits


def synchronize(device: str) -> None:
    """Wait for the device's queued work, so that a clock read after it times that work."""
    if device == "cuda":
        runtime.torch_module().cuda.synchronize()


def train_steps(
    model: Any,
    batches: Sequence[Tensors],
    *,
    lr: float,
    advance: Callable[[int], object] = lambda _count: None,
    losses: list[float] | None = None,
    timings: list[float] | None = None,
) -> list[float]:
    """One AdamW step per batch; the loss of each step (computed before its update).

    Each loss is appended to ``losses`` as its step ends (so a step that runs
    out of memory leaves the earlier ones), and each step's wall-clock
    seconds to ``timings`` (forward, backward, optimizer step; the device
    synchronized at both ends). The optimizer and the gradients are freed at
    the end, so what is measured next (generation, saving) holds what those
    phases hold.
    """
    torch = runtime.torch_module()
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=lr)
    model.train()
    found: list[float] = [] if losses is None else losses
    device = str(next(iter(parameters)).device.type) if parameters else "cpu"
    with runtime.quiet_warnings():
        for tensors in batches:
            synchronize(device)
            started = time.perf_counter()
            loss = supervised_loss(forward_logits(model, tensors), tensors.labels)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            value = float(loss.detach())
            synchronize(device)
            if timings is not None:
                timings.append(time.perf_counter() - started)
            found.append(value)
            del loss
            advance(1)
    del optimizer
    model.eval()
    return found


def finite(values: Sequence[float]) -> bool:
    """Whether every value is a finite number."""
    return all(math.isfinite(value) for value in values)


def positions(batch: Batch, limit: int) -> list[tuple[int, int]]:
    """(row, position) of the first ``limit`` positions that predict a supervised token.

    The logits a reload is compared at: where training changed the model's
    answer. A cap keeps the compared tensor small for a 128k vocabulary.
    """
    found: list[tuple[int, int]] = []
    for row, labels in enumerate(batch.labels):
        for position, label in enumerate(labels[1:]):
            if label != IGNORE_INDEX:
                found.append((row, position))
                if len(found) == limit:
                    return found
    return found


def logits_at(model: Any, tensors: Tensors, where: Sequence[tuple[int, int]]) -> Any:
    """The model's float32 logits at ``where`` (``len(where) x vocab``) on the CPU, in eval mode."""
    torch = runtime.torch_module()
    model.eval()
    rows = torch.tensor([row for row, _ in where], dtype=torch.long)
    columns = torch.tensor([column for _, column in where], dtype=torch.long)
    with torch.inference_mode(), runtime.quiet_warnings():
        logits = forward_logits(model, tensors)
        return logits[rows.to(logits.device), columns.to(logits.device)].float().cpu()
