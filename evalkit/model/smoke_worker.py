"""The fresh process of ``evalkit smoke``: load what was saved, compute the batch's logits.

Run as ``python -m evalkit.model.smoke_worker REQUEST.json RESULT.json`` by
:func:`evalkit.model.smoke.smoke`, never by hand. It loads the base and the
saved adapter (or the saved full model) through the loading code every
model command uses, in eval mode, runs the batch the parent trained on, and
writes the logits at the compared positions to a safetensors file; the
parent compares them with the trained model's. Its peak memory is measured
like the parent's phases (GPU allocated memory, or the CPU process's RSS).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any


def reload_logits(request: dict[str, Any]) -> dict[str, Any]:
    """Load the saved artifact in this new process and write its logits at the positions.

    Running out of GPU memory here is a finding of the export phase, returned
    as such (the parent reports it), not an internal error.
    """
    from evalkit.errors import OutOfDeviceMemory
    from evalkit.model.memory import PhaseMeter
    from evalkit.model.runtime import torch_module

    meter = PhaseMeter(request["device"])
    meter.start()
    try:
        _reload(request)
    except (torch_module().cuda.OutOfMemoryError, OutOfDeviceMemory) as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else "out of memory"
        return {"peak_bytes": meter.peak_bytes(), "measure": meter.kind, "out_of_memory": first}
    return {"peak_bytes": meter.peak_bytes(), "measure": meter.kind}


def _reload(request: dict[str, Any]) -> None:
    from safetensors.torch import load_file, save_file

    from evalkit.model.load import attach_adapter, load_base
    from evalkit.model.training import Tensors, logits_at

    loaded = load_base(Path(request["model"]), device=request["device"], dtype=request["dtype"])
    if request.get("adapter") is not None:
        attach_adapter(loaded, Path(request["adapter"]), trainable=False)
    saved = load_file(request["batch"])
    tensors = Tensors(
        saved["input_ids"].to(loaded.device), saved["attention_mask"].to(loaded.device), None
    )
    where = list(zip(saved["rows"].tolist(), saved["columns"].tolist(), strict=True))
    logits = logits_at(loaded.model, tensors, where)
    save_file({"logits": logits.contiguous()}, request["logits"])


def main(argv: list[str]) -> int:
    """Read the request, reload, write the result or the error; exit 0 either way."""
    from evalkit.model.fresh import worker_main

    return worker_main(argv, reload_logits)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
