"""A Trainer checkpoint's pickled state files, read without torch and without running their code.

transformers' ``Trainer`` writes ``optimizer.pt``, ``scheduler.pt``,
``rng_state*.pth`` and ``training_args.bin`` with ``torch.save``: a zip
whose ``data.pkl`` rebuilds the value. Unlike a weights file these hold more
than tensors: lists, numbers, numpy arrays (the RNG state), and in
``training_args.bin`` a whole ``TrainingArguments`` object with its enums.
Unpickling them the ordinary way imports and calls whatever the pickle names.

Here the pickle is read with a restricted unpickler that imports nothing:
a tensor becomes a reference to its storage record (as for
``adapter_model.bin``, :mod:`evalkit.provenance.torch_pickle`), and every
other global the pickle names becomes a :class:`Recorded` — an inert object
that keeps the name, the arguments and the state the pickle would have given
the real one, so that ``training_args.bin``'s fields can be read as plain
values. No code of the file's choosing runs, whatever it names. Reading is
bounded: the pickle's declared size (:data:`MAX_PICKLE_BYTES`), and only
tensors of at most :data:`MAX_SCALAR_ELEMENTS` elements are ever read.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from evalkit.errors import CorruptWeights, UnreadableFile
from evalkit.provenance.safetensors_file import DTYPE_BYTES
from evalkit.provenance.torch_pickle import (
    _STORAGE_DTYPES,
    MAX_PICKLE_BYTES,
    _open,
    _Tensor,
    _Unpickler,
)

# The constructors a tensor needs keep their meaning (see torch_pickle); every other
# global becomes a Recorded.
_TENSOR_GLOBALS = {
    ("collections", "OrderedDict"),
    ("torch._utils", "_rebuild_tensor_v2"),
    ("torch._utils", "_rebuild_parameter"),
}
MAX_SCALAR_ELEMENTS = 16
"""Largest tensor whose values are read (an optimizer's step count is one element)."""
_UNPACK = {"F32": "f", "F64": "d", "I64": "q", "I32": "i", "I16": "h", "I8": "b", "U8": "B"}
_FIX = "save the checkpoint again"


class Recorded:
    """What the pickle would have built from a global it names, without building it.

    ``name`` is the global (``transformers.training_args.TrainingArguments``),
    ``args`` the arguments it would have been called with (an enum's value,
    a device's name), ``state`` what ``__setstate__`` would have received (an
    object's fields).
    """

    name: ClassVar[str] = ""

    def __new__(cls, *args: Any, **kwargs: Any) -> Recorded:
        made = object.__new__(cls)
        made.args = args
        made.state = None
        return made

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args: tuple[Any, ...]
        self.state: Any

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __repr__(self) -> str:
        return f"Recorded({self.name}, args={self.args!r})"


class _StateUnpickler(_Unpickler):
    """Tensors as storage references, anything else named as a :class:`Recorded`."""

    def __init__(self, handle: Any, path: Path) -> None:
        super().__init__(handle, path)
        self.recorded: dict[str, type[Recorded]] = {}

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _TENSOR_GLOBALS or (module == "torch" and name in _STORAGE_DTYPES):
            return super().find_class(module, name)
        key = f"{module}.{name}"
        if key not in self.recorded:
            self.recorded[key] = type(f"Recorded[{key}]", (Recorded,), {"name": key})
        return self.recorded[key]


@dataclass(frozen=True)
class TorchState:
    """A ``torch.save`` file's value, read without torch; small tensors readable on demand."""

    path: Path
    value: Any
    """The value: dicts, lists, numbers, strings, :class:`Recorded` objects, tensor references."""
    prefix: str

    def scalars(self, tensors: list[Any]) -> list[float | None]:
        """The one value of each one-element tensor (an optimizer's ``step``s), else None.

        The archive is opened once for all of them (an optimizer has one per parameter).
        """
        found: list[float | None] = [None] * len(tensors)
        wanted = [(i, tensor) for i, tensor in enumerate(tensors) if _scalar_layout(tensor)]
        if not wanted:
            return found
        with _open(self.path) as archive:
            for index, tensor in wanted:
                found[index] = self._read_scalar(archive, tensor)
        return found

    def _read_scalar(self, archive: zipfile.ZipFile, tensor: _Tensor) -> float:
        storage = tensor.storage
        width = DTYPE_BYTES[storage.dtype]
        try:
            record = archive.getinfo(f"{self.prefix}data/{storage.key}")
        except KeyError as error:
            raise CorruptWeights(
                f"{self.path}: storage {storage.key} is missing; {_FIX}"
            ) from error
        if record.file_size != storage.numel * width:
            raise CorruptWeights(
                f"{self.path}: record data/{storage.key} declares {record.file_size} bytes, "
                f"not the {storage.numel * width} of its tensor; {_FIX}"
            )
        try:
            data = archive.read(record)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as error:
            raise CorruptWeights(
                f"{self.path}: record data/{storage.key} is damaged ({error}); {_FIX}"
            ) from error
        code = _UNPACK[storage.dtype]
        return float(struct.unpack_from(f"<{code}", data, tensor.offset * width)[0])


def _scalar_layout(tensor: Any) -> bool:
    """Whether ``tensor`` is a one-element tensor of a number type in a small storage."""
    if not isinstance(tensor, _Tensor):
        return False
    storage = tensor.storage
    elements = 1
    for size in tensor.shape:
        elements *= size
    return (
        storage.dtype in _UNPACK
        and elements == 1
        and isinstance(storage.numel, int)
        and 0 < storage.numel <= MAX_SCALAR_ELEMENTS
        and tensor.offset < storage.numel
    )


def read_torch_state(path: Path) -> TorchState:
    """The value of a ``torch.save`` zip file, unpickled without importing or calling anything.

    A file that is not such a zip, or whose pickle is damaged or larger than
    a state's pickle takes, is :class:`~evalkit.errors.CorruptWeights`.
    """
    with _open(path) as archive:
        names = archive.namelist()
        pickles = [name for name in names if name.endswith("data.pkl")]
        if len(pickles) != 1:
            raise CorruptWeights(f"{path}: no single data.pkl in the archive; {_FIX}")
        info = archive.getinfo(pickles[0])
        if info.file_size > MAX_PICKLE_BYTES:
            raise CorruptWeights(
                f"{path}: its data.pkl declares {info.file_size} bytes, more than a trainer "
                f"state's pickle takes ({MAX_PICKLE_BYTES}); {_FIX}"
            )
        try:
            with archive.open(info) as handle:
                value = _StateUnpickler(handle, path).load()
        except CorruptWeights:
            raise
        except OSError as error:
            raise UnreadableFile(f"{path}: cannot read: {error.strerror}") from error
        except Exception as error:  # a damaged pickle raises many types; all mean the same
            raise CorruptWeights(
                f"{path}: the pickle is damaged ({type(error).__name__}: {error}); {_FIX}"
            ) from error
    return TorchState(path, value, pickles[0].removesuffix("data.pkl"))


def plain(value: Any, depth: int = 0) -> Any:
    """``value`` as JSON-ready data: an enum's value, an object's fields, a tensor's shape.

    Only for the small settings of ``training_args.bin``; nesting is capped.
    """
    if depth > 8:
        return None
    if isinstance(value, Recorded):
        if isinstance(value.state, dict):
            return plain(value.state, depth + 1)
        if len(value.args) == 1 and isinstance(value.args[0], str | int | float | bool):
            return value.args[0]  # an enum member or a device, rebuilt from its value
        return value.name
    if isinstance(value, dict):
        return {str(key): plain(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, depth + 1) for item in value]
    if isinstance(value, _Tensor):
        return {"tensor": list(value.shape), "dtype": value.storage.dtype}
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return repr(value)[:80]
