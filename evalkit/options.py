"""One frozen options object per command: the library takes it, the command line is built from it.

A command's options are defined once, as the fields of a frozen dataclass
that subclasses :class:`Params`: each field's type, default, check and help
(:func:`option`). The library entry takes the object, or keyword arguments
that build it (``evalkit.plan(config, seq_len=1024)`` and
``evalkit.plan(config, PlanParams(seq_len=1024))`` are the same call); the
click command is built from the same class by
:func:`evalkit.cli._params.params_options`, so a flag, its type, its default,
its check and its help text live in one place. The object checks its values
when it is made, with the checks of :mod:`evalkit.params`, and its errors name
parameters (``seq_len``); the command line says the same with the flag.

A concept has one Python name on every object and every library function
(``id_column``, ``text``, ``seq_len``, ``batch_size``, ``eval_batch_size``;
``tests/test_python_names.py`` holds the table). An older spelling stays
accepted as a *renamed* keyword (:func:`option`'s ``renamed``): given to the
object, to its ``build`` or read as an attribute, it means the field and
warns once (a :class:`DeprecationWarning` naming the new spelling), as the
command line's deprecated flags print a note.

Stdlib only, and nothing here runs at import time but the class definitions:
``evalkit --help`` does not pay for it.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import numbers
import os
import sys
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self, TypeVar, get_args, get_origin

from evalkit.errors import ParameterError

F = TypeVar("F", bound=Callable[..., Any])
Check = Callable[[Any, str], Any]
"""A value check: ``check(value, parameter)`` returns the value (normalised) or raises
:class:`~evalkit.errors.ParameterError` naming ``parameter``."""

_KEY = "evalkit.option"


@dataclass(frozen=True)
class OptionSpec:
    """What the command line needs to know about one field, beyond its type and default.

    ``flag`` defaults to the field's name with dashes (``seq_len`` ->
    ``--seq-len``); ``secondary`` is the off switch of a boolean pair
    (``--no-kbit-prep``); ``default_help`` says what an unset (``None``) field
    resolves to; ``aliases`` are deprecated spellings, still accepted with a
    note; ``renamed`` are the field's deprecated *Python* spellings
    (``id_col`` of ``id_column``), still accepted with a ``DeprecationWarning``;
    ``parse`` turns the command line's word into the field's value (a
    comma-separated list, say) and may raise ``ParameterError``; ``cli=False``
    keeps a field out of the command line (a Python-only parameter).
    """

    help: str
    flag: str | None = None
    short: str | None = None
    secondary: str | None = None
    metavar: str | None = None
    check: Check | None = None
    parse: Callable[[str], Any] | None = None
    default_help: str | None = None
    aliases: tuple[str, ...] = ()
    renamed: tuple[str, ...] = ()
    required: bool = False
    cli: bool = True
    path_file: bool = False
    """A path that must not be a folder (the command line refuses one as it parses)."""


def option(
    default: Any = dataclasses.MISSING,
    *,
    help: str,
    flag: str | None = None,
    short: str | None = None,
    secondary: str | None = None,
    metavar: str | None = None,
    check: Check | None = None,
    parse: Callable[[str], Any] | None = None,
    default_help: str | None = None,
    aliases: tuple[str, ...] = (),
    renamed: tuple[str, ...] = (),
    cli: bool = True,
    path_file: bool = False,
) -> Any:
    """A field of a :class:`Params` class: its default and what the command line shows.

    Without a default the parameter is required (a required option on the
    command line). A tuple default is shared safely: the object is frozen.
    """
    spec = OptionSpec(
        help=help,
        flag=flag,
        short=short,
        secondary=secondary,
        metavar=metavar,
        check=check,
        parse=parse,
        default_help=default_help,
        aliases=aliases,
        renamed=renamed,
        required=default is dataclasses.MISSING,
        cli=cli,
        path_file=path_file,
    )
    return dataclasses.field(default=default, metadata={_KEY: spec})


def spec_of(field: dataclasses.Field[Any]) -> OptionSpec:
    """The :class:`OptionSpec` of a field (a plain field: its name as help, command line too)."""
    spec = field.metadata.get(_KEY)
    return spec if isinstance(spec, OptionSpec) else OptionSpec(help=field.name)


@dataclass(frozen=True)
class FieldType:
    """A field's annotation, read once: the value type, whether None is allowed, its choices."""

    base: Any
    optional: bool
    choices: tuple[Any, ...] | None
    many: bool
    """A ``tuple[X, ...]``: a repeatable option on the command line."""
    takes_path: bool = False
    """``Path`` is the type or one of the union's: text given is a path."""


