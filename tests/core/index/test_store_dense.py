"""The ``store`` option of ``dense`` and ``hybrid``: the corpus embedded into a faiss store instead of Chroma, built
once in the work dir and reopened, with the same answers as the Chroma index over the same embedder."""

from __future__ import annotations

import pytest
from _corpora import FRUIT

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.baselines import build_dense, build_hybrid
from retrievekit.core.index.embeddings import MiniLMEmbedder, minilm_model_path
from retrievekit.core.index.store_dense import dense_in_store
from retrievekit.core.registry import MethodContext

QUERIES = ["tropical fruit", "programming language for memory safety", "highest mountain", "a river in Africa"]


class CountingEmbedder(MiniLMEmbedder):
    """all-MiniLM-L6-v2 (the default embedder), counting the texts it embeds."""

    texts = 0

    def embed_documents(self, texts):
        self.texts += len(texts)
        return super().embed_documents(texts)


def _ranked(retriever, k=3):
    return [[h.id for h in retriever.search(q, k=k)] for q in QUERIES]


def test_dense_in_a_faiss_store_answers_as_the_chroma_index_and_is_reopened_without_embedding_again(tmp_path):
    embedder = CountingEmbedder(minilm_model_path())
    chroma = build_dense(MethodContext(corpus=FRUIT, embedder=embedder))
    faiss = build_dense(MethodContext(corpus=FRUIT, embedder=embedder, options={"store": "faiss"}, work_dir=tmp_path))
    assert type(faiss.store).__name__ == "FaissStore"
    assert _ranked(faiss) == _ranked(chroma)
    faiss.close()
    embedded = embedder.texts
    again = build_dense(MethodContext(corpus=FRUIT, embedder=embedder, options={"store": "faiss"}, work_dir=tmp_path))
    # reopening embeds only the store's model probes (a few fixed texts), never the corpus again
    assert embedder.texts - embedded < len(FRUIT), "a complete store in the work dir was embedded again"
    assert _ranked(again) == _ranked(chroma)
    assert [p.name.startswith("dense-faiss-") for p in tmp_path.iterdir() if p.is_dir()].count(True) == 1


def test_hybrid_takes_the_store_option_for_its_dense_side(tmp_path):
    ctx = MethodContext(corpus=FRUIT, options={"store": "faiss"}, work_dir=tmp_path)
    hybrid = build_hybrid(ctx)
    assert [h.id for h in hybrid.search("yellow tropical fruit", k=1)] == ["banana"]
    assert any(p.name.startswith("dense-faiss-") for p in tmp_path.iterdir())


def test_a_build_killed_half_way_or_a_damaged_folder_is_built_again(tmp_path):
    from retrievekit.core.fakes import WordCountEmbedder

    folder = tmp_path / "dense-faiss"
    (tmp_path / "dense-faiss.building").mkdir()  # what a killed build leaves
    (tmp_path / "dense-faiss.building" / "junk").write_text("half")
    first = dense_in_store(FRUIT, "faiss", WordCountEmbedder(), folder)
    assert len(first) == len(FRUIT) and not (tmp_path / "dense-faiss.building").exists()
    first.close()
    for f in folder.iterdir():  # damaged: every file emptied
        if f.is_file():
            f.write_bytes(b"")
    assert len(dense_in_store(FRUIT, "faiss", WordCountEmbedder(), folder)) == len(FRUIT)


@pytest.mark.parametrize("store", ["qdrant", "faiss-memory", "chroma-server"])
def test_a_store_kind_that_cannot_hold_a_built_corpus_is_refused_typed(store):
    with pytest.raises(InvalidInputError, match="option store must be one of chroma, faiss"):
        build_dense(MethodContext(corpus=FRUIT, options={"store": store}))
