"""The order sheet in ``evalkit plan --json``: host RAM, disk, the software stack, the cadence.

Everything a rental needs beside the GPU (the methodology: "collect every
requirement before ordering: backend and library versions, the software
needed, RAM, storage"). Amounts are lower bounds in GB = 10^9 bytes, as the
memory plan's are; every stack fact carries its source. Fields are added,
never renamed or removed without bumping the plan's ``format_version``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evalkit.records._base import Persisted


class _Model(Persisted):
    """The models of this file, on the one persisted base."""


class HostPlan(_Model):
    """Host RAM, at the least: what the machine around the GPU must hold."""

    load_gb: float = Field(
        description="Loading to the GPU from memory-mapped safetensors, tensor by tensor: the "
        "largest tensor as stored passes through host memory."
    )
    export_gb: float = Field(
        description="--export merge on the CPU: the whole model at 16 bits plus the adapter; "
        "--export adapter: the adapter; full fine-tuning: the largest tensor as saved."
    )
    peak_gb: float = Field(description="The larger of the two: the host RAM to rent.")


class DiskPlan(_Model):
    """Disk, at the least: the base, the checkpoints kept, the export and the adapter."""

    base_gb: float = Field(
        description="The base as stored: every parameter at the config's dtype (2 bytes when "
        "it names none), or its 4/8-bit linears when it was saved quantized."
    )
    checkpoint_gb: float = Field(
        description="One training checkpoint: the trainable weights and the optimizer's "
        "states (two AdamW moments per trainable parameter, in its dtype); scheduler, RNG "
        "and trainer state are a few kB more, outside the bound."
    )
    checkpoints: int = Field(description="Checkpoints kept at once (--save-total-limit).")
    export_gb: float = Field(
        description="The exported model: merged at 16 bits (--export merge), the trained "
        "weights (full), 0 for --export adapter (the adapter is adapter_gb)."
    )
    adapter_gb: float = Field(description="The adapter file (0 for full fine-tuning).")
    total_gb: float = Field(
        description="base + checkpoints x checkpoint + export + adapter: the disk to rent."
    )


class Requirement(_Model):
    """A package (and the least version) the planned protocol needs on this vendor's stack."""

    package: str = Field(description="The package, as pip names it.")
    min_version: str | None = Field(description="The least version (null: any release).")
    why: str = Field(description="What goes wrong with less.")
    source: str = Field(description="Where that is documented (repository and pull request).")


class Caveat(_Model):
    """Something to check on this vendor's stack before ordering."""

    note: str = Field(description="What to check.")
    source: str | None = Field(description="Where it is documented (null: evalkit's own).")


class StackPlan(_Model):
    """One GPU class of the order sheet: its memory, and the software it needs for this method."""

    memory_gb: float = Field(description="Memory of one card of the class (the registry's).")
    holds_plan: bool = Field(description="Whether every phase's needs fit one card.")
    vendor: Literal["nvidia", "amd"] | None = Field(
        description="Whose stack: nvidia (CUDA), amd (ROCm); null when --gpu did not say."
    )
    requires: list[Requirement] = Field(description="Packages and least versions, each sourced.")
    caveats: list[Caveat] = Field(description="What to check beyond the versions.")


class Cadence(_Model):
    """Preemptible mode: how often to checkpoint, from the smoke report's measured save."""

    save_every: int = Field(description="Optimizer steps between checkpoints evaluated.")
    save_every_given: bool = Field(description="Whether --save-every gave it (else suggested).")
    step_tokens: int = Field(description="Tokens of one step: --batch-size x --seq-len.")
    step_seconds: float = Field(description="step_tokens / the measured train tokens/s.")
    checkpoint_bytes: int = Field(description="Bytes of one checkpoint.")
    checkpoint_bytes_from: Literal["resume.checkpoint.bytes", "disk.checkpoint_gb"] = Field(
        description="Measured by smoke --resume-at, or the plan's lower bound."
    )
    save_seconds: float = Field(description="Seconds to write one checkpoint.")
    save_seconds_from: str = Field(description="How: measured, or scaled by bytes from which.")
    lost_minutes: float = Field(
        description="Work lost by one preemption, at most: save_every steps and the save that "
        "was under way when it came."
    )
    saving_share: float = Field(description="save / (save_every steps + save): time saving.")
    max_lost_minutes: float = Field(description="--max-lost-minutes.")
    save_every_for_max: int | None = Field(
        description="The largest --save-every whose loss stays within --max-lost-minutes "
        "(null: not even a checkpoint every step does)."
    )
    steps_per_run: int = Field(description="Optimizer steps of one run (all epochs).")
    saves_per_run: int = Field(description="Checkpoints one run writes at this cadence.")
    save_hours_per_run: float = Field(description="Hours one run spends writing them.")
