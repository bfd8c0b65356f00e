"""The software stack a GPU class needs for the planned method: a sourced table per vendor.

The GPU registry (:mod:`evalkit.plan.gpus`) says each row's vendor; this
table says what that vendor's stack must be for the plan to hold and for
the run to compute what it would on another card. Every fact names where it
is documented (a pull request, a README at a commit, a vendor's page), and
a fact enters only with its source. Requirements apply by method and
options: bitsandbytes only when 4/8-bit weights (``qlora``) or an 8-bit or
paged optimizer are planned.
"""

from __future__ import annotations

from evalkit.plan.config import ModelShape
from evalkit.plan.gpus import GpuSpec
from evalkit.plan.options import Options
from evalkit.records._plan_sheet import Caveat, Requirement, StackPlan

_BNB = "https://github.com/bitsandbytes-foundation/bitsandbytes/pull/"
_FLASH = "Dao-AILab/flash-attention README.md at 0251105a2fb19d2957484b7f023cd8c115286ced"
_TORCH = (
    "https://pytorch.org/get-started (Start Locally: the compute platforms CUDA 11.8, 12.6, "
    "12.8, ROCm 6.3 and CPU are separate builds)"
)
_BNB_INSTALL = "https://huggingface.co/docs/bitsandbytes/v0.50.0/installation"


TORCH_CUDA = Requirement(
    package="torch",
    min_version=None,
    why="a CUDA build of PyTorch (pip's default Linux wheel, or the --index-url of a CUDA "
    "version): a CPU or ROCm build does not run on this card",
    source=_TORCH,
)
TORCH_ROCM = Requirement(
    package="torch",
    min_version=None,
    why="a ROCm build of PyTorch (--index-url https://download.pytorch.org/whl/rocm6.3 or "
    "AMD's images): pip's default wheel is the CUDA one; torch.cuda.* then runs on HIP",
    source=_TORCH,
)
BNB_QLORA_MEMORY = Requirement(
    package="bitsandbytes",
    min_version="0.43.2",
    why="the memory bound counts a 4-bit linear keeping only its weight for the backward; "
    "before 0.43.2 MatMul4Bit also kept every input ('fix QLoRA mem bug: delete useless "
    "buffered activation'), more than the plan's bound",
    source=_BNB + "1270",
)
BNB_CDNA_BLOCKSIZE = Requirement(
    package="bitsandbytes",
    min_version="0.49.2",
    why="4-bit on CDNA (Instinct, warp size 64): before 0.49.2 the default 4-bit block was "
    "128 on ROCm where CUDA's is 64, so an adapter trained there saw another quantization "
    "than on NVIDIA (and half the quantization constants this plan counts); 0.49.2 makes 64 "
    "the default on every accelerator",
    source=_BNB + "1856 (blocksize 64 on CDNA), " + _BNB + "1873 ('[ROCm] Make blocksize=64 "
    "default for 4bit'); https://github.com/unslothai/unsloth/pull/4161 (4-bit on CDNA "
    "enabled for bitsandbytes >= 0.49.2)",
)
BNB_ROCM_WHEELS = Requirement(
    package="bitsandbytes",
    min_version="0.50.0",
    why="the first release with official ROCm wheels on PyPI (earlier: build from source "
    "with -DCOMPUTE_BACKEND=hip) and with the CDNA fix of the 4-bit inference GEMV kernel, "
    "whose hardcoded warp size of 32 gave wrong results on warp-64 cards (the eval phase's "
    "generation on a 4-bit base)",
    source=_BNB_INSTALL + " (AMD ROCm: Installation via PyPI); " + _BNB + "1887; "
    "https://github.com/unslothai/unsloth/pull/7535 ('0.50.0 remains the first PyPI release "
    "with the complete ROCm 4-bit path')",
)
BNB_OPTIMIZER = Requirement(
    package="bitsandbytes",
    min_version=None,
    why="the 8-bit or paged optimizer's states (the planned optimizer): bitsandbytes' optimizers "
    "(NVIDIA: compute capability 6.0+)",
    source=_BNB_INSTALL,
)
FLASH_CUDA = Caveat(
    note="flash-attn (not needed for sdpa attention, which torch provides): CUDA 12.0 and "
    "above, Ampere, Ada or Hopper GPUs, fp16 and bf16; installed with pip install flash-attn "
    "--no-build-isolation",
    source=_FLASH + ", lines 119, 138, 145-146",
)
FLASH_ROCM = Caveat(
    note="flash-attn on ROCm (not needed for sdpa attention) runs through its Composable "
    "Kernel backend (the default: MI200x, MI250x, MI300x, MI355x; fp16, bf16; head dims up "
    "to 256) or its Triton backend (FLASH_ATTENTION_TRITON_AMD_ENABLE=TRUE, from the aiter "
    "package); ROCm 6.0 and above; installed from a clone of the repository",
    source=_FLASH + ", lines 149-173",
)
FLASH_ROCM_SLIDING = Caveat(
    note="this model has sliding-window layers: flash-attn's ROCm Triton backend lists "
    "sliding window attention as a work in progress; use the Composable Kernel backend or "
    "sdpa attention",
    source=_FLASH + ", line 166",
)
VLLM_ROCM = Caveat(
    note="vLLM on ROCm ships on its own cadence, apart from the CUDA release: AMD's ROCm "
    "documentation pins an image with its own vLLM release (rocm/vllm:…_vllm_0.23.0 on its "
    "page) and upstream's ROCm wheels are versioned separately; before planning the eval "
    "phase on vLLM, check that the release in the image serves this adapter (rank, targets)",
    source="https://rocm.docs.amd.com/projects/ai-ecosystem/en/latest/inference/vllm.html; "
    "https://github.com/docker/model-runner/pull/923 ('vLLM ROCm wheels follow a separate "
    "release cadence from CUDA')",
)
UNKNOWN_VENDOR = Caveat(
    note="the GPU row did not name its vendor: add :nvidia or :amd (an Instinct card) to it "
    "for the stack this card needs",
    source=None,
)
_EIGHT_BIT_OPTIMIZERS = ("adamw-8bit", "paged-adamw", "paged-adamw-8bit")


