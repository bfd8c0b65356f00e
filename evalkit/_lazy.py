"""One lazy-export helper for the packages that re-export their public names.

``import evalkit`` (and ``evalkit --help``, which depends on it) must stay
fast, and a parsing worker must not load pydantic: a package lists its public
names and the module defining each, and a name's module is imported the first
time the name is used (PEP 562 module ``__getattr__``).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str,
    exports: Mapping[str, str],
    *,
    submodules: Sequence[str] = (),
    own: Sequence[str] = (),
    cache: bool = True,
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package``.

    ``exports`` maps a public name to the module that defines it;
    ``submodules`` are subpackages given as they are (``evalkit.plan``, a
    callable package); ``own`` are names the package defines itself
    (``__version__``), listed with the others. With ``cache`` a name is bound in the package once
    loaded; without it, every access asks the module again (where a name is
    also a submodule's, e.g. ``evalkit.comparison.rescore``, and importing the
    submodule would rebind it).
    """
    names = sorted([*own, *exports, *submodules])

    def __getattr__(name: str) -> Any:
        if name in submodules:
            return importlib.import_module(f"{package}.{name}")
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            if cache:
                setattr(sys.modules[package], name, value)
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__, names