def _field_type(hint: Any) -> FieldType:
    optional = False
    takes_path = hint is Path
    if get_origin(hint) in (typing.Union, types.UnionType):
        members = [arg for arg in get_args(hint) if arg is not type(None)]
        takes_path = Path in members
        optional = len(members) < len(get_args(hint))
        hint = members[0] if len(members) == 1 else hint
    many = False
    if get_origin(hint) is tuple and len(get_args(hint)) == 2 and get_args(hint)[1] is Ellipsis:
        many = True
        hint = get_args(hint)[0]
    choices = None
    if get_origin(hint) is Literal:
        choices = get_args(hint)
        hint = type(choices[0])
    return FieldType(
        base=hint, optional=optional, choices=choices, many=many, takes_path=takes_path
    )


_FIELD_TYPES: dict[type, Mapping[str, FieldType]] = {}


def field_types(cls: type[Params]) -> Mapping[str, FieldType]:
    """Every field's :class:`FieldType`, by name (annotations resolved once per class)."""
    if cls not in _FIELD_TYPES:
        hints = typing.get_type_hints(cls)
        _FIELD_TYPES[cls] = {
            field.name: _field_type(hints[field.name]) for field in dataclasses.fields(cls)
        }
    return _FIELD_TYPES[cls]


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep
_PASSED_THROUGH = (dataclasses.__file__, functools.__file__)


def _caller_level() -> int:
    """The ``stacklevel`` that points a warning raised by :func:`warn_renamed` at its caller.

    The first frame outside evalkit (and outside the dataclass machinery that
    ``dataclasses.replace`` runs): the line of the user's call, wherever in the
    library the old name was noticed.
    """
    frame = sys._getframe(2)  # the caller of warn_renamed
    level = 2
    while frame.f_back is not None and (
        frame.f_code.co_filename.startswith(_PACKAGE) or frame.f_code.co_filename in _PASSED_THROUGH
    ):
        frame = frame.f_back
        level += 1
    return level


def warn_renamed(old: str, new: str, where: str) -> None:
    """Say once that ``old`` is the deprecated spelling of ``new`` (of ``where``)."""
    warnings.warn(
        f"{where}: {old} is deprecated; use {new}",
        DeprecationWarning,
        stacklevel=_caller_level(),
    )


def apply_renamed(
    values: Mapping[str, Any], renamed: Mapping[str, str], where: str
) -> dict[str, Any]:
    """``values`` with every deprecated keyword of ``renamed`` (old -> new) given its new name.

    Each old name used warns; an old name given beside its new one is a
    ``TypeError``, as a keyword given twice is.
    """
    out = dict(values)
    for old, new in renamed.items():
        if old not in out:
            continue
        if new in out:
            raise TypeError(f"{where}: give {new} only ({old} is its deprecated spelling)")
        warn_renamed(old, new, where)
        out[new] = out.pop(old)
    return out


def renamed_keywords(**renamed: str) -> Callable[[F], F]:
    """Accept the deprecated keyword names of a function: ``@renamed_keywords(id_col="id_column")``.

    An old name given is passed as the new one, with one ``DeprecationWarning``
    naming the new spelling; the signature shows the new names only.
    """

    def decorate(function: F) -> F:
        where = f"{function.__name__}()"

        @functools.wraps(function)
        def call(*args: Any, **keywords: Any) -> Any:
            return function(*args, **apply_renamed(keywords, renamed, where))

        return call  # type: ignore[return-value]

    return decorate


_RENAMED: dict[type, Mapping[str, str]] = {}


def renamed_of(cls: type[Params]) -> Mapping[str, str]:
    """The deprecated Python spellings of ``cls``'s fields: old name -> field name."""
    if cls not in _RENAMED:
        _RENAMED[cls] = {
            old: field.name for field in dataclasses.fields(cls) for old in spec_of(field).renamed
        }
    return _RENAMED[cls]


class _ParamsType(type):
    """Makes a :class:`Params` object from deprecated keyword spellings too (with a warning)."""

    def __call__(cls, *args: Any, **values: Any) -> Any:
        renamed = renamed_of(cls)  # type: ignore[arg-type]
        if renamed and not renamed.keys().isdisjoint(values):
            values = apply_renamed(values, renamed, cls.__name__)
        return super().__call__(*args, **values)


