"""The docstring examples run and give what they show: the framework-free core and the framework edges.

Examples that need model weights (SmolLM2, all-MiniLM-L6-v2, a trained model) carry ``# doctest: +SKIP``.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import retrievekit


def _modules() -> list[str]:
    """Every public module of the namespace package (core and integrations), packages included."""
    names = set()
    for path in retrievekit.__path__:
        for info in pkgutil.walk_packages([path], prefix="retrievekit."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                names.add(info.name)
    return sorted(names)


@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples(module_name):
    mod = importlib.import_module(module_name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {module_name}"
