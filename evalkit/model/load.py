"""Loading a model for evaluation: base alone, base + PEFT adapter, or a merged folder.

The loading API the model commands share (``generate``, ``reload-check``,
and ``smoke``)::

    from evalkit.model import load_model
    loaded = load_model("base/", adapter="adapter/", device="auto", dtype="auto")
    loaded.model       # in eval mode (dropout off), on loaded.device, in loaded.dtype
    loaded.tokenizer   # from --tokenizer, else the adapter folder if it has one, else the base

A merged folder is a model folder: ``load_model("merged/")``. Lower-level
pieces for a training step: :func:`load_base` (a transformers model, on a
device, in a dtype) and :func:`attach_adapter` (a saved adapter through
PEFT, ``trainable=True`` to train it further). Everything is local and
offline; every failure of the libraries becomes one line naming the folder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalkit.errors import AdapterMismatch, ModelLoadError, OutOfDeviceMemory
from evalkit.model import runtime
from evalkit.model.checks import check_architecture, check_quantization, damaged_weights
from evalkit.model.folders import (
    ADAPTER_CONFIG,
    ADAPTER_WEIGHTS,
    check_adapter_folder,
    check_model_folder,
    has_tokenizer,
    read_json,
    weight_files,
)

_SIZE_MISMATCH = re.compile(
    r"size mismatch for (?P<name>\S+?): copying a param with shape (?:torch\.Size\()?"
    r"(?P<saved>\[[^\]]*\])\)? from checkpoint, the shape in current model is "
    r"(?:torch\.Size\()?(?P<model>\[[^\]]*\])"
)


@dataclass
class LoadedModel:
    """A model ready to generate, and what it was loaded from."""

    model: Any
    """A transformers model, or a ``peft.PeftModel`` around one; in eval mode."""
    tokenizer: Any
    """The transformers tokenizer its prompts are rendered with."""
    base: Path
    """The base (or merged) model folder."""
    adapter: Path | None
    """The adapter folder, or None for the base alone or a merged folder."""
    tokenizer_folder: Path
    """The folder the tokenizer was loaded from."""
    device: str
    """``cpu`` or ``cuda``."""
    dtype: str
    """The dtype the weights were loaded in (``float32``, ``bfloat16``, ``float16``)."""
    config: dict[str, Any]
    """The base folder's ``config.json``."""
    generation_config: dict[str, Any] = field(default_factory=dict)
    """The model's own ``generation_config.json`` (what it would decode with by default)."""

    @property
    def kind(self) -> str:
        """``base+adapter`` or ``base`` (a merged folder loads as a base)."""
        return "base+adapter" if self.adapter is not None else "base"


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0][:240] if text else type(error).__name__


