"""Legacy ``adapter_model.bin`` (torch.save's zip format) read without torch.

peft before 0.7 saved adapters with ``torch.save`` unless told otherwise,
so older adapters have only this file. Its ``data.pkl`` is a pickle that
rebuilds each tensor from a storage record (``data/<key>`` in the zip), an
offset, a size and strides. It is unpickled here with a restricted
unpickler that knows only those few constructors and refuses any other
global, so a hostile file cannot run code; each tensor's bytes are copied
into one buffer laid out like a safetensors data section, and the card reads
it as it reads a safetensors file (same canonical hash for the same tensors).

Before any tensor byte is read, every record's size as the zip's directory
declares it is checked against the shapes the pickle declares (torch.save
writes each storage record as exactly its elements times their width, and
stores it uncompressed), and all of them together against the file's own
size: a few-MB file whose records inflate to gigabytes (a zip bomb) is
refused from its directory alone. The same check runs before transformers
or PEFT load a ``*.bin`` (:func:`check_archive`).
"""

from __future__ import annotations

import contextlib
import math
import pickle
import zipfile
import zlib
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
# A state dict's pickle takes about 150 bytes a tensor; 16 MiB is 100k tensors.
MAX_PICKLE_BYTES = 16 << 20
# torch.save stores records uncompressed, so the tensors fit in the file; deflate
# can inflate data a thousandfold. Twice the file is room for a repacked archive.
MAX_EXPANSION = 2


@dataclass(frozen=True)
class _StorageType:
    dtype: str


@dataclass(frozen=True)
class _Storage:
    key: str
    dtype: str
    numel: Any
    """Its elements, as the pickle declares them (checked to be a count before use)."""


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
        return _Storage(str(pid[2]), kind.dtype, pid[4] if len(pid) > 4 else None)


def _contiguous(shape: tuple[int, ...], stride: tuple[int, ...]) -> bool:
    expected = 1
    for size, step in zip(reversed(shape), reversed(stride), strict=True):
        if size > 1 and step != expected:
            return False
        expected *= size
    return True


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@dataclass(frozen=True)
class _Archive:
    """What the directory and pickle of a torch zip declare, checked; no tensor read."""

    prefix: str
    state: dict[str, _Tensor]
    records: dict[str, zipfile.ZipInfo]
    """Storage key -> its record, each of the size its storage declares."""


def _load_state(archive: zipfile.ZipFile, path: Path) -> tuple[str, Any]:
    names = archive.namelist()
    pickles = [name for name in names if name.endswith("/data.pkl")]
    if len(pickles) != 1:
        raise CorruptWeights(f"{path}: no single data.pkl in the archive ({_RESAVE})")
    prefix = pickles[0].removesuffix("data.pkl")
    byteorder = f"{prefix}byteorder"
    if byteorder in names and (
        archive.getinfo(byteorder).file_size > 16 or archive.read(byteorder) != b"little"
    ):
        raise CorruptWeights(f"{path}: big-endian tensors are not supported ({_RESAVE})")
    if archive.getinfo(pickles[0]).file_size > MAX_PICKLE_BYTES:
        raise CorruptWeights(
            f"{path}: its data.pkl declares {archive.getinfo(pickles[0]).file_size} bytes, more "
            f"than a state dict's pickle takes ({MAX_PICKLE_BYTES}); {_RESAVE}"
        )
    try:
        with archive.open(pickles[0]) as handle:
            return prefix, _Unpickler(handle, path).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, TypeError, IndexError) as error:
        raise CorruptWeights(f"{path}: the pickle is damaged ({error}); {_RESAVE}") from error


