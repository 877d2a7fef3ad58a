"""The method edges' thin faces (issue #31 item 2): one constructor in each framework's base class, a typed name for
the wrapped core (``CoreAlias``), the former constructor keyword answered with a warning, each class's own default
``k`` kept; the LlamaIndex postprocessors and LangChain compressors share their trace handling through one base.

Real components: LATTICE's searcher over a flat tree with a scripted scoring LLM (the point: no model is needed to
check how the edge wraps the core), LlamaIndex's and LangChain's real retriever base classes.
"""

from __future__ import annotations

import pytest

from retrievekit.core.fakes import WordScoreLLM
from retrievekit.core.lattice.search import Lattice
from retrievekit.core.lattice.tree import SemanticTree
from retrievekit.core.types import Passage
from retrievekit.langchain import LatticeRetriever as LCLattice
from retrievekit.langchain import MindRefRetriever as LCMindRef
from retrievekit.langchain import OneShotCompressor
from retrievekit.langchain.traced import TracedCompressor
from retrievekit.llama_index import JudgeReranker, OneShotPostprocessor
from retrievekit.llama_index import LatticeRetriever as LILattice
from retrievekit.llama_index import MindRefRetriever as LIMindRef
from retrievekit.llama_index import SelfRetrievalRetriever as LISelfRetrieval
from retrievekit.llama_index.traced import TracedPostprocessor


def _lattice() -> Lattice:
    return Lattice(SemanticTree.flat([Passage(id="a", text="sun"), Passage(id="b", text="rain")]), WordScoreLLM("sun"))


def test_the_core_is_named_by_its_method_in_both_frameworks() -> None:
    core = _lattice()
    li, lc = LILattice(core, similarity_top_k=1), LCLattice(retriever=core, k=1)
    assert li.lattice is core and lc.lattice is core
    assert [n.node.node_id for n in li.retrieve("solar")] == ["a"] == [d.id for d in lc.invoke("solar")]


def test_the_former_keyword_still_builds_the_retriever_with_a_deprecation_warning() -> None:
    core = _lattice()
    with pytest.warns(DeprecationWarning, match=r"LatticeRetriever\(lattice=...\) is deprecated"):
        r = LILattice(lattice=core, similarity_top_k=1)
    assert r.lattice is core and [n.node.node_id for n in r.retrieve("solar")] == ["a"]


def test_a_wrong_or_missing_core_argument_is_a_type_error_naming_the_class() -> None:
    with pytest.raises(TypeError, match=r"LatticeRetriever\(\) got unexpected keyword arguments \['arm'\]"):
        LILattice(arm=_lattice())
    with pytest.raises(TypeError, match=r"LatticeRetriever\(\) got the core retriever more than once"):
        LILattice(_lattice(), lattice=_lattice())
    with pytest.raises(TypeError, match=r"LatticeRetriever\(\) needs the core retriever it wraps"):
        LILattice()


def test_each_method_keeps_its_own_default_k() -> None:
    assert (LILattice.similarity_top_k, LIMindRef.similarity_top_k, LISelfRetrieval.similarity_top_k) == (10, 2, 5)
    assert LILattice(_lattice()).similarity_top_k == 10
    assert LCMindRef.model_fields["k"].default == 2


def test_postprocessors_and_compressors_share_one_trace_base() -> None:
    assert issubclass(JudgeReranker, TracedPostprocessor) and issubclass(OneShotPostprocessor, TracedPostprocessor)
    assert issubclass(OneShotCompressor, TracedCompressor)
    assert (JudgeReranker.class_name(), OneShotPostprocessor.class_name()) == ("JudgeReranker", "OneShotPostprocessor")
