"""torch, transformers and peft: imported here, on demand, offline and quiet.

This is the only way evalkit reaches the model libraries, so ``evalkit
--help`` and the base install never pay for them. Device and dtype choices
are resolved here once, with the rules the docs state:

* ``--device auto`` is CUDA when torch sees a GPU, else the CPU; ``cuda``
  without a GPU is an error, never a silent fall-back to the CPU.
* ``--dtype auto`` is float32 on the CPU (bf16/fp16 matmuls there are slow
  and round differently from a GPU's); on CUDA it is the dtype the model was
  saved in when that is a 16-bit one (bf16 falls back to fp16 on a GPU
  that only emulates bf16, before Ampere), else float32.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import warnings
from collections.abc import Iterator
from typing import Any, Literal

from evalkit.errors import DeviceUnavailable, ParameterError, Ref, UsageError

DeviceChoice = Literal["auto", "cpu", "cuda"]
DtypeChoice = Literal["auto", "float32", "bfloat16", "float16"]
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
DTYPES: tuple[str, ...] = ("auto", "float32", "bfloat16", "float16")
_HALF = ("bfloat16", "float16")
# config.json names the saved dtype under "dtype" (transformers >= 4.56) or "torch_dtype".
_CONFIG_DTYPE_KEYS = ("dtype", "torch_dtype")


def _install_hint(package: str) -> UsageError:
    return UsageError(
        f"this needs the optional '{package}' package: pip install 'evalkit[hf]' "
        "(install the torch build for your GPU first)"
    )


def torch_module() -> Any:
    """``import torch``, or a one-line error saying how to install it."""
    try:
        import torch
    except ImportError:
        raise _install_hint("torch") from None
    return torch


def transformers_module() -> Any:
    """``import transformers`` with the Hub off and its progress bars and chatter silenced."""
    from evalkit.tokens.load import offline_transformers

    transformers = offline_transformers()
    transformers.utils.logging.disable_progress_bar()
    return transformers


def peft_module() -> Any:
    """``import peft`` (after transformers, offline), or a one-line install hint."""
    transformers_module()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import peft
    except ImportError:
        raise _install_hint("peft") from None
    return peft


@contextlib.contextmanager
def quiet_warnings() -> Iterator[None]:
    """Hide the libraries' deprecation and advice warnings inside the block.

    They speak of the libraries' internals (``is_gradient_checkpointing`` is
    deprecated, …), not of the user's input; what matters to a user evalkit
    checks itself and reports as an error.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        yield


def resolve_device(choice: str) -> str:
    """``cpu`` or ``cuda`` for a ``--device`` choice; ``cuda`` must really be there."""
    if choice not in DEVICES:
        raise ParameterError("device", f"{choice!r}: use one of {', '.join(DEVICES)}")
    torch = torch_module()
    available = bool(torch.cuda.is_available())
    if choice == "auto":
        return "cuda" if available else "cpu"
    if choice == "cuda" and not available:
        build = torch.version.cuda
        why = (
            "this torch is a CPU-only build"
            if build is None
            else f"torch (CUDA {build}) sees no GPU: check CUDA_VISIBLE_DEVICES and the driver"
        )
        raise DeviceUnavailable(
            f"{{cuda}}: no CUDA GPU is available ({why}); use {{cpu}}",
            refs={"cuda": Ref("device", "cuda"), "cpu": Ref("device", "cpu")},
        )
    return choice


def saved_dtype(config: dict[str, Any]) -> str | None:
    """The dtype a model's ``config.json`` says its weights were saved in."""
    for key in _CONFIG_DTYPE_KEYS:
        value = config.get(key)
        if isinstance(value, str):
            return value.removeprefix("torch.")
    return None


def _bf16_native(torch: Any) -> bool:
    """Whether the GPU computes bfloat16 in hardware (compute capability 8.0, Ampere, or later).

    ``torch.cuda.is_bf16_supported()`` alone also says True on a T4 or V100,
    where bfloat16 is only emulated (slowly, and some kernels refuse it), so
    ``--dtype auto`` would never fall back to float16 where it should.
    """
    try:
        return bool(torch.cuda.is_bf16_supported(including_emulation=False))
    except TypeError:  # torch < 2.4: no emulation check, so ask for the capability itself
        return bool(torch.cuda.get_device_capability()[0] >= 8)


def resolve_dtype(choice: str, device: str, config: dict[str, Any] | None = None) -> str:
    """The dtype name a model is loaded in, for a ``--dtype`` choice on ``device``."""
    if choice not in DTYPES:
        raise ParameterError("dtype", f"{choice!r}: use one of {', '.join(DTYPES)}")
    torch = torch_module()
    if choice == "auto":
        if device != "cuda":
            return "float32"
        saved = saved_dtype(config or {})
        if saved == "bfloat16":
            return "bfloat16" if _bf16_native(torch) else "float16"
        return saved if saved in _HALF else "float32"
    # An explicit choice is refused only where bfloat16 cannot run at all (not even emulated).
    bf16_ok = device != "cuda" or bool(torch.cuda.is_bf16_supported())
    if choice == "bfloat16" and not bf16_ok:
        raise DeviceUnavailable(
            f"{{bfloat16}}: this GPU ({torch.cuda.get_device_name()}) has no bfloat16 "
            "support; use {float16} or float32",
            refs={"bfloat16": Ref("dtype", "bfloat16"), "float16": Ref("dtype", "float16")},
        )
    return choice


def torch_dtype(name: str) -> Any:
    """The ``torch.dtype`` of a dtype name (``float32``, ``bfloat16``, ``float16``)."""
    return getattr(torch_module(), name)


def device_name(device: str) -> str:
    """A human name of the device: the GPU's name, or the CPU's architecture."""
    if device == "cuda":
        torch = torch_module()
        return str(torch.cuda.get_device_name())
    return platform.processor() or platform.machine() or "cpu"


def library_versions() -> dict[str, str | None]:
    """Versions of everything that decides a generation (None when not installed)."""
    from importlib import metadata

    from evalkit._version import __version__

    versions: dict[str, str | None] = {
        "python": platform.python_version(),
        "evalkit": __version__,
    }
    for package in ("torch", "transformers", "peft", "tokenizers", "safetensors", "accelerate"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def cuda_version() -> str | None:
    """The CUDA version torch was built with (None for a CPU build)."""
    version = torch_module().version.cuda
    return str(version) if version is not None else None


def hub_offline_environment() -> dict[str, str]:
    """The environment of a child process: this one's, with the Hub switched off."""
    environment = dict(os.environ)
    environment["HF_HUB_OFFLINE"] = "1"
    environment["TRANSFORMERS_OFFLINE"] = "1"
    return environment


def python_executable() -> str:
    """The interpreter that runs this process (a child runs the same evalkit)."""
    return sys.executable
