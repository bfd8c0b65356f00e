"""The packages' lazy re-exports (evalkit._lazy): every public name resolves, lazily."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

PACKAGES = [
    "evalkit",
    "evalkit.model",
    "evalkit.contract",
    "evalkit.scoring",
    "evalkit.chat",
    "evalkit.leakage",
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_public_name_resolves_and_is_listed(name: str) -> None:
    package = importlib.import_module(name)
    assert sorted(dir(package)) == sorted(package.__all__)
    for public in package.__all__:
        if public == "__version__" or (name == "evalkit.model" and public != "RunRecord"):
            continue  # the model package's names import torch: one is enough here
        assert getattr(package, public) is not None, public
    with pytest.raises(AttributeError, match=f"module '{name}' has no attribute 'nope'"):
        package.nope  # noqa: B018


def test_import_evalkit_loads_no_library() -> None:
    code = "import sys, evalkit; print(sorted({'polars', 'pydantic', 'numpy'} & set(sys.modules)))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stderr


def test_evalkit_plan_shows_its_parameters() -> None:
    import evalkit

    parameters = inspect.signature(evalkit.plan).parameters
    assert "config" in parameters and "time" in parameters
    assert "args" not in parameters
