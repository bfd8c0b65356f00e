"""Host RAM and disk of a fine-tuning cycle: what the order sheet rents beside the GPU.

Lower bounds in bytes, as the GPU plan's are: each counts only what the
reference stack (transformers' ``Trainer``, PEFT, safetensors) must hold or
write, so a machine with less cannot run the cycle.

- **Host RAM, loading.** transformers loads a safetensors checkpoint to the
  GPU tensor by tensor from a memory-mapped file: the largest tensor as
  stored passes through host memory (loading without memory mapping holds
  the whole checkpoint: more).
- **Host RAM, exporting.** Merging an adapter on the CPU (the way out when
  the card cannot merge) holds the whole model at 16 bits (2 bytes a
  parameter; for QLoRA the dequantized base) and the adapter; saving the
  adapter alone holds the adapter; full fine-tuning saves the trained weights
  tensor by tensor.
- **Disk.** The base as stored (the config's dtype; the packed 4/8-bit
  linears and their constants when it was saved quantized); each checkpoint
  the ``Trainer`` keeps: the trainable weights and the optimizer's states
  (two AdamW moments per trainable parameter in its dtype, one byte each for
  an 8-bit optimizer, none for SGD); the scheduler, RNG and trainer state are
  a few kB beside them, left out; the export (a 16-bit merged model, or the
  trained weights); the adapter file.
"""

from __future__ import annotations

from dataclasses import dataclass

from evalkit.plan.config import ModelShape
from evalkit.plan.counts import ParameterCounts, largest_linear
from evalkit.plan.options import Options
from evalkit.plan.state import Dtypes, quantized_bytes

# Bytes of an element of each dtype a config may name (torch's names, as transformers writes).
DTYPE_BYTES = {
    "float64": 8,
    "double": 8,
    "float32": 4,
    "float": 4,
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float8_e4m3fn": 1,
    "float8_e5m2": 1,
}
SIXTEEN_BIT = 2  # the least bytes a parameter of a 16-bit checkpoint takes
# bitsandbytes' stored formats, as the memory plan models them (fp4 is stored as nf4 is).
_STORED_QUANT = {"nf4": "nf4", "nf4-dq": "nf4-dq", "fp4": "nf4", "fp4-dq": "nf4-dq", "int8": "int8"}


def stored_bytes_per_param(shape: ModelShape) -> int:
    """Bytes a parameter of the base takes on disk: its dtype's, 2 when the config names none."""
    if shape.stored_dtype is None:
        return SIXTEEN_BIT
    return DTYPE_BYTES.get(shape.stored_dtype, SIXTEEN_BIT)


def base_bytes(shape: ModelShape, counts: ParameterCounts) -> int:
    """The base model as stored: every parameter at its dtype, or its quantized linears."""
    each = stored_bytes_per_param(shape)
    quant = _STORED_QUANT.get(shape.stored_quant or "")
    if quant is None:
        return counts.total * each
    packed, constants = quantized_bytes(shape, quant)
    return packed + constants + counts.unquantized * each


def largest_tensor(shape: ModelShape) -> int:
    """Elements of the checkpoint's largest tensor: the embedding (or head) or a linear."""
    return max(shape.vocab_size * shape.hidden_size, largest_linear(shape))


@dataclass(frozen=True)
class HostBytes:
    """Host RAM, at the least, of loading and of exporting."""

    load: int
    export: int

    @property
    def peak(self) -> int:
        """The host RAM the cycle needs: the larger."""
        return max(self.load, self.export)


def host_bytes(
    shape: ModelShape, options: Options, counts: ParameterCounts, sizes: Dtypes, trainable: int
) -> HostBytes:
    """Host RAM of loading the base to the GPU and of exporting the result."""
    load = largest_tensor(shape) * stored_bytes_per_param(shape)
    adapter = trainable * sizes.trainable if options.adapter else 0
    if options.export == "merge":
        export = SIXTEEN_BIT * counts.total + adapter
    elif options.export == "adapter":
        export = adapter
    else:  # full fine-tuning: save_pretrained moves the weights to the host one at a time
        export = largest_tensor(shape) * sizes.storage
    return HostBytes(load=load, export=export)


def optimizer_state_bytes(options: Options, trainable: int, sizes: Dtypes) -> int:
    """The optimizer's states a checkpoint saves (``optimizer.pt``), paged or not."""
    if options.optimizer in ("adamw", "adamw-foreach", "paged-adamw"):
        return 2 * trainable * sizes.trainable  # exp_avg, exp_avg_sq: zeros_like(param)
    if options.optimizer in ("adamw-8bit", "paged-adamw-8bit"):
        return 2 * trainable  # one byte a state (the block-wise constants left out)
    return 0  # SGD without momentum keeps no state


@dataclass(frozen=True)
class DiskBytes:
    """Disk, at the least: the base, the checkpoints kept, the export, the adapter."""

    base: int
    checkpoint: int
    checkpoints: int
    export: int
    adapter: int

    @property
    def total(self) -> int:
        """All of it at once: what the volume must hold."""
        return self.base + self.checkpoints * self.checkpoint + self.export + self.adapter


def disk_bytes(
    shape: ModelShape, options: Options, counts: ParameterCounts, sizes: Dtypes, trainable: int
) -> DiskBytes:
    """The disk of the cycle, with ``options.save_total_limit`` checkpoints kept."""
    weights = trainable * sizes.trainable  # the adapter's, or (full) every trained weight
    if options.export == "merge":
        export = SIXTEEN_BIT * counts.total
    elif options.export == "adapter":
        export = 0
    else:
        export = counts.total * sizes.storage
    return DiskBytes(
        base=base_bytes(shape, counts),
        checkpoint=weights + optimizer_state_bytes(options, trainable, sizes),
        checkpoints=options.save_total_limit,
        export=export,
        adapter=weights if options.adapter else 0,
    )
