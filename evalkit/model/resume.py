"""``smoke --trainer hf --resume-at K``: does a checkpoint resume the run it came from?

Preemptible GPUs are safe only when a checkpoint continues its run: the same
weights, optimizer moments, learning-rate schedule, data order and random
numbers. transformers' ``Trainer`` resumes silently from whatever a folder
holds (``save_only_model: true`` keeps no optimizer, scheduler or RNG state
and the resumed run still ends with exit 0), and the data order on resume
has had bugs in every popular stack. So the check runs the stack itself,
each run in a fresh process (:mod:`evalkit.model.resume_worker`):

* A: straight to ``steps``; A': the same again — how far two straight runs
  part here (bitwise on the CPU in float32, a little on a GPU);
* B: the same, killed with SIGKILL right after checkpoint K is written, then
  resumed from it with ``resume_from_checkpoint`` in a new process.

B passes when, after K, its losses and its final weights stay within A's
noise floor, every step's learning rate and rows are A's, and the
checkpoint holds every state file a resume needs (``evalkit card``'s
checkpoint checks).
"""

from __future__ import annotations

import json
import math
import shutil
import signal
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from evalkit.errors import WorkerFailed
from evalkit.model.resume_compare import Run, Setup, compare
from evalkit.model.trainer_args import ResolvedArgs, resolve_args
from evalkit.records._resume import CheckpointMeasure, ResumeCheck

if TYPE_CHECKING:
    from evalkit.model.options import SmokeParams
    from evalkit.records._smoke import SmokeSettings
    from evalkit.tokens.sequences import Batch, TrainingData


class Prepared(Protocol):
    """What the resume check needs of ``evalkit.model.smoke_prepare.Prepared``."""

    @property
    def base(self) -> Path: ...
    @property
    def tokenizer_folder(self) -> Path: ...
    @property
    def device(self) -> str: ...
    @property
    def dtype(self) -> str: ...
    @property
    def method(self) -> str: ...
    @property
    def data(self) -> TrainingData: ...
    @property
    def tokenizer(self) -> Any: ...
    @property
    def pad_id(self) -> int: ...
    @property
    def settings(self) -> SmokeSettings: ...


WORKER_MODULE = "evalkit.model.resume_worker"
RUNS = (("a", "straight"), ("a2", "straight"), ("b_killed", "kill"), ("b_resumed", "resume"))


@dataclass(frozen=True)
class ResumePlan:
    """What the runs train on and with, decided before any model loads."""

    args: ResolvedArgs
    at_step: int
    steps: int
    rows: Batch
    """The Trainer's dataset: every row cut and padded to ``seq_len``, as smoke's batches."""
    steps_per_epoch: int


def plan_resume(prepared: Prepared, given: SmokeParams) -> ResumePlan | None:
    """The TrainingArguments (checked: exit 2) and the rows, or None without ``resume_at``.

    The dataset holds the rows of half the steps (seeded order, rows with a
    supervised token; fewer when the split has fewer), so the runs cross an
    epoch boundary and a resume after it starts inside the second epoch,
    where resume bugs have lived (the sampler's epoch, the batches skipped).
    """
    from evalkit.tokens.sequences import choose_sequences, make_batch

    if given.resume_at is None:
        return None
    settings = prepared.settings
    args = resolve_args(
        given.trainer_args,
        steps=given.steps,
        at_step=given.resume_at,
        device=prepared.device,
        batch=settings.batch,
        lr=settings.lr,
        seed=settings.seed,
        grad_checkpointing=settings.grad_checkpointing,
    )
    accumulation = args.gradient_accumulation_steps
    chosen = choose_sequences(
        prepared.data,
        prepared.tokenizer,
        steps=math.ceil(given.steps / 2) * accumulation,
        batch=args.batch,
        seq_len=settings.seq_len,
        seed=settings.seed,
    )
    # choose_sequences starts its order over when the split is short; each row once here.
    distinct = list({sequence.row: sequence for sequence in chosen.sequences}.values())
    rows = make_batch(distinct, settings.seq_len, prepared.pad_id)
    micro_batches = len(distinct) // args.batch
    if not args.fields.get("dataloader_drop_last"):
        micro_batches = math.ceil(len(distinct) / args.batch)
    per_epoch = max(math.ceil(micro_batches / accumulation), 1)
    return ResumePlan(args, given.resume_at, given.steps, rows, per_epoch)


def _write_rows(rows: Batch, path: Path) -> None:
    from safetensors.torch import save_file

    from evalkit.model import runtime

    torch = runtime.torch_module()
    save_file(
        {
            "input_ids": torch.tensor(rows.input_ids, dtype=torch.long),
            "attention_mask": torch.tensor(rows.attention_mask, dtype=torch.long),
            "labels": torch.tensor(rows.labels, dtype=torch.long),
            "rows": torch.tensor(rows.rows, dtype=torch.long),
        },
        str(path),
    )


