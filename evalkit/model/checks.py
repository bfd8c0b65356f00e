"""Checks of a model folder that name the file and key at fault, before or after a load.

transformers and PEFT fail on a damaged file, an architecture they do not
know or a quantized checkpoint this machine cannot run with their own
words (a deserialising error, "does not recognize this architecture", an
install hint that is wrong on a CPU machine); these checks say which file or
``config.json`` key is at fault and what to do instead.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evalkit.errors import CorruptWeights, EvalkitError, ModelLoadError


def damaged_weights(files: list[Path], repair: str | None = None) -> EvalkitError | None:
    """The error of the first safetensors file whose header does not hold together, if any.

    Read (without torch) only once a load has failed, to name the file at
    fault - a truncated download, a half-written save - instead of the
    library's words. ``repair`` replaces the fix the reader suggests.
    """
    from evalkit.errors import UnreadableFile
    from evalkit.provenance.safetensors_file import read_header

    for path in files:
        if path.suffix != ".safetensors" or not path.is_file():
            continue
        try:
            read_header(path)
        except CorruptWeights as error:
            if "unsupported dtype" in error.message:
                continue  # a format the card's reader does not know (F4, ...), not damage
            if repair is None:
                return error
            return CorruptWeights(f"{error.message.rsplit('; ', 1)[0]}; {repair}")
        except UnreadableFile as error:
            return error
    return None


def check_architecture(config: dict[str, Any], base: Path, transformers: Any) -> None:
    """Refuse a config transformers has no causal LM for, naming its key.

    transformers' own words for these ("does not recognize this
    architecture", "Unrecognized configuration class ...") name neither the
    file nor a way out. A model of custom code (``auto_map``) never gets
    here: :func:`evalkit.provenance.artifacts.refuse_custom_code` refuses its
    folder first, since evalkit never runs a folder's code.
    """
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    source = base / "config.json"
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise ModelLoadError(
            f"{source}: has no 'model_type'; transformers needs it to pick the architecture "
            "(save the model again with save_pretrained)"
        )
    if model_type in CONFIG_MAPPING_NAMES and model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return
    if model_type not in CONFIG_MAPPING_NAMES:
        raise ModelLoadError(
            f"{source}: model_type {model_type!r} is not an architecture transformers "
            f"{transformers.__version__} knows; upgrade transformers, or fix 'model_type'"
        )
    raise ModelLoadError(
        f"{source}: model_type {model_type!r} has no causal-LM (text generation) model in "
        "transformers; pass a decoder model folder"
    )


def check_quantization(config: dict[str, Any], base: Path, device: str) -> bool:
    """Whether the base is stored quantized; refuse one this machine cannot load.

    A bitsandbytes checkpoint (``quantization_config`` in config.json, 4- or
    8-bit) needs the bitsandbytes package and a CUDA GPU; without them
    transformers fails with an install hint that is wrong on a CPU machine.
    """
    import importlib.util

    quantization = config.get("quantization_config")
    if not isinstance(quantization, dict):
        return False
    method = quantization.get("quant_method")
    if method != "bitsandbytes":
        return True
    bits = "8-bit" if quantization.get("load_in_8bit") else "4-bit"
    source = base / "config.json"
    if device != "cuda":
        raise ModelLoadError(
            f"{source}: 'quantization_config' stores the weights in bitsandbytes {bits}, which "
            "loads on a CUDA GPU only; use {device} on a GPU, or pass the unquantized "
            "(16-bit) base folder",
            refs={"device": "cuda"},
        )
    if importlib.util.find_spec("bitsandbytes") is None:
        raise ModelLoadError(
            f"{source}: 'quantization_config' stores the weights in bitsandbytes {bits}; "
            "install it (pip install bitsandbytes), or pass the unquantized (16-bit) base folder"
        )
    return True
