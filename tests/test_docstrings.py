"""The project rule: every public class and function has a docstring with a short example."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import retrievekit


def _public_modules() -> list[str]:
    names = set()
    for path in retrievekit.__path__:
        for info in pkgutil.walk_packages([path], prefix="retrievekit."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.add(info.name)
    return sorted(names)


def _public_objects(mod):
    exported = getattr(mod, "__all__", None)
    for name, obj in sorted(vars(mod).items()):
        if name.startswith("_") or (exported is not None and name not in exported):
            continue
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", None) == mod.__name__:
            yield name, obj


@pytest.mark.parametrize("module_name", _public_modules())
def test_public_api_has_docstrings_with_examples(module_name):
    mod = importlib.import_module(module_name)
    assert mod.__doc__, f"{module_name} has no module docstring"
    missing = [name for name, obj in _public_objects(mod) if "Example" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{module_name}: public objects without a docstring example: {missing}"
