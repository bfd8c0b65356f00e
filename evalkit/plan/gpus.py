"""The GPU classes evalkit ships: memory, peak dense bf16 rate and memory bandwidth, sourced.

A time bound divides work by a peak, so the peak must be the vendor's own
figure and the dense one: NVIDIA's datasheets print the 2:4-sparsity rate
first (twice the dense rate) and the dense rate in the footnote or the
architecture whitepaper. GeForce cards run bf16 with fp32 accumulation (what
training uses) at half their fp16-accumulate rate. Bandwidth is the
datasheet's peak; no workload reads faster.

This is the one GPU registry: the memory recommendation (its classes are
the memory sizes of the rows it offers), the time bounds and the software
stack of the order sheet (:mod:`evalkit.plan.stacks`, by the row's vendor)
all read it. One row per class the memory plan recommends (24, 48, 80, 141,
192 GB) and the cards published runs were measured on (A100 40GB, MI325X:
in the table for those runs, not offered as memory classes). ``--gpu
NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS][:VENDOR]`` adds one to all three;
without a bandwidth only the FLOPs bound decoding.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from evalkit.errors import ParameterError

Vendor = Literal["nvidia", "amd"]
VENDORS: tuple[Vendor, ...] = ("nvidia", "amd")
ADDED = "given with --gpu"
# What a card given with --gpu may claim: beyond these a figure is a typo (or an attack
# that turns hours infinite, issue 32): 1e-320 TFLOP/s, 1e308 GB.
MEMORY_GB_RANGE = (0.001, 100_000.0)
TFLOPS_RANGE = (0.001, 100_000.0)  # a CPU's GFLOP/s up to 40 times today's fastest card
BANDWIDTH_GBPS_RANGE = (0.001, 1_000_000.0)


@dataclass(frozen=True)
class GpuSpec:
    """One GPU class: what a time bound needs, and where each figure comes from."""

    name: str
    memory_gb: float
    peak_tflops: float  # dense bf16 (fp32 accumulate) tensor rate
    bandwidth_gbps: float | None  # peak memory bandwidth, GB/s (10^9 bytes)
    source: str
    device_pattern: str | None = None  # matches torch.cuda.get_device_name() of this class
    vendor: Vendor | None = None  # whose software stack it needs (None: not said)
    offered: bool = True  # a memory class the recommendation offers

    def matches(self, device_name: str) -> bool:
        """Whether a device torch names ``device_name`` is this class."""
        return bool(self.device_pattern and re.search(self.device_pattern, device_name))


_ADA = "https://images.nvidia.com/aem-dam/Solutions/geforce/ada/nvidia-ada-gpu-architecture.pdf"
_A100 = (
    "https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/"
    "nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf"
)
_ROCM = "ROCm/ROCm e396b4898f459db094bfd60b876f419f77eb9f09"

SHIPPED: tuple[GpuSpec, ...] = (
    GpuSpec(
        "RTX 4090",
        24,
        165.2,
        1008,
        f"NVIDIA Ada GPU architecture whitepaper ({_ADA}), appendix table of the GeForce "
        "RTX 4090: 24 GB GDDR6X, 1008 GB/s, peak BF16 tensor TFLOPS with FP32 accumulate "
        "165.2 (330.4 with sparsity)",
        r"RTX 4090",
        "nvidia",
    ),
    GpuSpec(
        "L40S",
        48,
        362.05,
        864,
        "NVIDIA L40S datasheet (https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413): "
        "48 GB GDDR6, 864 GB/s, BFLOAT16 tensor core 362.05 TFLOPS (733 with sparsity)",
        r"L40S",
        "nvidia",
    ),
    GpuSpec(
        "A100 SXM 40GB",
        40,
        312,
        1555,
        f"NVIDIA A100 datasheet ({_A100}): BFLOAT16 tensor core 312 TFLOPS (624 with "
        "sparsity); A100 40GB: 1,555 GB/s",
        r"A100-SXM4?-40GB",
        "nvidia",
        offered=False,
    ),
    GpuSpec(
        "A100 SXM 80GB",
        80,
        312,
        2039,
        f"NVIDIA A100 datasheet ({_A100}): BFLOAT16 tensor core 312 TFLOPS (624 with "
        "sparsity); A100 80GB SXM: 2,039 GB/s",
        r"A100-SXM4?-80GB",
        "nvidia",
    ),
    GpuSpec(
        "H100 SXM 80GB",
        80,
        989.5,
        3350,
        "NVIDIA H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/): H100 SXM "
        "80 GB, 3.35 TB/s, BFLOAT16 tensor core 1,979 TFLOPS with sparsity; dense is half",
        r"H100 80GB HBM3|H100 SXM",
        "nvidia",
    ),
    GpuSpec(
        "H200 SXM 141GB",
        141,
        989.5,
        4800,
        "NVIDIA H200 datasheet (https://www.nvidia.com/en-us/data-center/h200/): H200 SXM "
        "141 GB, 4.8 TB/s, BFLOAT16 tensor core 1,979 TFLOPS with sparsity; dense is half",
        r"H200(?! NVL)",
        "nvidia",
    ),
    GpuSpec(
        "MI300X",
        192,
        1307.4,
        5300,
        f"AMD ROCm documentation ({_ROCM}): docs/reference/gpu-arch-specs.rst line 58 "
        "(192 GiB), docs/conceptual/gpu-arch/mi300.md line 81 (matrix BF16 1307.4 TFLOPS) "
        "and line 97 (5.3 TB/s)",
        r"MI300X",
        "amd",
    ),
    GpuSpec(
        "MI325X",
        256,
        1307.4,
        6000,
        f"AMD ROCm documentation ({_ROCM}): docs/reference/gpu-arch-specs.rst line 41 "
        "(256 GiB) and line 42 (CDNA3 gfx942 with the MI300X's 304 compute units, whose "
        "matrix BF16 peak is 1307.4 TFLOPS: docs/conceptual/gpu-arch/mi300.md line 81); "
        "Vultr's ROCm cookbook (https://docs.vultr.com/inference-cookbook/rocm/getting-started/"
        "hardware-requirements): MI325X 256 GB HBM3E, 6.0 TB/s, FP16 1,307 TFLOPS",
        r"MI325X",
        "amd",
        offered=False,
    ),
)


def names(gpus: tuple[GpuSpec, ...] | None = None) -> str:
    """The names, for an error message."""
    return ", ".join(gpu.name for gpu in (SHIPPED if gpus is None else gpus))


def find(name: str, gpus: tuple[GpuSpec, ...] | None = None) -> GpuSpec:
    """The class called ``name`` (case and spaces ignored); an unknown name lists them all."""
    wanted = _key(name)
    gpus = SHIPPED if gpus is None else gpus
    for gpu in gpus:
        if _key(gpu.name) == wanted:
            return gpu
    raise ParameterError(
        "gpu",
        f"{name!r}: not a GPU of the table; use one of {names(gpus)}, "
        "or add one as NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS]",
    )


def _key(name: str) -> str:
    return re.sub(r"[\s_-]+", "", name).lower()


def _figure(text: str, what: str, spec: str, limits: tuple[float, float]) -> float:
    """One number of a --gpu row, within what a card can claim (else one line, exit 2)."""
    low, high = limits
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ParameterError("gpu", f"{spec!r}: {what} must be a positive number, got {text!r}")
    if not low <= value <= high:
        raise ParameterError(
            "gpu", f"{spec!r}: {what} must be from {low:g} to {high:,.0f}, got {text!r}"
        )
    return value


def parse_gpu(spec: str, gpus: tuple[GpuSpec, ...] | None = None) -> GpuSpec:
    """``--gpu``: a shipped name, or ``NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS][:VENDOR]``.

    VENDOR (``nvidia`` or ``amd``, an Instinct card) names the software stack
    the order sheet lists for the new class; without it the stack is unknown.
    """
    gpus = SHIPPED if gpus is None else gpus
    if ":" not in spec:
        return find(spec, gpus)
    parts = spec.split(":")
    vendor: Vendor | None = None
    if len(parts) in (4, 5) and parts[-1].strip().lower() in VENDORS:
        vendor = parts.pop().strip().lower()  # type: ignore[assignment]
    if len(parts) not in (3, 4) or not parts[0].strip():
        raise ParameterError(
            "gpu",
            f"{spec!r}: expected NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS][:nvidia|amd] (peak "
            "dense bf16 TFLOP/s, GB/s), e.g. 'RTX 6000 Ada:48:364.2:960:nvidia'",
        )
    name = parts[0].strip()
    if any(_key(gpu.name) == _key(name) for gpu in gpus):
        raise ParameterError("gpu", f"{spec!r}: {name!r} is already in the table; use another name")
    return GpuSpec(
        name=name,
        memory_gb=_whole(_figure(parts[1], "MEMORY_GB", spec, MEMORY_GB_RANGE)),
        peak_tflops=_figure(parts[2], "TFLOPS", spec, TFLOPS_RANGE),
        bandwidth_gbps=(
            _figure(parts[3], "BANDWIDTH_GBPS", spec, BANDWIDTH_GBPS_RANGE)
            if len(parts) == 4
            else None
        ),
        source=ADDED,
        vendor=vendor,
    )


def _whole(value: float) -> float:
    """48.0 as 48: a memory class prints (and is written) as the card is sold."""
    return int(value) if value.is_integer() else value


MAX_ADDED = 64


def _added(specs: tuple[str, ...]) -> tuple[GpuSpec, ...]:
    if len(specs) > MAX_ADDED:
        raise ParameterError("gpu", f"given {len(specs)} times: at most {MAX_ADDED} classes")
    added = tuple(parse_gpu(spec) for spec in specs)
    names: set[str] = set()
    for gpu in added:
        if gpu.name in names:
            raise ParameterError("gpu", f"{gpu.name!r}: given twice")
        names.add(gpu.name)
    return added


def choose(specs: tuple[str, ...]) -> tuple[GpuSpec, ...]:
    """The classes the time bounds and the order sheet show: the table, plus each ``--gpu``.

    A shipped name given to ``--gpu`` narrows the table to the names given.
    """
    chosen = _added(specs)
    if not chosen:
        return SHIPPED
    new_only = all(gpu.source == ADDED for gpu in chosen)
    return (*SHIPPED, *chosen) if new_only else chosen


def registry(specs: tuple[str, ...] = ()) -> tuple[GpuSpec, ...]:
    """Every row: the shipped table and the classes ``--gpu`` adds (a name only narrows
    what is shown; the memory recommendation still chooses among every row)."""
    return (*SHIPPED, *(gpu for gpu in _added(specs) if gpu.source == ADDED))


def memory_classes(gpus: tuple[GpuSpec, ...] | None = None) -> tuple[float, ...]:
    """The memory sizes the recommendation offers, smallest first: of the offered rows."""
    rows = SHIPPED if gpus is None else gpus
    return tuple(sorted({gpu.memory_gb for gpu in rows if gpu.offered}))


def for_device(device_name: str, gpus: tuple[GpuSpec, ...] | None = None) -> GpuSpec | None:
    """The class of the table a measured device is, if any (by torch's device name)."""
    rows = SHIPPED if gpus is None else gpus
    return next((gpu for gpu in rows if gpu.matches(device_name)), None)
