"""Input is checked before anything expensive: no model or embedder is loaded for a corpus, path or retriever that
will be refused, and every refusal is a typed error that names the problem (and the path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.documents import Document as LCDocument
from llama_index.core import Document as LIDocument

import retrievekit.core.llm.local as local_module
import retrievekit.core.training.manifest as manifest_module
from retrievekit.core.errors import EmptyCorpusError, IndexFormatError, InvalidInputError, InvalidPathError
from retrievekit.core.index.embeddings import MiniLMEmbedder
from retrievekit.core.index.store import atomic_folder
from retrievekit.core.lattice.summarize import BuildJournal
from retrievekit.core.llm import LocalLM
from retrievekit.core.registry import MethodContext, build_method
from retrievekit.core.storage import atomic_write_text
from retrievekit.core.types import Passage


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every model/embedder loader fails the test (and is recorded) if it is reached."""
    calls: list[str] = []

    def refuse(what: str) -> Any:
        def loader(*args: Any, **kwargs: Any) -> Any:
            calls.append(what)
            raise AssertionError(f"{what} was called before the input was checked")

        return loader

    monkeypatch.setattr(LocalLM, "load", refuse("LocalLM.load"))
    monkeypatch.setattr(local_module, "load_model_and_tokenizer", refuse("load_model_and_tokenizer"))
    monkeypatch.setattr(MiniLMEmbedder, "default", refuse("MiniLMEmbedder.default"))
    monkeypatch.setattr(manifest_module, "load_trained_model", refuse("load_trained_model"))
    return calls


def _edges() -> list[tuple[str, Any]]:
    from retrievekit import langchain as lc
    from retrievekit import llama_index as li

    return [
        ("li.Lattice", lambda docs, tmp: li.LatticeRetriever.from_documents(docs)),
        ("lc.Lattice", lambda docs, tmp: lc.LatticeRetriever.from_documents(docs)),
        ("li.MindRef", lambda docs, tmp: li.MindRefRetriever.from_documents(docs)),
        ("lc.MindRef", lambda docs, tmp: lc.MindRefRetriever.from_documents(docs)),
        ("li.Arm", lambda docs, tmp: li.ArmRetriever.from_documents(docs)),
        ("lc.Arm", lambda docs, tmp: lc.ArmRetriever.from_documents(docs)),
        ("li.SelfRetrieval", lambda docs, tmp: li.SelfRetrievalRetriever.from_documents(docs, model_dir=tmp)),
        ("lc.SelfRetrieval", lambda docs, tmp: lc.SelfRetrievalRetriever.from_documents(docs, model_dir=tmp)),
        ("li.hybrid", lambda docs, tmp: li.RetrieveKitRetriever.from_documents(docs)),
        ("lc.hybrid", lambda docs, tmp: lc.RetrieveKitRetriever.from_documents(docs)),
        ("li.dense", lambda docs, tmp: li.RetrieveKitRetriever.from_documents(docs, method="dense", work_dir=tmp)),
        ("lc.lattice-method", lambda docs, tmp: lc.RetrieveKitRetriever.from_documents(docs, method="lattice")),
    ]


@pytest.mark.parametrize("name", [n for n, _ in _edges()])
def test_from_documents_refuses_an_empty_corpus_before_loading_a_model(name: str, loads: list[str], tmp_path):
    build = dict(_edges())[name]
    with pytest.raises(EmptyCorpusError, match="corpus is empty"):
        build([], tmp_path)
    assert loads == []


@pytest.mark.parametrize("factory", ["create_lattice", "create_mindref", "create_arm", "create_self_retrieval"])
def test_core_builders_refuse_an_empty_corpus_before_loading_a_model(factory: str, loads: list[str], tmp_path):
    from retrievekit.core.arm.method import create_arm
    from retrievekit.core.generative.mindref import create_mindref
    from retrievekit.core.generative.self_retrieval.method import create_self_retrieval
    from retrievekit.core.lattice.method import create_lattice

    calls = {
        "create_lattice": lambda: create_lattice([]),
        "create_mindref": lambda: create_mindref([]),
        "create_arm": lambda: create_arm([]),
        "create_self_retrieval": lambda: create_self_retrieval([], model_dir=tmp_path),
    }
    with pytest.raises(EmptyCorpusError):
        calls[factory]()
    assert loads == []


