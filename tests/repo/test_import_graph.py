"""No import cycle among retrievekit modules, and the small shared modules import no model library.

The graph is read from the source with ``ast``: every ``import`` / ``from ... import`` anywhere in a module (lazy ones
inside functions included, ``if TYPE_CHECKING:`` blocks excluded) and every ``import_module("...")`` of a literal.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from _import_graph import _imported, cycles, import_graph


def test_the_graph_sees_the_modules_and_their_imports():
    graph = import_graph()
    assert len(graph) > 100
    assert "retrievekit.core.registry" in graph["retrievekit.core.llm.judge_hooks"]
    call_time = ast.parse('importlib.import_module("retrievekit.core.judge")')  # no core module imports so any more
    assert "retrievekit.core.judge" in _imported(call_time)  # import_module("...") at call time
    assert "retrievekit.core.llm.judge_hooks" in graph["retrievekit.core.lattice.method"]  # a lazy import


def test_the_checker_finds_a_cycle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_retrievekit_modules():
    assert cycles(import_graph()) == []


def test_the_retriever_module_is_only_the_protocol():
    graph = import_graph()
    assert graph["retrievekit.core.retriever"] <= {"retrievekit.core.trace", "retrievekit.core.types"}


@pytest.mark.parametrize(
    "module",
    [
        "retrievekit.core.retriever",
        "retrievekit.core.checks",
        "retrievekit.core.options",
        "retrievekit.core.registry",
        "retrievekit.core.llm.judge_hooks",
        "retrievekit.core.llm.concurrency",
        "retrievekit.core.llm.tokens",
        "retrievekit.core.llm.resolve",
        "retrievekit.core.llm.base",
    ],
)
def test_shared_modules_import_alone_without_model_libraries(module):
    code = (
        "import importlib, sys\n"
        f"importlib.import_module({module!r})\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'transformers', 'outlines',"
        " 'llama_index', 'langchain_core', 'langgraph')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_moved_names_still_import_from_retriever_with_a_warning():
    import retrievekit.core.retriever as retriever
    from retrievekit.core.checks import check_k
    from retrievekit.core.llm.judge_hooks import judge_relevance
    from retrievekit.core.registry import MethodContext

    for name, obj in [("check_k", check_k), ("MethodContext", MethodContext), ("judge_relevance", judge_relevance)]:
        with pytest.warns(DeprecationWarning, match=f"retrievekit.core.retriever.{name} moved to"):
            assert getattr(retriever, name) is obj
    with pytest.raises(AttributeError):
        retriever._judge_from_options  # noqa: B018 - the former private alias is gone
