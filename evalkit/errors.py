"""The one exception tree of evalkit.

Every error a user can cause is an :class:`EvalkitError`. Its message is one line
that names the file, line or key at fault and says what to do; its ``exit_code``
is what the command line exits with. The library raises these; only ``cli``
turns them into a message on stderr and an exit code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Self

#: The value of a ref that names a parameter only (``{tolerance}``), no value.
NO_VALUE: Any = type("NoValue", (), {"__repr__": lambda self: "NO_VALUE"})()

#: How a message's parameters are named: ``(parameter, value) -> words``.
Naming = Callable[[str, Any], str]

Refs = Mapping[str, Any] | Iterable[str]


@dataclass(frozen=True)
class Ref:
    """A ref that names a parameter other than its placeholder, for two values of one
    parameter in one message: ``{"cuda": Ref("device", "cuda"), "cpu": Ref("device", "cpu")}``."""

    parameter: str
    value: Any = NO_VALUE


def python_name(parameter: str, value: Any = NO_VALUE) -> str:
    """A parameter as a Python caller writes it: ``tolerance``, ``force=True``."""
    return parameter if value is NO_VALUE else f"{parameter}={value!r}"


def render_refs(template: str, refs: Mapping[str, Any], name: Naming) -> str:
    """``template`` with each ref's ``{placeholder}`` replaced by ``name(parameter, value)``."""
    message = template
    for ref, value in refs.items():
        parameter, value = (
            (value.parameter, value.value) if isinstance(value, Ref) else (ref, value)
        )
        message = message.replace("{" + ref + "}", name(parameter, value))
    return message


def _refs(refs: Refs) -> dict[str, Any]:
    return dict(refs) if isinstance(refs, Mapping) else dict.fromkeys(refs, NO_VALUE)


class EvalkitWarning(UserWarning):
    """Something a user should know that stops nothing (a look that goes unrecorded, a damaged
    ledger): one sentence whose parameters are refs, as in :class:`EvalkitError`.

    From Python it is a ``UserWarning`` that reads ``pass ledger ...``; the command
    line shows it as ``evalkit: warning: …`` with its flags (``--ledger``), through
    :meth:`named`, so both paths warn about the same things in the same words.
    """

    def __init__(self, message: str, *, refs: Refs = ()) -> None:
        self.template = message
        self.refs = _refs(refs)
        super().__init__(self.named(python_name))

    def named(self, name: Naming) -> str:
        """The sentence, each parameter called ``name(parameter, value)`` (e.g. its flag)."""
        return render_refs(self.template, self.refs, name)


class EvalkitError(Exception):
    """Base of every error evalkit reports to a user (exit code 2: bad input).

    The library knows parameters, not flags. A message that names one (``pass
    {force} to overwrite it``) writes it as ``{name}`` and lists it in
    ``refs``: a name alone (``tolerance``), or a name and the value the advice
    is about (``{"force": True}``, ``{"null_group": "singleton"}``), or a
    :class:`Ref` where the placeholder is not the parameter's name. From
    Python the message reads ``pass force=True to overwrite it``; the command
    line, which knows which flag sets which parameter, renders the same error
    with flags (``pass --force``) through :meth:`naming`, called in one
    place: ``evalkit.cli._vocabulary``. Braces that are not a ref's stay as
    written.
    """

    exit_code: int = 2

    def __init__(self, message: str, *, refs: Refs = ()) -> None:
        self.template = message
        self.refs: dict[str, Any] = _refs(refs)
        self.named = False
        self.message = self._render(python_name)
        super().__init__(self.message)

    def _render(self, name: Naming, template: str | None = None) -> str:
        return render_refs(self.template if template is None else template, self.refs, name)

    def naming(self, name: Naming) -> Self:
        """This error, each parameter called ``name(parameter, value)`` (e.g. its flag).

        The first naming wins: an error named by the command that ran keeps
        its words when a group above it sees it again.
        """
        if not self.named:
            self.named = True
            self.message = self._render(name)
            self.args = (self.message,)
        return self

    def wrapped(self, before: str = "", after: str = "") -> Self:
        """This error with words around it (where it happened), its refs kept, so the
        command line still names them as flags."""
        wider = type(self).__new__(type(self))  # whatever the subclass's __init__ takes
        wider.__dict__.update(self.__dict__)
        wider.template = before + self.template + after
        wider.named = False
        wider.message = wider._render(python_name)
        wider.args = (wider.message,)
        return wider

    def __str__(self) -> str:
        return self.message