@pytest.mark.parametrize(
    "method", ["lattice", "mindref", "arm", "self-retrieval", "iterative", "oneshot", "hybrid", "llm-rerank"]
)
def test_build_method_refuses_an_empty_corpus_before_the_factory_runs(method: str, loads: list[str], tmp_path):
    with pytest.raises(EmptyCorpusError):
        build_method(method, MethodContext(corpus=[], options={"model_dir": str(tmp_path)}))
    assert loads == []


def test_edges_name_an_item_that_is_not_a_document(loads: list[str]):
    from retrievekit import langchain as lc
    from retrievekit import llama_index as li

    with pytest.raises(InvalidInputError, match=r"documents\[1\] is a str, not a LangChain Document"):
        lc.MindRefRetriever.from_documents([LCDocument(page_content="x"), "y"])
    with pytest.raises(InvalidInputError, match=r"documents\[0\] is a str, not a LlamaIndex Document"):
        li.LatticeRetriever.from_documents(["y"])
    assert loads == []


def test_from_tree_with_a_missing_or_empty_folder_names_it(loads: list[str], tmp_path: Path):
    from retrievekit import langchain as lc
    from retrievekit import llama_index as li

    missing = tmp_path / "no-tree"
    for cls in (li.LatticeRetriever, lc.LatticeRetriever):
        with pytest.raises(IndexFormatError, match=f"no LATTICE tree at {missing}: the folder does not exist"):
            cls.from_tree(missing)
        with pytest.raises(IndexFormatError, match=f"no LATTICE tree at {tmp_path}: the folder has no manifest.json"):
            cls.from_tree(tmp_path)
    (tmp_path / "notes.txt").write_text("x")
    with pytest.raises(InvalidPathError, match="notes.txt is a file"):
        li.LatticeRetriever.from_tree(tmp_path / "notes.txt")
    with pytest.raises(InvalidPathError, match="notes.txt/tree cannot be a folder"):
        lc.LatticeRetriever.from_documents([LCDocument(page_content="x")], tree_dir=tmp_path / "notes.txt" / "tree")
    assert loads == []


def test_a_work_dir_under_a_file_is_a_typed_error_naming_the_path(tmp_path: Path):
    from retrievekit import langchain as lc
    from retrievekit import llama_index as li

    notes = tmp_path / "notes.txt"
    notes.write_text("x")
    bad = notes / "cache"
    with pytest.raises(InvalidPathError, match=f"work_dir {bad} cannot be a folder: {notes} is a file") as e:
        li.RetrieveKitRetriever.from_documents([LIDocument(text="red apples")], method="bm25", work_dir=bad)
    assert isinstance(e.value, OSError) and isinstance(e.value, InvalidInputError)  # old except clauses still work
    with pytest.raises(InvalidPathError, match="work_dir"):
        lc.RetrieveKitRetriever.from_documents([LCDocument(page_content="red apples")], method="bm25", work_dir=bad)
    with pytest.raises(InvalidPathError, match="is a file, not a folder"):
        MethodContext(corpus=[Passage(id="a", text="x")], work_dir=notes)
    # the shared folder helpers every index/tree/report writer goes through
    with pytest.raises(InvalidPathError, match=f"{notes} is a file"):
        with atomic_folder(bad / "bm25"):
            pass
    with pytest.raises(InvalidPathError, match=f"{notes} is a file"):
        atomic_write_text(bad / "manifest.json", "{}")
    with pytest.raises(InvalidPathError, match="tree build folder"):
        BuildJournal(bad / "tree.build")
    assert notes.read_text() == "x"


def test_the_iterative_agent_refuses_an_empty_retriever_list(loads: list[str]):
    from retrievekit.langgraph import ScriptedToolChatModel, build_iterative_agent

    llm = ScriptedToolChatModel(replies=["x"])
    with pytest.raises(EmptyCorpusError, match="retriever is an empty list"):
        build_iterative_agent(llm, [])
    with pytest.raises(InvalidInputError, match="item 1 is a str"):
        build_iterative_agent(llm, [Passage(id="a", text="x"), "not a passage"])
    assert loads == []
