"""Click options built from a command's options object (:mod:`evalkit.options`).

``@params_options(PlanParams)`` on a click command adds one option per field
of ``PlanParams`` (flag, type, default, check, help, deprecated aliases, all
from the field) and hands the command one ``params`` object in place of the
separate values. The object is made as the library would make it, so a value
it refuses is refused with the library's words; :class:`~evalkit.cli._vocabulary.Command`
renders the parameter's name as its flag (``seq_len`` -> ``--seq-len``).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from evalkit.cli._vocabulary import ALIASES_ATTRIBUTE, line_naming
from evalkit.errors import ParameterError
from evalkit.options import FieldType, OptionSpec, Params, field_types, spec_of

F = TypeVar("F", bound=Callable[..., Any])

"""Where a callback keeps the deprecated spellings of its options, for ``Command`` to honour."""

_BASE_TYPES: dict[Any, click.ParamType] = {
    int: click.INT,
    float: click.FLOAT,
    str: click.STRING,
}


class FieldOption(click.Option):
    """A click option made from a field of an options object (never declared by hand)."""


class _Library(click.ParamType):
    """A click type that runs the library's own conversion or check on the value.

    ``parse`` turns the word into the value (a comma-separated list, say);
    ``check`` is the field's check. A ``ParameterError`` becomes click's usage
    error on the option, in the library's words.
    """

    def __init__(
        self, base: click.ParamType, name: str, spec: OptionSpec, parse: bool = True
    ) -> None:
        self.base = base
        self.parameter = name
        self.spec = spec
        self.use_parse = parse and spec.parse is not None
        self.name = base.name

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            if self.use_parse and isinstance(value, str):
                assert self.spec.parse is not None
                value = self.spec.parse(value)
            elif self.use_parse and isinstance(value, tuple):
                pass  # the field's default, already its value (a parsed list)
            else:
                value = self.base.convert(value, param, ctx)
            if self.spec.check is not None:
                value = self.spec.check(value, self.parameter)
        except ParameterError as error:
            self.fail(error.problem_named(line_naming(ctx)), param, ctx)
        return value


def _click_type(name: str, kind: FieldType, spec: OptionSpec) -> click.ParamType:
    if kind.choices is not None:
        base: click.ParamType = click.Choice([str(choice) for choice in kind.choices])
    elif kind.base is Path:
        base = click.Path(path_type=Path, dir_okay=not spec.path_file)
    else:
        base = _BASE_TYPES.get(kind.base, click.STRING)
    if spec.parse is not None:
        return _Library(click.STRING, name, spec)
    if spec.check is not None and not kind.many:
        return _Library(base, name, spec, parse=False)
    return base


def _declarations(name: str, spec: OptionSpec) -> list[str]:
    flag = spec.flag or "--" + name.replace("_", "-")
    if spec.secondary:
        flag = f"{flag}/{spec.secondary}"
    return [*([spec.short] if spec.short else []), flag, name]


def click_option(field: dataclasses.Field[Any], kind: FieldType) -> Callable[[F], F]:
    """The ``click.option`` decorator of one field."""
    spec = spec_of(field)
    default = None if field.default is dataclasses.MISSING else field.default
    help_text = spec.help
    if spec.default_help:
        help_text = f"{help_text}  [default: {spec.default_help}]"
    attrs: dict[str, Any] = {"help": help_text}
    if kind.base is bool and not kind.many:
        attrs["is_flag"] = True
        attrs["default"] = default
        if spec.secondary is None and default is None:
            raise TypeError(f"{field.name}: a bool that may be None needs a secondary flag")
    else:
        attrs["type"] = _click_type(field.name, kind, spec)
        attrs["default"] = default
        # ``is``, not ``in``: a default of 0 or 0.0 equals False, and is shown as click shows it.
        unset = default is None or default is False or default == ()
        attrs["show_default"] = not unset and not spec.default_help
        if spec.metavar:
            attrs["metavar"] = spec.metavar
        if kind.many and spec.parse is None:
            attrs["multiple"] = True
    if spec.required:
        attrs["required"] = True
    return click.option(*_declarations(field.name, spec), cls=FieldOption, **attrs)


def cli_fields(cls: type[Params]) -> list[dataclasses.Field[Any]]:
    """The fields of ``cls`` the command line offers (``cli=False`` ones are Python-only)."""
    return [field for field in dataclasses.fields(cls) if spec_of(field).cli]


def params_options(cls: type[Params], *, into: str = "params") -> Callable[[F], F]:
    """Add ``cls``'s options to a click command, and pass it one ``cls`` object as ``into``.

    Use it between ``@click.command(cls=Command)`` and the command's own
    options: the options appear in ``--help`` in the order of the fields.
    """
    kinds = field_types(cls)
    chosen = cli_fields(cls)

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def callback(**values: Any) -> Any:
            given = {field.name: values.pop(field.name) for field in chosen}
            values[into] = cls(**given)
            return function(**values)

        for field in reversed(chosen):
            click_option(field, kinds[field.name])(callback)
        aliases = dict(getattr(function, ALIASES_ATTRIBUTE, {}))
        for field in chosen:
            spec = spec_of(field)
            current = spec.flag or "--" + field.name.replace("_", "-")
            aliases.update({old: current for old in spec.aliases})
        setattr(callback, ALIASES_ATTRIBUTE, aliases)
        return callback  # type: ignore[return-value]

    return decorate
