"""The project rule: every class and function a module exports in ``__all__`` has a docstring with an example.

A module that defines public classes or functions must say which it exports (``__all__``); what it does not export
is internal and needs no example.
"""

from __future__ import annotations

import importlib
import inspect

import pytest
from _public_modules import public_modules


def _is_api(obj) -> bool:
    return inspect.isclass(obj) or inspect.isfunction(obj)


def _defined_public(mod) -> list[str]:
    """Public classes and functions defined in ``mod`` itself."""
    return sorted(
        name
        for name, obj in vars(mod).items()
        if not name.startswith("_") and _is_api(obj) and getattr(obj, "__module__", None) == mod.__name__
    )


def _exported(mod):
    """The classes and functions in ``mod.__all__`` (re-exports included; lazy ones are imported)."""
    for name in sorted(getattr(mod, "__all__", ())):
        obj = getattr(mod, name)
        if _is_api(obj):
            yield name, obj


@pytest.mark.parametrize("module_name", public_modules())
def test_exported_api_has_docstrings_with_examples(module_name):
    mod = importlib.import_module(module_name)
    assert mod.__doc__, f"{module_name} has no module docstring"
    if not hasattr(mod, "__all__"):
        defined = _defined_public(mod)
        assert not defined, f"{module_name} defines public classes/functions but has no __all__: {defined}"
        return
    missing = [name for name, obj in _exported(mod) if "Example" not in (inspect.getdoc(obj) or "")]
    assert not missing, f"{module_name}: exported objects without a docstring example: {missing}"
