"""The peak memory of one phase of a run: GPU memory allocated, or the CPU process's RSS.

On a GPU the figure is what the plan bounds: ``torch.cuda.max_memory_allocated``
since the phase began (the peak is reset at each phase's start), the memory
the caching allocator handed to tensors. On the CPU there is no allocator to
ask, so the figure is the process's peak resident set (Linux ``VmHWM``, reset
at each phase's start by writing ``5`` to ``/proc/self/clear_refs``): it
counts the interpreter, the libraries' code and everything else the process
holds, so it is **not comparable with the bound**, only with other CPU runs.
Where the peak cannot be reset (no ``/proc``) it is the peak since the
process started, and says so.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from evalkit.model import runtime
from evalkit.records import MeasureKind

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")
_HWM = re.compile(r"^VmHWM:\s+(\d+)\s+kB", re.MULTILINE)

NOTES: dict[MeasureKind, str] = {
    "cuda_max_memory_allocated": (
        "torch.cuda.max_memory_allocated, reset at each phase's start: the memory tensors "
        "held, what the plan bounds (the CUDA context and the allocator's reserve are apart)"
    ),
    "process_rss": (
        "CPU: the process's peak resident memory (RSS), reset at each phase's start; it "
        "counts the interpreter and the libraries' code, so it is NOT comparable with the "
        "plan's GPU bound"
    ),
    "process_rss_since_start": (
        "CPU: the process's peak resident memory (RSS) since it started (this system cannot "
        "reset it per phase); NOT comparable with the plan's GPU bound"
    ),
}


def _rss_peak_bytes() -> int | None:
    try:
        found = _HWM.search(_STATUS.read_text(encoding="ascii"))
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def _reset_rss_peak() -> bool:
    """Set the process's peak RSS to its current RSS (Linux >= 4.0); False where it cannot."""
    try:
        _CLEAR_REFS.write_text("5", encoding="ascii")
    except OSError:
        return False
    return _rss_peak_bytes() is not None


@dataclass
class PhaseMeter:
    """Measures the peak of each phase on one device: :meth:`start`, run, :meth:`peak_bytes`."""

    device: str
    kind: MeasureKind = "cuda_max_memory_allocated"

    def __post_init__(self) -> None:
        if self.device != "cuda":
            self.kind = "process_rss" if _reset_rss_peak() else "process_rss_since_start"

    @property
    def comparable(self) -> bool:
        """Whether the figures measure what the plan bounds (GPU allocated memory)."""
        return self.kind == "cuda_max_memory_allocated"

    def start(self) -> None:
        """Begin a phase: forget the peak so far."""
        if self.device == "cuda":
            torch = runtime.torch_module()
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        elif self.kind == "process_rss":
            _reset_rss_peak()

    def peak_bytes(self) -> int:
        """The peak since :meth:`start` (since the process began for ``*_since_start``)."""
        if self.device == "cuda":
            torch = runtime.torch_module()
            torch.cuda.synchronize()
            return int(torch.cuda.max_memory_allocated())
        peak = _rss_peak_bytes()
        if peak is not None:
            return peak
        # No /proc: getrusage's maximum RSS, in KiB on Linux and in bytes on macOS.
        import resource

        maximum = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return int(maximum if sys.platform == "darwin" else maximum * 1024)
