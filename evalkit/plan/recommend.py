"""Which GPU a plan needs: the smallest class that holds its largest phase.

A phase needs its bound plus what the bound leaves out: the CUDA context
(the driver, cuBLAS and the kernels, outside the allocator) and the caching
allocator's slack (memory reserved in blocks but not allocated). Both are
listed apart from the bound, and added here as headroom. The classes are the
GPU registry's (:func:`evalkit.plan.gpus.memory_classes`): a row added there,
or with ``--gpu``, is a class here too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from evalkit.plan.gpus import memory_classes
from evalkit.plan.options import Options

Classes = tuple[float, ...]
SHARDED_GPU_GB = 80  # the card of 8-GPU nodes: what sharding plans are counted in
CUDA_CONTEXT_BYTES = 500_000_000
ALLOCATOR_SLACK = 0.10  # of the bound
MAX_GPUS = 4096
GB = 1_000_000_000


@dataclass(frozen=True)
class Recommendation:
    """The card (or cards) to rent, the phase that decides it, and what to do about it."""

    gpu_gb: float | None
    gpus: int | None
    phase: str
    needs_gb: float
    advice: str


def headroom(bound: int) -> int:
    """Bytes a phase needs beyond its bound: CUDA context and allocator slack."""
    return CUDA_CONTEXT_BYTES + round(ALLOCATOR_SLACK * bound)


def needs(bound: int) -> int:
    """Bytes of GPU memory a phase whose bound is ``bound`` needs."""
    return bound + headroom(bound)


def smallest_class(required: int, classes: Classes | None = None) -> float | None:
    """The smallest GPU class of the registry (GB = 10^9 bytes) with ``required`` bytes."""
    chosen = memory_classes() if classes is None else classes
    return next((size for size in chosen if size * GB >= required), None)


def _largest(phases: Mapping[str, int]) -> str:
    order = list(phases)
    return max(order, key=lambda name: (phases[name], -order.index(name)))


def _fewest_gpus(gpus: int, sharded_phases: Callable[[int], Mapping[str, int]]) -> int | None:
    """The fewest GPUs (more than ``gpus``) whose per-GPU phases all fit 80 GB, if any.

    Per-GPU bounds only shrink as GPUs are added, so a doubling search then a
    bisection finds it in a few dozen plans.
    """

    def fits(count: int) -> bool:
        limit = SHARDED_GPU_GB * GB
        return all(needs(bound) <= limit for bound in sharded_phases(count).values())

    low, high = gpus, gpus + 1
    while not fits(high):
        if high >= MAX_GPUS:
            return None
        low, high = high, min(2 * high, MAX_GPUS)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if fits(middle) else (middle, high)
    return high


Replan = Callable[..., Mapping[str, int]]


def _fits(phases: Mapping[str, int], size: float) -> bool:
    return all(needs(bound) <= size * GB for bound in phases.values())


def _largest_fitting(current: int, size: float, replan: Replan, option: str) -> int | None:
    """The largest value below ``current`` of an integer option that fits ``size`` GB."""
    low, high = 0, current  # invariant: low fits (0 meaning none found), high does not
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if _fits(replan(**{option: middle}), size) else (low, middle)
    return low or None


def _way_down(phase: str, options: Options, size: float, replan: Replan) -> str | None:
    """A change of options that brings every phase onto a ``size`` GB card, said as advice."""
    if phase == "export" and options.export == "merge":
        # Saving the adapter needs no more than loading did: it always fits where the rest does.
        return "export the adapter alone, or merge on the CPU"
    if phase == "eval":
        batch = _largest_fitting(options.eval_batch_size, size, replan, "eval_batch_size")
        if batch is not None:
            plural = "s" if batch > 1 else ""
            return f"generate {batch} sequence{plural} at a time (--eval-batch-size {batch})"
        return None
    if phase != "train":
        return None
    changes: list[tuple[str, dict[str, object]]] = []
    if not options.grad_checkpointing:
        changes.append(("turn on --grad-checkpointing", {"grad_checkpointing": True}))
    if options.optimizer in ("adamw", "adamw-foreach"):
        changes.append(("use --optimizer adamw-8bit", {"optimizer": "adamw-8bit"}))
        changes.append(("use --optimizer paged-adamw-8bit", {"optimizer": "paged-adamw-8bit"}))
    for advice, change in changes:
        if _fits(replan(**change), size):
            return advice
    batch = _largest_fitting(options.batch_size, size, replan, "batch_size")
    return None if batch is None else f"train with --batch-size {batch} (and gradient accumulation)"


def recommend(
    phases: Mapping[str, int],
    options: Options,
    replan: Replan,
    classes: Classes | None = None,
) -> Recommendation:
    """Fit the largest phase on the smallest class; failing that, count 80 GB GPUs.

    ``phases`` are per-GPU bounds under ``options``; ``replan(**changes)``
    gives them under changed options (other --gpus, --eval-batch-size, ...), to
    search for the GPUs sharding needs and for advice that saves a class;
    ``classes`` are the memory sizes to choose from (the registry's by default).
    """
    classes = memory_classes() if classes is None else classes
    phase = _largest(phases)
    required = needs(phases[phase])
    size = smallest_class(required, classes)
    needs_gb = round(required / GB, 2)
    if size is not None:
        cards = (
            f"{options.gpus} GPUs of {size} GB (fully sharded)"
            if options.gpus > 1
            else f"a {size} GB card"
        )
        advice = f"the {phase} phase needs {cards}"
        others = [needs(bound) for name, bound in phases.items() if name != phase]
        smaller = smallest_class(max(others, default=0), classes)
        if smaller is not None and smaller < size:
            way = _way_down(phase, options, smaller, replan)
            if way is not None:
                advice += f"; {way}, to stay on {smaller} GB"
            else:
                advice += f" (the other phases fit {smaller} GB)"
        return Recommendation(size, options.gpus, phase, needs_gb, advice)
    count = _fewest_gpus(options.gpus, lambda gpus: replan(gpus=gpus))
    if count is not None:
        return Recommendation(
            None,
            count,
            phase,
            needs_gb,
            f"no single GPU of up to {classes[-1]:g} GB holds the {phase} phase "
            f"({needs_gb:,.2f} GB with headroom); shard it over {count} GPUs of "
            f"{SHARDED_GPU_GB} GB (--gpus {count})",
        )
    return Recommendation(
        None,
        None,
        phase,
        needs_gb,
        f"the {phase} phase does not fit even when sharded over {MAX_GPUS} GPUs: what "
        "sharding cannot split (activations, logits, the KV cache) exceeds one GPU; "
        "lower --batch-size, --seq-len or --eval-batch-size, or turn on --grad-checkpointing",
    )
