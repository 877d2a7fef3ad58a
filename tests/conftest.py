"""Shared fixtures. Unit tests run offline: pytest-socket blocks sockets (see pyproject addopts)
and the hub clients are forced offline, so any hidden download fails loudly."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# One torch thread everywhere (the library's own model calls, tiny models built in tests, notebook kernels, which
# inherit this environment): results then do not depend on the machine's core count, and a machine whose other
# cores are busy does not slow the suite down by an order of magnitude (see retrievekit.core.threads).
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("RETRIEVEKIT_NUM_THREADS", "1")

import pytest  # noqa: E402

from retrievekit.core.types import Passage  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path | None:
    """The benchmark data folder: $RETRIEVEKIT_DATA_DIR or ../shared/data beside the repo."""
    env = os.environ.get("RETRIEVEKIT_DATA_DIR")
    for cand in ([Path(env)] if env else []) + [REPO.parent / "shared" / "data"]:
        if cand.is_dir():
            return cand
    return None


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = shared_data_dir()
    if d is None:
        pytest.skip("benchmark data not found (set RETRIEVEKIT_DATA_DIR or put shared/data beside the repo)")
    return d


@pytest.fixture(scope="session")
def minilm():
    """The real all-MiniLM-L6-v2 from its wheel, loaded once per session."""
    from retrievekit.core.index.embeddings import MiniLMEmbedder

    return MiniLMEmbedder.default()


FRUIT = [
    Passage(id="apple", text="Apples are red or green fruits that grow on trees in orchards.", title="Apple"),
    Passage(id="banana", text="Bananas are long yellow tropical fruits rich in potassium.", title="Banana"),
    Passage(id="python", text="Python is a programming language used for data science and scripting.", title="Python"),
    Passage(id="rust", text="Rust is a systems programming language focused on memory safety.", title="Rust"),
    Passage(id="everest", text="Mount Everest is the highest mountain on Earth, in the Himalayas.", title="Everest"),
    Passage(
        id="nile", text="The Nile is a major river in northeastern Africa flowing into the Mediterranean.", title="Nile"
    ),
]


@pytest.fixture
def small_corpus() -> list[Passage]:
    return list(FRUIT)
