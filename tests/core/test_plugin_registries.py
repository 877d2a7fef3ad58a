"""The eight pluggable parts share one shape (``retrievekit.core.plugins.Registry``, docs/plugins.md): an unknown
name is an ``UnknownNameError`` listing the known names, and a part that an installed package declares as an entry
point of the kind's group (a real dist-info folder on ``sys.path``, read by ``importlib.metadata``) is listed and
found through the kind's public API."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from retrievekit.core.errors import InvalidInputError, UnknownNameError
from retrievekit.core.plugins import Registry

PLUGIN = "rk_test_plugin_pkg"
SOURCE = """
from retrievekit.core.eval.datasets import Dataset, DatasetSpec
from retrievekit.core.fakes import FixedReplyLLM, OnesEmbedder, WordJudge
from retrievekit.core.llm.models import ModelSpec
from retrievekit.core.llm.resolve import LLMAdapter


def build_method(ctx):
    from retrievekit.core.index.bm25 import BM25Index
    return BM25Index.build(list(ctx.corpus))


DATASET = DatasetSpec("ep-dataset", lambda root, split, limit: Dataset("ep-dataset", split, [], [], {}), "ep/",
                      splits=lambda root: ["dev"])
MODEL = ModelSpec("ep-model", "a test model", (("ep-wheel", "ep/model.gguf"),), "0" * 64, "model.gguf", "pip install ep")


def served_llm(spec):
    return FixedReplyLLM("served " + spec.model)


class ForeignLLM:
    pass


ADAPTER = LLMAdapter(ForeignLLM, lambda model: FixedReplyLLM("adapted"), "a foreign LLM")


class ForeignEmbedding:
    pass


def embedder_from(obj):
    return OnesEmbedder() if isinstance(obj, ForeignEmbedding) else None


def open_store(**kwargs):
    from retrievekit.core.index.chroma_store import ChromaStore
    return ChromaStore.in_memory(**kwargs)


def build_judge(ctx):
    return WordJudge("ep")
