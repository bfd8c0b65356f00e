"""Legacy ``adapter_model.bin`` (torch.save's zip format) read without torch.

peft before 0.7 saved adapters with ``torch.save`` unless told otherwise,
so older adapters have only this file. Its ``data.pkl`` is a pickle that
rebuilds each tensor from a storage record (``data/<key>`` in the zip), an
offset, a size and strides. It is unpickled here with a restricted
unpickler that knows only those few constructors and refuses any other
global, so a hostile file cannot run code; each tensor's bytes are copied
into one buffer laid out like a safetensors data section, and the card reads
it as it reads a safetensors file (same canonical hash for the same tensors).
"""

from __future__ import annotations

import contextlib
import math
import pickle
import zipfile
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalkit.errors import CorruptWeights, UnreadableFile
from evalkit.provenance.safetensors_file import DTYPE_BYTES, SafetensorsHeader, TensorInfo

_STORAGE_DTYPES = {
    "FloatStorage": "F32", "HalfStorage": "F16", "BFloat16Storage": "BF16",
    "DoubleStorage": "F64", "LongStorage": "I64", "IntStorage": "I32",
    "ShortStorage": "I16", "CharStorage": "I8", "ByteStorage": "U8", "BoolStorage": "BOOL",
}  # fmt: skip
_RESAVE = "load it with peft and save it again with safe_serialization=True"


@dataclass(frozen=True)
class _StorageType:
    dtype: str


@dataclass(frozen=True)
class _Storage:
    key: str
    dtype: str


@dataclass(frozen=True)
class _Tensor:
    storage: _Storage
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]


def _rebuild_tensor(storage: _Storage, offset: int, size: Any, stride: Any, *_: Any) -> _Tensor:
    return _Tensor(storage, int(offset), tuple(size), tuple(stride))


def _rebuild_parameter(data: _Tensor, *_: Any) -> _Tensor:
    return data


class _Unpickler(pickle.Unpickler):
    """Knows the constructors of a torch state dict and nothing else."""

    def __init__(self, handle: Any, path: Path) -> None:
        super().__init__(handle)
        self.path = path

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if module == "torch._utils" and name == "_rebuild_tensor_v2":
            return _rebuild_tensor
        if module == "torch._utils" and name == "_rebuild_parameter":
            return _rebuild_parameter
        if module == "torch" and name in _STORAGE_DTYPES:
            return _StorageType(_STORAGE_DTYPES[name])
        raise CorruptWeights(
            f"{self.path}: refers to {module}.{name}, which a tensor state dict does not "
            f"need; the card reads only plain tensors ({_RESAVE})"
        )

    def persistent_load(self, pid: Any) -> _Storage:
        if not (isinstance(pid, tuple) and len(pid) >= 3 and pid[0] == "storage"):
            raise CorruptWeights(f"{self.path}: unknown storage record {pid!r} ({_RESAVE})")
        kind = pid[1]
        if not isinstance(kind, _StorageType):
            raise CorruptWeights(f"{self.path}: storage of unknown type {kind!r} ({_RESAVE})")
        return _Storage(str(pid[2]), kind.dtype)


def _contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride), strict=True):
        if size > 1 and step != expected:
            return False
        expected *= size
    return True


def read_legacy_weights(
    path: Path,
) -> tuple[SafetensorsHeader, contextlib.AbstractContextManager[memoryview]]:
    """A header and a byte view of a torch.save'd state dict, as for a safetensors file."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as error:
        raise CorruptWeights(
            f"{path}: not a zip-format torch file (saved by torch < 1.6, or damaged); {_RESAVE}"
        ) from error
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
    with archive:
        names = archive.namelist()
        pickles = [name for name in names if name.endswith("/data.pkl")]
        if len(pickles) != 1:
            raise CorruptWeights(f"{path}: no single data.pkl in the archive ({_RESAVE})")
        prefix = pickles[0].removesuffix("data.pkl")
        if f"{prefix}byteorder" in names and archive.read(f"{prefix}byteorder") != b"little":
            raise CorruptWeights(f"{path}: big-endian tensors are not supported ({_RESAVE})")
        try:
            with archive.open(pickles[0]) as handle:
                state = _Unpickler(handle, path).load()
        except (pickle.UnpicklingError, EOFError, AttributeError, TypeError) as error:
            raise CorruptWeights(f"{path}: the pickle is damaged ({error}); {_RESAVE}") from error
        if not isinstance(state, dict) or not all(
            isinstance(value, _Tensor) for value in state.values()
        ):
            raise CorruptWeights(f"{path}: not a state dict of tensors ({_RESAVE})")
        storages: dict[str, bytes] = {}
        buffer = bytearray()
        tensors: dict[str, TensorInfo] = {}
        for name in sorted(state):
            tensor = state[name]
            if not _contiguous(tensor.shape, tensor.stride):
                raise CorruptWeights(f"{path}: tensor {name!r} is not contiguous ({_RESAVE})")
            key = tensor.storage.key
            if key not in storages:
                try:
                    storages[key] = archive.read(f"{prefix}data/{key}")
                except KeyError as error:
                    raise CorruptWeights(f"{path}: storage {key} is missing ({_RESAVE})") from error
            width = DTYPE_BYTES[tensor.storage.dtype]
            start = tensor.offset * width
            length = math.prod(tensor.shape) * width
            data = storages[key][start : start + length]
            if len(data) != length:
                raise CorruptWeights(f"{path}: tensor {name!r} runs past its storage ({_RESAVE})")
            begin = len(buffer)
            buffer += data
            tensors[name] = TensorInfo(name, tensor.storage.dtype, tensor.shape, begin, len(buffer))
    header = SafetensorsHeader(path, 0, tensors, {})
    return header, contextlib.nullcontext(memoryview(bytes(buffer)))
