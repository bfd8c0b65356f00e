"""Models: the only package that imports torch, transformers models and peft.

Everything here loads local folders only (offline) and imports the model
libraries lazily, inside the functions that need them, so ``evalkit
--help`` stays fast and the base install stays light (``evalkit[hf]`` adds
torch, transformers and peft).

Loading, for every command that runs a model (``generate``,
``reload-check``, ``smoke``):

* :func:`load_model` - base (+ a PEFT adapter, in eval mode) and tokenizer;
* :func:`load_base` / :func:`attach_adapter` - the two steps apart (a
  training step attaches with ``trainable=True``);
* :func:`resolve_device` / :func:`resolve_dtype` - ``auto|cpu|cuda`` and
  ``auto|float32|bfloat16|float16`` with the rules of ``docs/generate.md``.

Commands: :func:`generate` (greedy predictions, ``run.json`` pins),
:func:`reload_check` (the pinned artifact, reloaded in a fresh process,
gives the same tokens) and :func:`smoke` (a few real training steps, each
phase's peak memory measured beside ``evalkit plan``'s bound, the saved
adapter reloaded in a fresh process).
"""

from __future__ import annotations

from evalkit._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "LoadedModel": "evalkit.model.load",
    "load_model": "evalkit.model.load",
    "load_base": "evalkit.model.load",
    "attach_adapter": "evalkit.model.load",
    "resolve_device": "evalkit.model.runtime",
    "resolve_dtype": "evalkit.model.runtime",
    "generate": "evalkit.model.generate",
    "GenerateResult": "evalkit.model.generate",
    "reload_check": "evalkit.model.reload",
    "RunRecord": "evalkit.records._run",
    "ReloadReport": "evalkit.records._run",
    "smoke": "evalkit.model.smoke",
    "SmokeReport": "evalkit.records._smoke",
}

__getattr__, __dir__, __all__ = lazy_exports(__name__, _EXPORTS)