def _checked(archive: zipfile.ZipFile, path: Path) -> _Archive:
    """The archive's state dict with each record's declared size checked against it."""
    prefix, state = _load_state(archive, path)
    if not isinstance(state, dict) or not all(
        isinstance(name, str) and isinstance(value, _Tensor) for name, value in state.items()
    ):
        raise CorruptWeights(f"{path}: not a state dict of tensors ({_RESAVE})")
    records: dict[str, zipfile.ZipInfo] = {}
    for name in sorted(state):
        tensor = state[name]
        storage = tensor.storage
        if not (
            all(_count(size) for size in tensor.shape)
            and all(_count(step) for step in tensor.stride)
            and len(tensor.shape) == len(tensor.stride)
            and _count(tensor.offset)
            and _count(storage.numel)
        ):
            raise CorruptWeights(f"{path}: tensor {name!r} has no valid shape ({_RESAVE})")
        if not _contiguous(tensor.shape, tensor.stride):
            raise CorruptWeights(f"{path}: tensor {name!r} is not contiguous ({_RESAVE})")
        if tensor.offset + math.prod(tensor.shape) > storage.numel:
            raise CorruptWeights(f"{path}: tensor {name!r} runs past its storage ({_RESAVE})")
        try:
            record = archive.getinfo(f"{prefix}data/{storage.key}")
        except KeyError as error:
            raise CorruptWeights(f"{path}: storage {storage.key} is missing ({_RESAVE})") from error
        declared = storage.numel * DTYPE_BYTES[storage.dtype]
        if record.file_size != declared:
            raise CorruptWeights(
                f"{path}: record data/{storage.key} declares {record.file_size} bytes but its "
                f"tensors' shapes make {declared}; the file is damaged or a zip bomb ({_RESAVE})"
            )
        records[storage.key] = record
    total = sum(record.file_size for record in records.values())
    size = path.stat().st_size
    if total > MAX_EXPANSION * size + (1 << 20):
        raise CorruptWeights(
            f"{path}: its tensors declare {total} bytes, {total // max(size, 1)} times the "
            f"file's {size}; torch.save stores tensors uncompressed, so this is a zip bomb or "
            f"damage ({_RESAVE})"
        )
    return _Archive(prefix, state, records)


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except zipfile.BadZipFile as error:
        raise CorruptWeights(
            f"{path}: not a zip-format torch file (saved by torch < 1.6, or damaged); {_RESAVE}"
        ) from error
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error


def check_archive(path: Path) -> None:
    """Refuse a torch zip file whose records' declared sizes do not fit its tensors' shapes.

    Reads only the zip's directory and its ``data.pkl`` (with the restricted
    unpickler): never a tensor record, so a zip bomb costs nothing.
    """
    with _open(path) as archive:
        _checked(archive, path)


def read_legacy_weights(
    path: Path,
) -> tuple[SafetensorsHeader, contextlib.AbstractContextManager[memoryview]]:
    """A header and a byte view of a torch.save'd state dict, as for a safetensors file.

    Each storage record is read once, after :func:`check_archive`'s checks;
    tensors that share a storage point into the same bytes.
    """
    with _open(path) as archive:
        checked = _checked(archive, path)
        buffer = bytearray()
        starts: dict[str, int] = {}
        for key in sorted(checked.records):
            record = checked.records[key]
            try:
                data = archive.read(record)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
                raise CorruptWeights(
                    f"{path}: record data/{key} is damaged ({error}); {_RESAVE}"
                ) from error
            except OSError as error:
                raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
            if len(data) != record.file_size:
                raise CorruptWeights(f"{path}: record data/{key} is truncated ({_RESAVE})")
            starts[key] = len(buffer)
            buffer += data
    tensors: dict[str, TensorInfo] = {}
    for name in sorted(checked.state):
        tensor = checked.state[name]
        width = DTYPE_BYTES[tensor.storage.dtype]
        begin = starts[tensor.storage.key] + tensor.offset * width
        end = begin + math.prod(tensor.shape) * width
        tensors[name] = TensorInfo(name, tensor.storage.dtype, tensor.shape, begin, end)
    header = SafetensorsHeader(path, 0, tensors, {})
    return header, contextlib.nullcontext(memoryview(buffer))
