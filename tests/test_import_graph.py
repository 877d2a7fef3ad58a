"""No import cycle among retrievekit modules, and the small shared modules import no model library.

The graph is read from the source with ``ast``: every ``import`` / ``from ... import`` anywhere in a module (lazy ones
inside functions included, ``if TYPE_CHECKING:`` blocks excluded) and every ``import_module("...")`` of a literal.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "core", ROOT / "integrations")


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for base in SOURCES:
        for path in base.rglob("*.py"):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return skip


def _imported(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    skip = _type_checking_nodes(tree)
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}  # ``from pkg import module``
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func == "import_module" and isinstance(node.args[0].value, str):
                names.add(node.args[0].value)
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the retrievekit modules it imports."""
    mods = _modules()
    return {
        name: {m for m in _imported(ast.parse(path.read_text(encoding="utf-8"))) if m in mods and m != name}
        for name, path in mods.items()
    }


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_the_graph_sees_the_modules_and_their_imports():
    graph = import_graph()
    assert len(graph) > 100
    assert "retrievekit.core.registry" in graph["retrievekit.core.judge.hooks"]
    assert "retrievekit.core.judge" in graph["retrievekit.core.judge.hooks"]  # import_module("...") at call time
    assert "retrievekit.core.judge.hooks" in graph["retrievekit.core.lattice.method"]  # a lazy import


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
        "retrievekit.core.judge.hooks",
        "retrievekit.core.llm.concurrency",
        "retrievekit.core.llm.tokens",
        "retrievekit.core.llm.names",
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
    from retrievekit.core.judge.hooks import judge_relevance
    from retrievekit.core.registry import MethodContext

    for name, obj in [("check_k", check_k), ("MethodContext", MethodContext), ("judge_relevance", judge_relevance)]:
        with pytest.warns(DeprecationWarning, match=f"retrievekit.core.retriever.{name} moved to"):
            assert getattr(retriever, name) is obj
    with pytest.raises(AttributeError):
        retriever._judge_from_options  # noqa: B018 - the former private alias is gone