def _dtype_keyword(transformers: Any) -> str:
    """``dtype`` since transformers 4.56; ``torch_dtype`` before."""
    major, minor = (int(part) for part in transformers.__version__.split(".")[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


def _refuse_missing_weights(base: Path, info: dict[str, Any]) -> None:
    """Refuse weights that do not cover the architecture config.json describes.

    transformers initialises every weight the files lack at random, with a
    warning, and the model then generates: a config of another model, or a
    checkpoint without its output head, would be scored as if it were the
    base.
    """
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        raise ModelLoadError(
            f"{base}: its weight files lack {len(missing)} of the weights its config.json "
            f"describes (first: {missing[0]}), which transformers would fill at random; the "
            "config and the weights are of different models: save the model again"
        )


def load_base(folder: Path | str, *, device: str = "auto", dtype: str = "auto") -> LoadedModel:
    """A causal LM from a local model (or merged) folder, on ``device`` in ``dtype``.

    ``device`` and ``dtype`` take the ``--device``/``--dtype`` choices
    (``auto`` resolved as :mod:`evalkit.model.runtime` says). The tokenizer is
    the folder's own (None when it has none); :func:`load_model` picks one.
    """
    base = Path(folder)
    config = check_model_folder(base)
    resolved_device = runtime.resolve_device(device)
    resolved_dtype = runtime.resolve_dtype(dtype, resolved_device, config)
    transformers = runtime.transformers_module()
    check_architecture(config, base, transformers)
    quantized = check_quantization(config, base, resolved_device)
    keyword = _dtype_keyword(transformers)
    options = {
        keyword: runtime.torch_dtype(resolved_dtype),
        "local_files_only": True,
        "trust_remote_code": False,
    }
    try:
        with runtime.quiet_warnings():
            model, info = transformers.AutoModelForCausalLM.from_pretrained(
                str(base), output_loading_info=True, **options
            )
            if not quantized:  # a quantized model is placed on the GPU as it loads
                model.to(resolved_device)
    except Exception as error:  # the library raises many types; the user needs one line
        if isinstance(error, runtime.torch_module().cuda.OutOfMemoryError):
            raise OutOfDeviceMemory(
                f"{base}: {resolved_device} ran out of memory loading this model in "
                f"{resolved_dtype} ({_first_line(error)})"
            ) from None
        damaged = damaged_weights(
            weight_files(base),
            "the file is damaged or incomplete: download or save the model again",
        )
        if damaged is not None:
            raise damaged from None
        raise ModelLoadError(
            f"{base}: transformers cannot load this model ({type(error).__name__}: "
            f"{_first_line(error)})"
        ) from None
    _refuse_missing_weights(base, info)
    model.eval()
    generation_file = base / "generation_config.json"
    generation = read_json(generation_file) if generation_file.is_file() else {}
    return LoadedModel(
        model=model,
        tokenizer=None,
        base=base,
        adapter=None,
        tokenizer_folder=base,
        device=resolved_device,
        dtype=resolved_dtype,
        config=config,
        generation_config=generation,
    )


def _mismatch_message(adapter: Path, base: Path, error: BaseException) -> str:
    found = _SIZE_MISMATCH.search(str(error))
    if found is None:
        return (
            f"{adapter}: PEFT cannot load this adapter on {base} ({type(error).__name__}: "
            f"{_first_line(error)})"
        )
    name = found["name"].removeprefix("base_model.model.").replace(".default.", ".")
    if _rank_differs(name, found["saved"], found["model"]):
        return (
            f"{adapter / ADAPTER_CONFIG}: its rank does not match its weights: {name} is "
            f"{found['saved']} in {ADAPTER_WEIGHTS[0]} but {found['model']} by the config's "
            "'r'; the adapter files do not belong together: save the adapter again"
        )
    return (
        f"{adapter}: does not fit the base {base}: {name} is {found['saved']} in the adapter "
        f"but {found['model']} on this base; the adapter was trained on another model"
    )


def _rank_differs(name: str, saved: str, expected: str) -> bool:
    """Whether a LoRA tensor's shapes differ in the rank alone (A is r x in, B is out x r).

    The base's widths then fit, and what does not is adapter_config.json's
    ``r`` beside the saved weights: not another base.
    """
    try:
        saved_shape = [int(part) for part in saved.strip("[]").split(",")]
        expected_shape = [int(part) for part in expected.strip("[]").split(",")]
    except ValueError:
        return False
    if len(saved_shape) != 2 or len(expected_shape) != 2:
        return False
    rank = 0 if ".lora_A." in name else 1 if ".lora_B." in name else None
    if rank is None:
        return False
    width = 1 - rank
    return saved_shape[width] == expected_shape[width] and saved_shape[rank] != expected_shape[rank]


def _adapter_keys(adapter: Path) -> set[str]:
    """The tensor names an adapter file holds (read from its header, no tensors)."""
    weights = adapter / ADAPTER_WEIGHTS[0]
    if not weights.is_file():
        return set()  # a .bin adapter: PEFT's own checks are all there is
    from safetensors import safe_open

    with safe_open(str(weights), framework="pt") as handle:
        return set(handle.keys())


def _check_every_tensor_applied(model: Any, adapter: Path, base: Path) -> None:
    """Refuse an adapter whose tensors found no module on the base.

    PEFT loads such an adapter with a warning and drops the tensors, so a
    model runs that is partly the base alone (an adapter for 32 layers on a
    16-layer base, other module names): the silent failure servers show too.
    """
    from peft.utils import get_peft_model_state_dict

    saved = _adapter_keys(adapter)
    if not saved:
        return
    with runtime.quiet_warnings():
        loaded = set(get_peft_model_state_dict(model).keys())
    dropped = sorted(saved - loaded)
    missing = sorted(loaded - saved)
    if dropped:
        name = dropped[0].removeprefix("base_model.model.")
        raise AdapterMismatch(
            f"{adapter}: does not fit the base {base}: {len(dropped)} of its {len(saved)} "
            f"tensors adapt modules the base does not have (first: {name}); the adapter was "
            "trained on another model"
        )
    if missing:
        name = missing[0].removeprefix("base_model.model.")
        raise AdapterMismatch(
            f"{adapter}: adapter_config.json targets modules its weights do not cover on the "
            f"base {base} (first: {name}); the adapter files do not belong together"
        )


def attach_adapter(loaded: LoadedModel, folder: Path | str, *, trainable: bool = False) -> None:
    """Put the PEFT adapter saved in ``folder`` on ``loaded.model`` (in place).

    ``trainable=False`` (evaluation) leaves every module in eval mode, so
    LoRA dropout is off: ``is_trainable=True`` with the model left in
    training mode is how a reload gives other outputs (peft#2438). An
    adapter of another base is one line naming the first tensor that does
    not fit, never a torch traceback.
    """
    adapter = Path(folder)
    adapter_config = check_adapter_folder(adapter)
    peft = runtime.peft_module()
    kind = adapter_config.get("peft_type")
    known = {member.value for member in peft.PeftType}
    if kind not in known:
        raise ModelLoadError(
            f"{adapter / ADAPTER_CONFIG}: 'peft_type' is {kind!r}, not a method peft "
            f"{peft.__version__} knows; fix the key, or upgrade peft"
        )
    try:
        with runtime.quiet_warnings():
            model = peft.PeftModel.from_pretrained(
                loaded.model, str(adapter), is_trainable=trainable
            )
            model.to(loaded.device)
    except Exception as error:
        # torch's OutOfMemoryError is a RuntimeError: not a sign of another base.
        if isinstance(error, runtime.torch_module().cuda.OutOfMemoryError):
            raise OutOfDeviceMemory(
                f"{adapter}: {loaded.device} ran out of memory putting this adapter on the base "
                f"({_first_line(error)}); free the GPU or use a larger one"
            ) from None
        damaged = damaged_weights([adapter / name for name in ADAPTER_WEIGHTS])
        if damaged is not None:
            raise damaged from None
        if isinstance(error, RuntimeError | ValueError | KeyError):
            raise AdapterMismatch(_mismatch_message(adapter, loaded.base, error)) from None
        raise ModelLoadError(
            f"{adapter}: PEFT cannot load this adapter ({type(error).__name__}: "
            f"{_first_line(error)})"
        ) from None
    _check_every_tensor_applied(model, adapter, loaded.base)
    if trainable:
        model.train()
    else:
        model.eval()
    loaded.model = model
    loaded.adapter = adapter


def choose_tokenizer_folder(base: Path, adapter: Path | None, tokenizer: Path | None) -> Path:
    """``tokenizer`` if given, else the adapter folder when it holds one, else the base."""
    if tokenizer is not None:
        return tokenizer
    if adapter is not None and has_tokenizer(adapter):
        return adapter
    return base


def _check_vocabulary(loaded: LoadedModel) -> None:
    """A tokenizer with more tokens than the model has embedding rows is refused.

    Its extra ids would index past the embedding matrix (an IndexError deep in
    torch on the first prompt that uses one).
    """
    rows = int(loaded.model.get_input_embeddings().weight.shape[0])
    tokens = len(loaded.tokenizer)
    if tokens > rows:
        raise ModelLoadError(
            f"{loaded.tokenizer_folder}: the tokenizer has {tokens} tokens but the model in "
            f"{loaded.base} has {rows} embedding rows; pass the tokenizer it was trained "
            "with ({tokenizer})",
            refs=["tokenizer"],
        )


def load_model(
    base: Path | str,
    adapter: Path | str | None = None,
    *,
    tokenizer: Path | str | None = None,
    device: str = "auto",
    dtype: str = "auto",
    trainable: bool = False,
) -> LoadedModel:
    """The model and tokenizer for generation: ``base`` (+ ``adapter`` through PEFT).

    Folders only, offline. The tokenizer comes from ``tokenizer``, else from
    the adapter folder if it holds one (a fine-tune that added tokens saves
    its tokenizer there), else from the base folder.
    """
    from evalkit.tokens.load import load_tokenizer

    base_path = Path(base)
    adapter_path = Path(adapter) if adapter is not None else None
    # Every folder and the device checked before the slow part, so a typo costs nothing,
    # and the architecture before the tokenizer loads (which may read config.json too).
    config = check_model_folder(base_path)
    if adapter_path is not None:
        check_adapter_folder(adapter_path)
    device = runtime.resolve_device(device)
    check_architecture(config, base_path, runtime.transformers_module())
    tokenizer_folder = choose_tokenizer_folder(
        base_path, adapter_path, Path(tokenizer) if tokenizer is not None else None
    )
    if tokenizer is None and not has_tokenizer(tokenizer_folder):
        raise ModelLoadError(
            f"{tokenizer_folder}: holds no tokenizer files (tokenizer.json, "
            "tokenizer_config.json); pass {tokenizer}, the tokenizer the model was trained with",
            refs={"tokenizer": "DIR"},
        )
    loaded_tokenizer = load_tokenizer(tokenizer_folder)
    loaded = load_base(base_path, device=device, dtype=dtype)
    loaded.tokenizer = loaded_tokenizer
    loaded.tokenizer_folder = tokenizer_folder
    if adapter_path is not None:
        attach_adapter(loaded, adapter_path, trainable=trainable)
    _check_vocabulary(loaded)
    return loaded