"""
ENTRY_POINTS = {
    "retrievekit.methods": "ep-method = rk_test_plugin_pkg:build_method",
    "retrievekit.datasets": "ep-dataset = rk_test_plugin_pkg:DATASET",
    "retrievekit.models": "ep-model = rk_test_plugin_pkg:MODEL",
    "retrievekit.llms": "ep-client = rk_test_plugin_pkg:served_llm",
    "retrievekit.llm_adapters": "ep-adapter = rk_test_plugin_pkg:ADAPTER",
    "retrievekit.embedders": "ep-embedder = rk_test_plugin_pkg:embedder_from",
    "retrievekit.stores": "ep-store = rk_test_plugin_pkg:open_store",
    "retrievekit.judges": "ep-judge = rk_test_plugin_pkg:build_judge",
}


def _registry(kind: str) -> Registry[Any]:
    if kind == "method":
        from retrievekit.core.registry import METHODS as table
    elif kind == "dataset":
        from retrievekit.core.eval.datasets.registry import _REGISTRY as table
    elif kind == "model":
        from retrievekit.core.llm.models import MODEL_REGISTRY as table
    elif kind == "client":
        from retrievekit.core.llm.served_spec import SERVED_CLIENTS as table
    elif kind == "adapter":
        from retrievekit.core.llm.resolve import LLM_ADAPTERS as table
    elif kind == "embedder":
        from retrievekit.core.index.as_embedder import EMBEDDER_ADAPTERS as table
    elif kind == "store":
        from retrievekit.core.index.store_kinds import STORE_KINDS as table
    else:
        from retrievekit.core.llm.judge_choice import JUDGE_KINDS as table
    return table


def _found(kind: str, module: Any) -> bool:
    """The entry point's part, reached through the kind's public API (not the registry object)."""
    from retrievekit.core.types import Passage

    if kind == "method":
        from retrievekit.core.registry import MethodContext, build_method

        corpus = [Passage(id="a", text="red apples"), Passage(id="b", text="blue sky")]
        return build_method("ep-method", MethodContext(corpus=corpus)).search("apples", k=1)[0].id == "a"
    if kind == "dataset":
        from retrievekit.core.eval.datasets import dataset_spec

        return dataset_spec("ep-dataset") is module.DATASET
    if kind == "model":
        from retrievekit.core.llm import models

        return models._spec("ep-model") is module.MODEL
    if kind == "client":
        from retrievekit.core.llm.served_spec import load_served_llm

        return load_served_llm("ep-client:m7@http://127.0.0.1:1/v1").complete("hi").text == "served m7"
    if kind == "adapter":
        from retrievekit.core.llm.resolve import resolve_llm

        return resolve_llm(module.ForeignLLM()).complete("hi").text == "adapted"
    if kind == "embedder":
        from retrievekit.core.fakes import OnesEmbedder
        from retrievekit.core.index.as_embedder import as_embedder

        return isinstance(as_embedder(module.ForeignEmbedding()), OnesEmbedder)
    if kind == "store":
        from retrievekit.core.index.store_kinds import open_store

        return open_store("ep-store").count() == 0
    from retrievekit.core.llm.judge_choice import resolve_judge

    return resolve_judge("ep-judge").score_relevance("q", ["ep here", "not"]) == [0.9, 0.2]


# (kind, the entry point's name, the kind's public lookup of an unknown name)
def _unknown_lookups() -> dict[str, Callable[[str], Any]]:
    from retrievekit.core.eval.datasets import dataset_spec
    from retrievekit.core.index.store_kinds import open_store
    from retrievekit.core.llm import models
    from retrievekit.core.llm.judge_choice import JudgeSpec
    from retrievekit.core.llm.served_spec import load_served_llm
    from retrievekit.core.registry import MethodContext, build_method

    return {
        "method": lambda name: build_method(name, MethodContext(corpus=[])),
        "dataset": dataset_spec,
        "model": models.locate_gguf,
        "client": lambda name: load_served_llm(f"{name}:m@http://127.0.0.1:1/v1"),
        "adapter": lambda name: _registry("adapter").get(name),
        "embedder": lambda name: _registry("embedder").get(name),
        "store": open_store,
        "judge": JudgeSpec,
    }


KINDS = [
    ("method", "ep-method", "retrievekit.methods"),
    ("dataset", "ep-dataset", "retrievekit.datasets"),
    ("model", "ep-model", "retrievekit.models"),
    ("client", "ep-client", "retrievekit.llms"),
    ("adapter", "ep-adapter", "retrievekit.llm_adapters"),
    ("embedder", "ep-embedder", "retrievekit.embedders"),
    ("store", "ep-store", "retrievekit.stores"),
    ("judge", "ep-judge", "retrievekit.judges"),
]


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A package installed the standard way: its module and a ``.dist-info`` with ``entry_points.txt`` on
    ``sys.path``, declaring one part of each kind."""
    (tmp_path / f"{PLUGIN}.py").write_text(SOURCE)
    info = tmp_path / "rk_test_plugin_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: rk-test-plugin-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("".join(f"[{group}]\n{line}\n\n" for group, line in ENTRY_POINTS.items()))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    module = importlib.import_module(PLUGIN)
    yield module
    for kind, name, _ in KINDS:  # what the registries loaded from the entry points, forgotten
        _registry(kind).pop(name)
    sys.modules.pop(PLUGIN, None)


@pytest.mark.parametrize(("kind", "name", "group"), KINDS, ids=[k[0] for k in KINDS])
def test_every_kind_is_one_registry_with_its_group(kind: str, name: str, group: str) -> None:
    table = _registry(kind)
    assert isinstance(table, Registry) and table.group == group


@pytest.mark.parametrize(("kind", "name", "group"), KINDS, ids=[k[0] for k in KINDS])
def test_an_unknown_name_is_a_typed_error_listing_the_known_ones(kind: str, name: str, group: str) -> None:
    table = _registry(kind)
    with pytest.raises(UnknownNameError) as e:
        _unknown_lookups()[kind]("no-such-part")
    assert isinstance(e.value, InvalidInputError) and e.value.name == "no-such-part"
    assert list(e.value.known) == table.names()
    assert all(known in str(e.value) for known in table.names())
    with pytest.raises(UnknownNameError):
        table["no-such-part"]


@pytest.mark.parametrize(("kind", "name", "group"), KINDS, ids=[k[0] for k in KINDS])
def test_an_installed_packages_entry_point_is_listed_and_found(
    installed: Any, kind: str, name: str, group: str
) -> None:
    table = _registry(kind)
    assert name in table.names() and name in table.entry_points()
    assert _found(kind, installed)


def test_a_registered_part_replaces_and_unregisters() -> None:
    table: Registry[int] = Registry("thing", "retrievekit.things", builtin={"one": 1})
    table.register("two", 2)
    table["two"] = 22
    assert table.get("two") == 22 and table.names() == ["one", "two"] and len(table) == 2
    del table["two"]
    with pytest.raises(UnknownNameError, match="unknown thing 'two'; known: one"):
        del table["two"]
    with pytest.raises(InvalidInputError, match="non-empty name"):
        table.register(" ", 3)
    assert table.get("three", None) is None
