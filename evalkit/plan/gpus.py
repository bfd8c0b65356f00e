"""The GPU classes evalkit ships: memory, peak dense bf16 rate and memory bandwidth, sourced.

A time bound divides work by a peak, so the peak must be the vendor's own
figure and the dense one: NVIDIA's datasheets print the 2:4-sparsity rate
first (twice the dense rate) and the dense rate in the footnote or the
architecture whitepaper. GeForce cards run bf16 with fp32 accumulation (what
training uses) at half their fp16-accumulate rate. Bandwidth is the
datasheet's peak; no workload reads faster.

One row per class the memory plan recommends (24, 48, 80, 141, 192 GB) and
the cards published runs were measured on (A100 40GB). ``--gpu
NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS]`` adds one; without a bandwidth only
the FLOPs bound decoding.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from evalkit.errors import ParameterError


@dataclass(frozen=True)
class GpuSpec:
    """One GPU class: what a time bound needs, and where each figure comes from."""

    name: str
    memory_gb: float
    peak_tflops: float  # dense bf16 (fp32 accumulate) tensor rate
    bandwidth_gbps: float | None  # peak memory bandwidth, GB/s (10^9 bytes)
    source: str
    device_pattern: str | None = None  # matches torch.cuda.get_device_name() of this class

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
    ),
    GpuSpec(
        "L40S",
        48,
        362.05,
        864,
        "NVIDIA L40S datasheet (https://resources.nvidia.com/en-us-l40s/l40s-datasheet-28413): "
        "48 GB GDDR6, 864 GB/s, BFLOAT16 tensor core 362.05 TFLOPS (733 with sparsity)",
        r"L40S",
    ),
    GpuSpec(
        "A100 SXM 40GB",
        40,
        312,
        1555,
        f"NVIDIA A100 datasheet ({_A100}): BFLOAT16 tensor core 312 TFLOPS (624 with "
        "sparsity); A100 40GB: 1,555 GB/s",
        r"A100-SXM4?-40GB",
    ),
    GpuSpec(
        "A100 SXM 80GB",
        80,
        312,
        2039,
        f"NVIDIA A100 datasheet ({_A100}): BFLOAT16 tensor core 312 TFLOPS (624 with "
        "sparsity); A100 80GB SXM: 2,039 GB/s",
        r"A100-SXM4?-80GB",
    ),
    GpuSpec(
        "H100 SXM 80GB",
        80,
        989.5,
        3350,
        "NVIDIA H100 datasheet (https://www.nvidia.com/en-us/data-center/h100/): H100 SXM "
        "80 GB, 3.35 TB/s, BFLOAT16 tensor core 1,979 TFLOPS with sparsity; dense is half",
        r"H100 80GB HBM3|H100 SXM",
    ),
    GpuSpec(
        "H200 SXM 141GB",
        141,
        989.5,
        4800,
        "NVIDIA H200 datasheet (https://www.nvidia.com/en-us/data-center/h200/): H200 SXM "
        "141 GB, 4.8 TB/s, BFLOAT16 tensor core 1,979 TFLOPS with sparsity; dense is half",
        r"H200(?! NVL)",
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
    ),
)


def names(gpus: tuple[GpuSpec, ...] = SHIPPED) -> str:
    """The names, for an error message."""
    return ", ".join(gpu.name for gpu in gpus)


def find(name: str, gpus: tuple[GpuSpec, ...] = SHIPPED) -> GpuSpec:
    """The class called ``name`` (case and spaces ignored); an unknown name lists them all."""
    wanted = _key(name)
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


def _positive(text: str, what: str, spec: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ParameterError("gpu", f"{spec!r}: {what} must be a positive number, got {text!r}")
    return value


def parse_gpu(spec: str, gpus: tuple[GpuSpec, ...] = SHIPPED) -> GpuSpec:
    """``--gpu``: a shipped name, or ``NAME:MEMORY_GB:TFLOPS[:BANDWIDTH_GBPS]`` for a new class."""
    if ":" not in spec:
        return find(spec, gpus)
    parts = spec.split(":")
    if len(parts) not in (3, 4) or not parts[0].strip():
        raise ParameterError(
            "gpu",
            f"{spec!r}: expected NAME:MEMORY_GB:TFLOPS or NAME:MEMORY_GB:TFLOPS:"
            "BANDWIDTH_GBPS (peak dense bf16 TFLOP/s, GB/s), e.g. 'RTX 6000 Ada:48:364.2:960'",
        )
    name = parts[0].strip()
    if any(_key(gpu.name) == _key(name) for gpu in gpus):
        raise ParameterError("gpu", f"{spec!r}: {name!r} is already in the table; use another name")
    return GpuSpec(
        name=name,
        memory_gb=_positive(parts[1], "MEMORY_GB", spec),
        peak_tflops=_positive(parts[2], "TFLOPS", spec),
        bandwidth_gbps=_positive(parts[3], "BANDWIDTH_GBPS", spec) if len(parts) == 4 else None,
        source="given with --gpu",
    )


def choose(specs: tuple[str, ...]) -> tuple[GpuSpec, ...]:
    """The table the time bounds are given for: the shipped one, plus each ``--gpu`` added.

    A shipped name given to ``--gpu`` narrows the table to the names given.
    """
    added = tuple(parse_gpu(spec) for spec in specs)
    if not added:
        return SHIPPED
    chosen: list[GpuSpec] = []
    for gpu in added:
        if gpu.name in {other.name for other in chosen}:
            raise ParameterError("gpu", f"{gpu.name!r}: given twice")
        chosen.append(gpu)
    new_only = all(gpu.source == "given with --gpu" for gpu in chosen)
    return (*SHIPPED, *chosen) if new_only else tuple(chosen)


def for_device(device_name: str, gpus: tuple[GpuSpec, ...] = SHIPPED) -> GpuSpec | None:
    """The class of the table a measured device is, if any (by torch's device name)."""
    return next((gpu for gpu in gpus if gpu.matches(device_name)), None)
