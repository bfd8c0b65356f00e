"""The phases of ``evalkit smoke``, each measured: load, train, eval, export (save + reload).

Peaks are reset at each phase's start and read at its end (see
:mod:`evalkit.model.memory`); what runs between phases (the logits the reload
is compared with, before and after training) is measured by none. The
export phase is the larger of saving here and reloading in the fresh
process. Running out of GPU memory is a finding, not a crash: the phase
that ran out is named in the report and the run stops there (exit 1).
"""

from __future__ import annotations

import contextlib
import math
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalkit.model.memory import MeasureKind, PhaseMeter
from evalkit.records._smoke import GenerationRun, ReloadCheck

if TYPE_CHECKING:
    from evalkit.model.load import LoadedModel
    from evalkit.model.smoke_prepare import Prepared

WORKER_MODULE = "evalkit.model.smoke_worker"
COMPARED_POSITIONS = 256
# Same weights, inputs and kernels give the same bits: allow 4 float32 ulps, no more.
ULPS = 4
FLOAT32_EPSILON = 2.0**-23


@dataclass
class Outcome:
    """What the phases produced (partly, when one ran out of memory)."""

    measure: MeasureKind
    comparable: bool
    peaks: dict[str, int] = field(default_factory=dict)
    losses: list[float] = field(default_factory=list)
    trainable: int = 0
    generation: GenerationRun | None = None
    reload: ReloadCheck | None = None
    problems: list[str] = field(default_factory=list)
    step_seconds: list[float] = field(default_factory=list)
    eval_new_tokens: int = 0
    eval_seconds: float | None = None
    save_seconds: float | None = None
    reload_seconds: float | None = None


@dataclass
class _Phases:
    meter: PhaseMeter
    outcome: Outcome
    debug: bool = False
    current: str = ""

    @contextlib.contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Measure the block as phase ``name`` (its peak is kept even when it runs out)."""
        self.current = name
        self.meter.start()
        try:
            yield
        finally:
            self.outcome.peaks[name] = self.meter.peak_bytes()


def _load(prepared: Prepared) -> LoadedModel:
    from evalkit.model.load import load_model
    from evalkit.model.training import enable_checkpointing, new_adapter, train_everything

    loaded = load_model(
        prepared.base,
        tokenizer=prepared.tokenizer_folder,
        device=prepared.device,
        dtype=prepared.dtype,
    )
    settings = prepared.settings
    if prepared.method == "lora":
        new_adapter(loaded, r=settings.r, targets=settings.targets, seed=settings.seed)
    else:
        train_everything(loaded)
    if settings.grad_checkpointing:
        enable_checkpointing(loaded)
    return loaded


def _generate(loaded: LoadedModel, prepared: Prepared, outcome: Outcome) -> GenerationRun:
    """The greedy pass, timed: its wall-clock seconds and new tokens go to ``outcome``."""
    from evalkit.model.decode import decode_batch, default_settings
    from evalkit.model.training import synchronize

    settings = default_settings(loaded, prepared.settings.max_new_tokens)
    synchronize(loaded.device)
    started = time.perf_counter()
    outputs = decode_batch(loaded, prepared.prompts, settings)
    synchronize(loaded.device)
    outcome.eval_seconds = time.perf_counter() - started
    outcome.eval_new_tokens = sum(len(output.output_ids) for output in outputs)
    return GenerationRun(
        prompts=len(prepared.prompts),
        prompt_tokens=max(len(ids) for ids in prepared.prompts),
        new_tokens=max(len(output.output_ids) for output in outputs),
    )


def _save(loaded: LoadedModel, folder: Path) -> int:
    from evalkit.model import runtime

    with runtime.quiet_warnings():
        loaded.model.save_pretrained(str(folder))
    return sum(path.stat().st_size for path in folder.iterdir() if path.is_file())


def _reload_request(prepared: Prepared, saved: Path, scratch: Path) -> dict[str, Any]:
    lora = prepared.method == "lora"
    return {
        "model": str(prepared.base if lora else saved),
        "adapter": str(saved) if lora else None,
        "device": prepared.device,
        "dtype": prepared.dtype,
        "batch": str(scratch / "batch.safetensors"),
        "logits": str(scratch / "logits.safetensors"),
    }


def _compare(before: Any, trained: Any, reloaded: Any, saved_bytes: int, lora: bool) -> ReloadCheck:
    scale = max(1.0, float(trained.abs().max()))
    tolerance = ULPS * FLOAT32_EPSILON * scale
    same_shape = reloaded.shape == trained.shape
    difference = float((reloaded - trained).abs().max()) if same_shape else None
    effect = float((trained - before).abs().max())
    ok = (
        difference is not None
        and math.isfinite(difference)
        and difference <= tolerance
        and math.isfinite(effect)
        and effect > tolerance
    )
    return ReloadCheck(
        artifact="adapter" if lora else "model",
        saved_bytes=saved_bytes,
        positions=int(trained.shape[0]),
        max_logit_diff=difference,
        tolerance=tolerance,
        training_effect=effect,
        ok=ok,
    )


def _reload_problem(check: ReloadCheck) -> str | None:
    what = "adapter" if check.artifact == "adapter" else "model"
    if check.max_logit_diff is None or not math.isfinite(check.max_logit_diff):
        return f"reload: the saved {what}, reloaded in a fresh process, gives no comparable logits"
    if check.max_logit_diff > check.tolerance:
        return (
            f"reload: the saved {what}, reloaded in a fresh process, gives logits up to "
            f"{check.max_logit_diff:.3g} from the trained model's (tolerance "
            f"{check.tolerance:.3g}): what was saved is not what was trained"
        )
    effect = check.training_effect
    if effect is None or not effect > check.tolerance:
        return (
            f"reload: training moved the logits by at most {effect:.3g}, not more than the "
            f"tolerance {check.tolerance:.3g}, so a reload that lost the training would pass "
            "too; raise --lr or --steps"
        )
    return None


@dataclass(frozen=True)
class _Reference:
    """The batch the reload is compared on, and the trained model's logits on it."""

    tensors: Any
    where: list[tuple[int, int]]
    before: Any
    trained: Any