def _requirements(vendor: str, options: Options) -> list[Requirement]:
    listed = [TORCH_CUDA if vendor == "nvidia" else TORCH_ROCM]
    quantized = options.method == "qlora"
    if quantized:
        listed.append(BNB_QLORA_MEMORY)
        if vendor == "amd" and options.quant != "int8":
            listed.append(BNB_CDNA_BLOCKSIZE)
    if vendor == "amd" and (quantized or options.optimizer in _EIGHT_BIT_OPTIMIZERS):
        listed.append(BNB_ROCM_WHEELS)
    elif not quantized and options.optimizer in _EIGHT_BIT_OPTIMIZERS:
        listed.append(BNB_OPTIMIZER)
    return listed


def _caveats(vendor: str, shape: ModelShape) -> list[Caveat]:
    if vendor == "nvidia":
        return [FLASH_CUDA]
    listed = [FLASH_ROCM]
    if shape.sliding_layers:
        listed.append(FLASH_ROCM_SLIDING)
    return [*listed, VLLM_ROCM]


def stack_for(gpu: GpuSpec, shape: ModelShape, options: Options, needs_gb: float) -> StackPlan:
    """What ``gpu``'s vendor stack must be for this model under these options.

    ``needs_gb`` is the largest phase's memory with headroom: the class holds
    the plan when its memory has it.
    """
    holds = needs_gb <= gpu.memory_gb
    if gpu.vendor is None:
        return StackPlan(
            memory_gb=gpu.memory_gb,
            holds_plan=holds,
            vendor=None,
            requires=[],
            caveats=[UNKNOWN_VENDOR],
        )
    return StackPlan(
        memory_gb=gpu.memory_gb,
        holds_plan=holds,
        vendor=gpu.vendor,
        requires=_requirements(gpu.vendor, options),
        caveats=_caveats(gpu.vendor, shape),
    )


def least_versions(stack: StackPlan) -> dict[str, str | None]:
    """Each package once, at the highest least version its requirements name."""
    least: dict[str, str | None] = {}
    for requirement in stack.requires:
        known = least.get(requirement.package)
        wanted = requirement.min_version
        if requirement.package not in least or (
            wanted is not None and (known is None or _release(wanted) > _release(known))
        ):
            least[requirement.package] = wanted
    return least


def _release(version: str) -> tuple[int, ...]:
    """``0.49.2`` -> (0, 49, 2): the table's versions are plain releases."""
    return tuple(int(part) for part in version.split("."))