@dataclass(frozen=True, kw_only=True)
class Params(metaclass=_ParamsType):
    """Base of a command's options object: frozen, keyword-only, checked when made.

    Each field's value is checked with its :class:`OptionSpec`'s ``check``
    and, for a ``Literal`` type, against its choices; a list given for a
    ``tuple[X, ...]`` field is kept as a tuple (a single string as a tuple of
    one), and a path given as text as a :class:`~pathlib.Path`. ``None`` is left unchecked: it
    means "the default", resolved where the command knows enough (a model's
    config, a table's columns).
    """

    def __post_init__(self) -> None:
        kinds = field_types(type(self))
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            kind = kinds[field.name]
            if value is None:
                if not kind.optional:
                    raise ParameterError(field.name, "is required; give it a value")
                continue
            if kind.many and isinstance(value, str):
                value = (value,)  # one name where several may be given: a list of one
            elif kind.many and isinstance(value, list):
                value = tuple(value)
            if kind.takes_path and isinstance(value, str | os.PathLike):
                value = Path(value)  # the library takes a path as text too
            if kind.choices is not None:
                for item in value if kind.many else (value,):
                    _choose(item, kind.choices, field.name)
            spec = spec_of(field)
            if spec.check is not None:
                value = spec.check(value, field.name)
            if not kind.many:
                _check_type(value, kind, field.name)
            elif isinstance(value, tuple):
                for item in value:
                    _check_type(item, kind, field.name)
            elif kind.base in _TYPE_WORDS:
                raise ParameterError(
                    field.name,
                    f"must be a list of values ({_TYPE_WORDS[kind.base]} each), "
                    f"got {_shown(value)}",
                )
            object.__setattr__(self, field.name, value)

    @classmethod
    def build(cls, given: Self | None = None, values: Mapping[str, Any] | None = None) -> Self:
        """The options object of a library call: ``given``, with ``values`` (keywords) applied.

        An unknown keyword is a ``TypeError`` naming the parameters there are,
        as Python says for a function's keywords.
        """
        values = apply_renamed(values or {}, renamed_of(cls), cls.__name__)
        names = [field.name for field in dataclasses.fields(cls)]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise TypeError(
                f"unexpected keyword argument {unknown[0]!r}; the parameters are: "
                + ", ".join(names)
            )
        if given is None:
            return cls(**values)
        if not isinstance(given, cls):
            raise TypeError(f"expected {cls.__name__}, got {type(given).__name__}")
        return dataclasses.replace(given, **values) if values else given

    if not TYPE_CHECKING:  # a type checker keeps refusing the old names

        def __getattr__(self, name: str) -> Any:
            """An old field name read as an attribute: the field's value, with a warning."""
            new = renamed_of(type(self)).get(name)
            if new is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            warn_renamed(name, new, type(self).__name__)
            return getattr(self, new)

    def changed(self) -> dict[str, Any]:
        """The fields that differ from their defaults (what a user set), in field order."""
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.default is dataclasses.MISSING or value != field.default:
                out[field.name] = value
        return out


_TYPE_WORDS: dict[Any, str] = {
    bool: "true or false",
    int: "a whole number",
    float: "a number",
    str: "text",
    Path: "a path",
}


def _check_type(value: Any, kind: FieldType, parameter: str) -> None:
    """Refuse a value of another type than the field's, naming the parameter.

    Python would take ``exact_only="no"`` as true and ``runs=1.5`` as runs;
    the object is where a library call's values are checked, so they are
    refused here, as the command line refuses them. A field typed with a
    union of several types is checked by its own ``check``.
    """
    base = kind.base
    if base is bool:
        ok = isinstance(value, bool)
    elif base is int:  # numpy's integers too, and a float that is whole (2.0 items is 2)
        ok = not isinstance(value, bool) and (
            isinstance(value, numbers.Integral) or (isinstance(value, float) and value.is_integer())
        )
    elif base is float:
        ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and value == value
    elif base is str:
        ok = isinstance(value, str)
    elif base is Path:
        ok = isinstance(value, Path)
    else:
        return
    if not ok:
        whose = "each of its values" if kind.many else ""
        raise ParameterError(
            parameter,
            f"must be {whose + ' ' if whose else ''}{_TYPE_WORDS[base]}, got {_shown(value)}",
        )


def _shown(value: Any) -> str:
    text = repr(value)
    return f"{text[:57]}..." if len(text) > 60 else f"{text} ({type(value).__name__})"


def _choose(value: Any, choices: tuple[Any, ...], parameter: str) -> None:
    if value not in choices:
        allowed = ", ".join(str(choice) for choice in choices)
        raise ParameterError(parameter, f"must be one of {allowed}, got {value!r}")


def takes(cls: type[Params]) -> Callable[[F], F]:
    """Show a library entry's options in its signature: ``help()`` and editors list them.

    The entry is written ``def plan(config, params=None, /, *, time=None,
    **options)`` and builds its object with ``PlanParams.build(params,
    options)``; its ``__signature__`` then lists every field of ``cls`` as a
    keyword-only parameter with its default, in place of ``**options``.
    """

    def decorate(function: F) -> F:
        signature = inspect.signature(function)
        kept = [
            parameter
            for parameter in signature.parameters.values()
            if parameter.kind is not inspect.Parameter.VAR_KEYWORD
        ]
        taken = {parameter.name for parameter in kept}
        added = [
            inspect.Parameter(
                field.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=inspect.Parameter.empty
                if field.default is dataclasses.MISSING
                else field.default,
                annotation=field.type,
            )
            for field in dataclasses.fields(cls)
            if field.name not in taken
        ]
        function.__signature__ = signature.replace(parameters=[*kept, *added])  # type: ignore[attr-defined]
        return function

    return decorate