def _write_batch(reference: _Reference, path: Path) -> None:
    """The compared batch and positions, for the fresh process (CPU tensors, safetensors)."""
    from safetensors.torch import save_file

    torch = _torch()
    save_file(
        {
            "input_ids": reference.tensors.input_ids.cpu().contiguous(),
            "attention_mask": reference.tensors.attention_mask.cpu().contiguous(),
            "rows": torch.tensor([row for row, _ in reference.where], dtype=torch.long),
            "columns": torch.tensor([column for _, column in reference.where], dtype=torch.long),
        },
        str(path),
    )


def _release(loaded: LoadedModel) -> None:
    """Free the trained model before the fresh process loads its copy (one GPU holds one)."""
    import gc

    loaded.model = None
    gc.collect()
    if loaded.device == "cuda":
        _torch().cuda.empty_cache()


def _export(
    phases: _Phases, loaded: LoadedModel, prepared: Prepared, reference: _Reference
) -> None:
    """Save the artifact (measured), reload it in a fresh process (measured there), compare."""
    from safetensors.torch import load_file

    from evalkit.model.fresh import run_worker

    outcome = phases.outcome
    with tempfile.TemporaryDirectory(prefix="evalkit-smoke-") as name:
        scratch = Path(name)
        saved = scratch / ("adapter" if prepared.method == "lora" else "model")
        with phases.phase("export"):
            started = time.perf_counter()
            saved_bytes = _save(loaded, saved)
            outcome.save_seconds = time.perf_counter() - started
        _write_batch(reference, scratch / "batch.safetensors")
        _release(loaded)
        request = {**_reload_request(prepared, saved, scratch), "debug": phases.debug}
        started = time.perf_counter()
        result = run_worker(WORKER_MODULE, request, scratch, what="smoke reload")
        outcome.reload_seconds = time.perf_counter() - started
        outcome.peaks["export"] = max(outcome.peaks["export"], int(result["peak_bytes"]))
        if "out_of_memory" in result:
            phases.current = "export"
            raise _torch().cuda.OutOfMemoryError(f"the reload: {result['out_of_memory']}")
        reloaded = load_file(str(scratch / "logits.safetensors"))["logits"]
    check = _compare(
        reference.before, reference.trained, reloaded, saved_bytes, prepared.method == "lora"
    )
    outcome.reload = check
    problem = _reload_problem(check)
    if problem is not None:
        outcome.problems.append(problem)


def _torch() -> Any:
    from evalkit.model import runtime

    return runtime.torch_module()


def _phases(phases: _Phases, prepared: Prepared, progress: bool) -> None:
    from evalkit.leakage.progress import Progress
    from evalkit.model.training import (
        finite,
        logits_at,
        positions,
        to_tensors,
        train_steps,
        trainable_parameters,
    )

    outcome = phases.outcome
    with phases.phase("load"):
        loaded = _load(prepared)
    outcome.trainable = trainable_parameters(loaded.model)
    tensors = [to_tensors(batch, loaded.device) for batch in prepared.batches]
    where = positions(prepared.batches[0], COMPARED_POSITIONS)
    before = logits_at(loaded.model, tensors[0], where)
    with (
        phases.phase("train"),
        Progress(progress).stage("training", len(tensors), "steps") as tick,
    ):
        train_steps(
            loaded.model,
            tensors,
            lr=prepared.settings.lr,
            advance=tick,
            losses=outcome.losses,
            timings=outcome.step_seconds,
        )
    if not finite(outcome.losses):
        step = next(i for i, loss in enumerate(outcome.losses, 1) if not math.isfinite(loss))
        outcome.problems.append(
            f"train: the loss of step {step} is {outcome.losses[step - 1]}; the steps diverged "
            "(lower --lr, or check the data and dtype)"
        )
    trained = logits_at(loaded.model, tensors[0], where)
    with phases.phase("eval"):
        outcome.generation = _generate(loaded, prepared, outcome)
    _export(phases, loaded, prepared, _Reference(tensors[0], where, before, trained))


def run_phases(prepared: Prepared, *, progress: bool = False, debug: bool = False) -> Outcome:
    """Load, train, generate, save and reload, each phase measured; OOM ends the run."""
    from evalkit.errors import OutOfDeviceMemory

    torch = _torch()
    meter = PhaseMeter(prepared.device)
    phases = _Phases(meter, Outcome(measure=meter.kind, comparable=meter.comparable), debug)
    try:
        _phases(phases, prepared, progress)
    except (torch.cuda.OutOfMemoryError, OutOfDeviceMemory) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "out of memory"
        bound = prepared.bounds[phases.current] / 1e9
        phases.outcome.problems.append(
            f"{phases.current}: ran out of {prepared.device} memory ({first[:200]}); the plan's "
            f"bound of this phase is {bound:.2f} GB"
        )
    return phases.outcome
