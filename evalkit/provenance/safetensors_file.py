"""Reading a safetensors file without torch: the header, tensor bytes, a canonical hash.

The format (https://huggingface.co/docs/safetensors) is an 8-byte
little-endian header length N, N bytes of JSON mapping each tensor name to
``{dtype, shape, data_offsets: [begin, end]}`` (plus an optional
``__metadata__`` of strings), then the tensors' bytes, offsets counted from the
end of the header. It is read here directly, through ``mmap``, rather than
with the ``safetensors`` package's numpy API: numpy has no bfloat16, the dtype
most adapters are saved in, and the card needs only the raw bytes (to hash
them and to see whether a tensor is all zeros), never a converted array. The
checks are the ones ``safetensors`` itself applies when it loads a file
(header inside the file, offsets contiguous from 0 to the end, each tensor's
byte length equal to its element count times its dtype's size), so a file the
card accepts is one peft can load.
"""

from __future__ import annotations

import hashlib
import math
import mmap
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from evalkit.errors import CorruptWeights, UnreadableFile

# Bytes per element of every dtype safetensors writes; sub-byte float formats
# (F4, F6_*) are not used for adapters and are refused with a clear message.
DTYPE_BYTES: dict[str, int] = {
    "BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1, "F8_E8M0": 1,
    "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
    "I32": 4, "U32": 4, "F32": 4, "C64": 8,
    "I64": 8, "U64": 8, "F64": 8,
}  # fmt: skip
FLOAT_DTYPES = {"F8_E5M2", "F8_E4M3", "F16", "BF16", "F32", "F64"}
# safetensors refuses headers above 100 MB; a larger length is a corrupt file.
MAX_HEADER_BYTES = 100_000_000
ADAPTER_REPAIR = "the file is damaged: save the adapter again (save_pretrained)"


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a safetensors header."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    begin: int
    """Offset of the first byte, from the start of the data section."""
    end: int
    """Offset after the last byte, from the start of the data section."""

    @property
    def numel(self) -> int:
        """Number of elements (1 for a scalar, 0 for an empty tensor)."""
        return math.prod(self.shape)


@dataclass(frozen=True)
class SafetensorsHeader:
    """The parsed header of one file, tensors in name order."""

    path: Path
    data_start: int
    """File offset of the data section (8 + header length)."""
    tensors: dict[str, TensorInfo]
    metadata: dict[str, str]


def _fail(path: Path, what: str) -> CorruptWeights:
    return CorruptWeights(f"{path}: not a valid safetensors file: {what}; {ADAPTER_REPAIR}")


def _tensor(path: Path, name: str, entry: object) -> TensorInfo:
    if not isinstance(entry, dict):
        raise _fail(path, f"header entry {name!r} is not an object")
    dtype, shape, offsets = entry.get("dtype"), entry.get("shape"), entry.get("data_offsets")
    if dtype not in DTYPE_BYTES:
        raise _fail(path, f"tensor {name!r} has unknown or unsupported dtype {dtype!r}")
    if not (isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)):
        raise _fail(path, f"tensor {name!r} has an invalid shape {shape!r}")
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(type(o) is int and o >= 0 for o in offsets)
        and offsets[0] <= offsets[1]
    ):
        raise _fail(path, f"tensor {name!r} has invalid data_offsets {offsets!r}")
    info = TensorInfo(name, str(dtype), tuple(shape), offsets[0], offsets[1])
    if info.end - info.begin != info.numel * DTYPE_BYTES[info.dtype]:
        raise _fail(
            path,
            f"tensor {name!r} has {info.end - info.begin} bytes, but shape {list(shape)} of "
            f"{dtype} needs {info.numel * DTYPE_BYTES[info.dtype]}",
        )
    return info