def _launch(request: dict[str, Any], folder: Path) -> Run:
    """One run in a new interpreter; a kill after the checkpoint is what the ``kill`` run does."""
    from evalkit.model.fresh import worker_error
    from evalkit.model.runtime import hub_offline_environment, python_executable

    request_path, result_path = folder / "request.json", folder / "result.json"
    request_path.write_text(json.dumps(request), encoding="utf-8")
    completed = subprocess.run(
        [python_executable(), "-m", WORKER_MODULE, str(request_path), str(result_path)],
        env=hub_offline_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        check=False,
    )
    run = Run(folder.name, folder)
    log = folder / "steps.jsonl"
    if log.is_file():
        lines = log.read_text(encoding="utf-8").splitlines()
        run.records = [json.loads(line) for line in lines if line.strip()]
    said_killed = any(record["kind"] == "killed" for record in run.records)
    run.killed = completed.returncode == -signal.SIGKILL and said_killed
    if result_path.is_file():
        result = json.loads(result_path.read_text(encoding="utf-8"))
        if "error" in result:
            raise worker_error(result["error"], "resume check")
        run.failed = result["report"]["failed"]
    elif not run.killed:
        raise WorkerFailed(
            f"the resume check's run {run.name} ended with exit code {completed.returncode} and "
            "no result (out of memory? rerun with {debug})",
            refs={"debug": True},
        )
    return run


def _weights(folder: Path) -> dict[str, Any] | None:
    from safetensors.torch import load_file

    files = sorted(folder.glob("*.safetensors")) if folder.is_dir() else []
    if not files:
        return None
    tensors: dict[str, Any] = {}
    for file in files:
        tensors.update(load_file(str(file)))
    return tensors


def _request(prepared: Prepared, plan: ResumePlan, data: Path, debug: bool) -> dict[str, Any]:
    settings = prepared.settings
    return {
        "base": str(prepared.base),
        "tokenizer": str(prepared.tokenizer_folder),
        "device": prepared.device,
        "dtype": prepared.dtype,
        "method": prepared.method,
        "r": settings.r,
        "targets": settings.targets,
        "args": plan.args.fields,
        "data": str(data),
        "save_at": plan.at_step,
        "debug": debug,
    }


def _runs(
    prepared: Prepared, plan: ResumePlan, scratch: Path, progress: bool, debug: bool
) -> dict[str, Run]:
    from evalkit.leakage.progress import Progress

    data = scratch / "rows.safetensors"
    _write_rows(plan.rows, data)
    base = _request(prepared, plan, data, debug)
    runs: dict[str, Run] = {}
    with Progress(progress).stage("resume check", len(RUNS), "runs") as tick:
        for name, mode in RUNS:
            folder = scratch / name
            folder.mkdir()
            resume_from = None
            if mode == "resume":
                killed = runs["b_killed"]
                checkpoint = killed.folder / "trainer" / f"checkpoint-{plan.at_step}"
                if not (killed.killed and checkpoint.is_dir()):
                    break  # nothing to resume from: the problems say why
                resume_from = str(checkpoint)
            request = {**base, "mode": mode, "folder": str(folder), "resume_from": resume_from}
            runs[name] = _launch(request, folder)
            if mode == "straight":  # its checkpoint was timed; only B's is resumed from
                shutil.rmtree(folder / "trainer", ignore_errors=True)
            tick(1)
    return runs


def run_resume_check(
    prepared: Prepared, plan: ResumePlan, *, progress: bool = False, debug: bool = False
) -> ResumeCheck:
    """Run A, A', B killed and B resumed, each in a fresh process, and compare them."""
    with tempfile.TemporaryDirectory(prefix="evalkit-resume-") as name:
        scratch = Path(name)
        runs = _runs(prepared, plan, scratch, progress, debug)
        checkpoint = _checkpoint(runs, plan)
        finals = {key: _weights(run.folder / "final") for key, run in runs.items()}
        setup = Setup(
            at_step=plan.at_step,
            steps=plan.steps,
            rows=len(plan.rows.rows),
            steps_per_epoch=plan.steps_per_epoch,
            trainer_args=plan.args.record,
        )
        return compare(setup, runs, finals, checkpoint)


def _checkpoint(runs: dict[str, Run], plan: ResumePlan) -> CheckpointMeasure:
    """Checkpoint K of the killed run, checked as ``evalkit card`` checks one; A's save time."""
    from evalkit.provenance.checkpoint import checkpoint_card

    folder = runs["b_killed"].folder / "trainer" / f"checkpoint-{plan.at_step}"
    seconds = runs["a"].save_seconds()
    if not folder.is_dir():
        return CheckpointMeasure(
            files={},
            bytes=0,
            save_seconds=seconds,
            resumable=False,
            problems=[f"no_checkpoint: the killed run wrote no checkpoint-{plan.at_step}"],
        )
    card = checkpoint_card(folder)
    return CheckpointMeasure(
        files={file.name: file.bytes for file in card.files},
        bytes=card.bytes,
        save_seconds=None if seconds is None else round(seconds, 6),
        resumable=card.resumable,
        problems=[f"{problem.code}: {problem.message}" for problem in card.errors],
    )
