"""One run of ``smoke --resume-at``: transformers' ``Trainer`` in a fresh process.

Run as ``python -m evalkit.model.resume_worker REQUEST.json RESULT.json`` by
:mod:`evalkit.model.resume`, never by hand. The request says which run:

* ``straight``: train to ``max_steps`` (runs A and A');
* ``kill``: the same, until checkpoint ``kill_at`` is written; then the process
  sends itself SIGKILL (no cleanup, no atexit, nothing flushed that was not
  already written: what a preempted machine leaves behind);
* ``resume``: ``trainer.train(resume_from_checkpoint=…)`` from that checkpoint.

Each run loads the base through evalkit's loading code, sets the seed, and
only then makes the adapter (LoRA's A matrices are random: made before the
seed, they differ in every process and two straight runs part). The Trainer
is subclassed only to observe: which rows each step trained on
(``training_step``) and how long the checkpoint took to write
(``_save_checkpoint``); a callback logs every step's loss and learning rate
and decides that checkpoint ``save_at`` is the only one saved. Each record is
appended to ``steps.jsonl`` and flushed as it happens, so the killed run
leaves its steps behind.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

ROWS_KEY = "evalkit_rows"


def _dataset(path: str) -> Any:
    """The pre-tokenized rows (cut and padded as smoke's batches are), as a torch Dataset."""
    from safetensors.torch import load_file

    from evalkit.model.runtime import torch_module

    torch = torch_module()
    tensors = load_file(path)

    class Rows(torch.utils.data.Dataset):  # type: ignore[name-defined]
        def __len__(self) -> int:
            return int(tensors["rows"].shape[0])

        def __getitem__(self, index: int) -> dict[str, Any]:
            return {name: tensors[name][index] for name in tensors}

    return Rows()


def _collate(features: list[dict[str, Any]]) -> dict[str, Any]:
    import torch

    batch = {
        name: torch.stack([feature[name] for feature in features])
        for name in ("input_ids", "attention_mask", "labels")
    }
    batch[ROWS_KEY] = torch.stack([feature["rows"] for feature in features])
    return batch


def _write(log: TextIO, record: dict[str, Any]) -> None:
    log.write(json.dumps(record) + "\n")
    log.flush()
    os.fsync(log.fileno())


def _trainer_class(transformers: Any, log: TextIO, device: str) -> Any:
    from evalkit.model.training import synchronize

    class ObservedTrainer(transformers.Trainer):
        """transformers' Trainer, observed: rows per step, checkpoint seconds."""

        def training_step(self, model: Any, inputs: Any, num_items_in_batch: Any = None) -> Any:
            rows = inputs.pop(ROWS_KEY).tolist()
            _write(log, {"kind": "rows", "step": self.state.global_step + 1, "rows": rows})
            return super().training_step(model, inputs, num_items_in_batch)

        def _save_checkpoint(self, model: Any, trial: Any) -> None:
            synchronize(device)
            started = time.perf_counter()
            super()._save_checkpoint(model, trial)
            synchronize(device)
            seconds = time.perf_counter() - started
            _write(log, {"kind": "save", "step": self.state.global_step, "seconds": seconds})

    return ObservedTrainer


def _callback(transformers: Any, log: TextIO, save_at: int, kill: bool) -> Any:
    class Observe(transformers.TrainerCallback):
        """Logs each step's loss and learning rate; saves checkpoint ``save_at`` alone."""

        def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> Any:
            control.should_save = state.global_step == save_at
            return control

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **_: Any) -> None:
            if logs and "loss" in logs:
                _write(
                    log,
                    {
                        "kind": "log",
                        "step": state.global_step,
                        "loss": float(logs["loss"]),
                        "lr": float(logs["learning_rate"]),
                    },
                )

        def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
            if kill and state.global_step == save_at:
                _write(log, {"kind": "killed", "step": state.global_step})
                os.kill(os.getpid(), signal.SIGKILL)

    return Observe()


def _model(request: dict[str, Any]) -> Any:
    from evalkit.model.load import load_model
    from evalkit.model.runtime import transformers_module
    from evalkit.model.training import new_adapter, train_everything

    loaded = load_model(
        Path(request["base"]),
        tokenizer=Path(request["tokenizer"]),
        device=request["device"],
        dtype=request["dtype"],
    )
    seed = int(request["args"]["seed"])
    transformers_module().set_seed(seed)  # before the adapter: its A matrices are random
    if request["method"] == "lora":
        new_adapter(loaded, r=int(request["r"]), targets=request["targets"], seed=seed)
    else:
        train_everything(loaded)
    return loaded


def run(request: dict[str, Any]) -> dict[str, Any]:
    """Train as the request says; what ran (a failure of the training itself is a finding)."""
    from evalkit.model import runtime

    transformers = runtime.transformers_module()
    if not request.get("debug"):
        transformers.utils.logging.set_verbosity_error()
    loaded = _model(request)
    folder = Path(request["folder"])
    mode = request["mode"]
    with open(folder / "steps.jsonl", "a", encoding="utf-8") as log:
        args = transformers.TrainingArguments(
            **{**request["args"], "output_dir": str(folder / "trainer")}
        )
        trainer = _trainer_class(transformers, log, loaded.device)(
            model=loaded.model,
            args=args,
            train_dataset=_dataset(request["data"]),
            data_collator=_collate,
            processing_class=loaded.tokenizer,
            callbacks=[_callback(transformers, log, int(request["save_at"]), mode == "kill")],
        )
        resume = request.get("resume_from")
        try:
            with runtime.quiet_warnings():
                trainer.train(resume_from_checkpoint=resume)
        except Exception as error:  # the Trainer on the user's settings: a finding, reported
            if request.get("debug"):
                import traceback

                traceback.print_exc()
            text = str(error).strip().splitlines()
            first = text[0][:300] if text else ""
            return {"failed": f"{type(error).__name__}: {first}"}
    with runtime.quiet_warnings():
        trainer.model.save_pretrained(str(folder / "final"))
    return {"failed": None, "global_step": int(trainer.state.global_step)}


def main(argv: list[str]) -> int:
    """Read the request, run, write the result or the error; exit 0 either way (or be killed)."""
    from evalkit.model.fresh import worker_main

    return worker_main(argv, run)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