def _parse(path: Path, size: int, prefix: bytes, read_header: bytes) -> SafetensorsHeader:
    (length,) = struct.unpack("<Q", prefix)
    if length > MAX_HEADER_BYTES or 8 + length > size:
        raise _fail(path, f"the header length {length} does not fit in the {size}-byte file")
    from evalkit.io import DocumentError, parse_json

    try:
        raw = parse_json(read_header, "header")
    except DocumentError as error:
        raise _fail(path, f"the header is not JSON ({error.message})") from error
    if not isinstance(raw, dict):
        raise _fail(path, "the header is not a JSON object")
    metadata = raw.pop("__metadata__", None) or {}
    if not (isinstance(metadata, dict) and all(isinstance(v, str) for v in metadata.values())):
        raise _fail(path, "__metadata__ is not a mapping of strings")
    tensors = {name: _tensor(path, name, entry) for name, entry in sorted(raw.items())}
    position = 0
    for info in sorted(tensors.values(), key=lambda t: (t.begin, t.end)):
        if info.begin != position:
            raise _fail(path, f"tensor {info.name!r} starts at byte {info.begin}, not {position}")
        position = info.end
    if 8 + length + position != size:
        raise _fail(
            path,
            f"the tensors end at byte {8 + length + position}, but the file has {size} bytes "
            "(truncated or with trailing data)",
        )
    return SafetensorsHeader(path, 8 + length, tensors, dict(metadata))


def read_header(path: Path) -> SafetensorsHeader:
    """Parse and check a file's header (reads only the first 8 + N bytes)."""
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise _fail(path, f"the file has {size} bytes, fewer than the 8 of a header length")
            (length,) = struct.unpack("<Q", prefix)
            header = handle.read(min(length, MAX_HEADER_BYTES + 1))
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror or error}") from error
    return _parse(path, size, prefix, header)


@contextmanager
def mapped(path: Path) -> Iterator[memoryview]:
    """The file's bytes, memory-mapped read-only (no copy, whatever the size)."""
    try:
        with path.open("rb") as handle:
            if path.stat().st_size == 0:
                yield memoryview(b"")
                return
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapping:
                view = memoryview(mapping)
                try:
                    yield view
                finally:
                    view.release()
    except OSError as error:
        raise UnreadableFile(f"{path}: cannot read: {error.strerror or error}") from error


def tensor_bytes(view: memoryview, header: SafetensorsHeader, info: TensorInfo) -> memoryview:
    """The bytes of one tensor, as a view into the mapped file."""
    return view[header.data_start + info.begin : header.data_start + info.end]


def canonical_sha256(view: memoryview, header: SafetensorsHeader) -> str:
    """sha256 over the tensors in name order: each name, dtype, shape, byte length and bytes.

    Unlike the file's own hash it does not depend on the header's layout,
    padding, metadata or the order the tensors were written in, so the same
    weights saved twice hash the same, and any changed value changes it.
    """
    digest = hashlib.sha256()
    for name in sorted(header.tensors):
        info = header.tensors[name]
        digest.update(name.encode("utf-8") + b"\0" + info.dtype.encode("ascii") + b"\0")
        digest.update(",".join(map(str, info.shape)).encode("ascii") + b"\0")
        digest.update(struct.pack("<Q", info.end - info.begin))
        digest.update(tensor_bytes(view, header, info))
    return digest.hexdigest()


_CAST: dict[int, Literal["B", "H", "I", "Q"]] = {1: "B", 2: "H", 4: "I", 8: "Q"}
_ZERO_CHUNK = bytes(1 << 20)


def all_zero(view: memoryview, header: SafetensorsHeader, info: TensorInfo) -> bool:
    """Whether every element is zero (for floats, +0.0 or -0.0).

    Whole megabytes are compared with zeros (a memcmp), so an untrained
    half costs a pass at memory speed; a trained one stops at its first
    element whose magnitude bits are set, without numpy.
    """
    data = tensor_bytes(view, header, info)
    width = DTYPE_BYTES[info.dtype]
    sign_free = (1 << (8 * width - 1)) - 1 if info.dtype in FLOAT_DTYPES else (1 << 8 * width) - 1
    step = len(_ZERO_CHUNK) - len(_ZERO_CHUNK) % width
    for start in range(0, len(data), step):
        chunk = data[start : start + step]
        if chunk == _ZERO_CHUNK[: len(chunk)]:
            continue
        if any(value & sign_free for value in chunk.cast(_CAST[width])):
            return False
    return True
