"""The docstring examples of the framework-free core run and give what they show."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import retrievekit.core


def _core_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(retrievekit.core.__path__, prefix="retrievekit.core.")
        if not info.name.rsplit(".", 1)[-1].startswith("_")
    )


@pytest.mark.parametrize("module_name", _core_modules())
def test_core_docstring_examples(module_name):
    mod = importlib.import_module(module_name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {module_name}"
