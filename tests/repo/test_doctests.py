"""The docstring examples run and give what they show: the framework-free core and the framework edges.

Examples that need model weights (SmolLM2, all-MiniLM-L6-v2, a trained model) carry ``# doctest: +SKIP``.
"""

from __future__ import annotations

import doctest
import importlib

import pytest
from _public_modules import public_modules


@pytest.mark.parametrize("module_name", public_modules())
def test_docstring_examples(module_name):
    mod = importlib.import_module(module_name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0, f"{result.failed} of {result.attempted} doctest examples failed in {module_name}"