class UsageError(EvalkitError):
    """An option value or combination of options is invalid."""


class UnreadableFile(EvalkitError):
    """A file does not exist, cannot be opened, or has an unknown format."""


class MalformedFile(EvalkitError):
    """A file opened but its content could not be parsed (names the line)."""


class UnknownColumn(EvalkitError):
    """A column named in an option or contract is not in the table."""


class InvalidTable(EvalkitError):
    """A table has the right columns but values that break a requirement."""


class OutputExists(EvalkitError):
    """An output path exists already and ``--force`` was not given."""


class InfeasibleSplit(EvalkitError):
    """The requested split cannot be met within the allowed tolerance."""


class InvalidContract(EvalkitError):
    """An evaluation contract is malformed (names the key)."""


class IncompatibleResults(EvalkitError):
    """Two results were made under different contracts or gold files."""


class InvalidSchema(InvalidContract):
    """A contract's JSON Schema breaks its meta-schema or refers outside the contract."""


class InvalidConversation(InvalidTable):
    """A conversation column holds a value that is not a well-formed conversation."""


class DuplicateIds(InvalidTable):
    """An id occurs more than once where every id must be unique."""


class ModelLoadError(EvalkitError):
    """A model, adapter or merged folder cannot be loaded as it stands (names the folder)."""


class OutOfDeviceMemory(ModelLoadError):
    """The device ran out of memory while a model loaded (names the folder, device and dtype)."""


class AdapterMismatch(ModelLoadError):
    """An adapter does not fit the base it is loaded on (shapes or modules differ)."""


class CustomCodeRefused(EvalkitError):
    """A model, adapter or tokenizer folder asks to run its own Python code (``auto_map``)."""


class DeviceUnavailable(UsageError):
    """The device or dtype asked for is not available on this machine."""


class ArtifactChanged(EvalkitError):
    """A file pinned by a run changed or disappeared after the run (names the file)."""


class WorkerFailed(EvalkitError):
    """The fresh process of a reload check ended without a result (a bug, exit 3)."""

    exit_code = 3


class NotAnAdapter(UnreadableFile):
    """A folder given as an adapter holds no PEFT adapter (no adapter_config.json or weights)."""


class CorruptWeights(MalformedFile):
    """A safetensors (or legacy PyTorch) weights file does not follow its format."""


class DifferentBases(IncompatibleResults):
    """Two results were produced on different base models (id, revision or quantization)."""


class InvalidModelConfig(EvalkitError):
    """A model's config.json lacks a key, or has a value the memory planner cannot use."""


class InvalidParameter(UsageError, ValueError):
    """A library argument has a value it cannot take (names the parameter, quotes the value).

    Also a ``ValueError``: what scikit-learn's callers expect from a splitter's arguments.
    """


class InvalidParameterType(InvalidParameter, TypeError):
    """A library argument has a type it cannot take (also a ``TypeError``, as in scikit-learn)."""


class WriteFailed(EvalkitError):
    """The operating system refused to write an output (disk full, quota, permissions)."""


class ParameterError(InvalidParameter):
    """A library parameter has a value it cannot take, named as the library names it.

    The message reads ``near_dup must be a Jaccard threshold in (0, 1], got
    1.5``: the ``parameter`` first, then the ``problem``, whose other
    parameters are ``{name}`` refs, as in every :class:`EvalkitError`.
    """

    def __init__(self, parameter: str, problem: str, *, refs: Refs = ()) -> None:
        self.parameter = parameter
        self.problem = problem
        named = dict(refs) if isinstance(refs, Mapping) else dict.fromkeys(refs, NO_VALUE)
        super().__init__("{" + parameter + "} " + problem, refs={parameter: NO_VALUE, **named})

    @property
    def problem_text(self) -> str:
        """The problem alone, its other parameters named as the library names them."""
        return self.problem_named(python_name)

    def problem_named(self, name: Naming) -> str:
        """The problem alone, its other parameters called ``name(parameter, value)``
        (a click usage error on the option itself says the rest)."""
        return self._render(name, self.problem)


class EngineFailure(EvalkitError):
    """A distributed run could not finish one of its stages (names the stage)."""


class AdapterNotServable(ModelLoadError):
    """The server asked for (vLLM) refuses the adapter, or would serve it otherwise (names the
    rule; found before the engine starts)."""
