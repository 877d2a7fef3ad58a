"""The package layers of docs/architecture.md, enforced: each module imports only what its layer may import.

The rules (one per layer) are the table in docs/architecture.md; the test reads the import graph from the source
(lazy imports and ``import_module("...")`` strings included) and names every edge that breaks a rule.
"""

from __future__ import annotations

import pytest
from _import_graph import import_graph
from _paths import REPO

CORE = "retrievekit.core"
# Layer 0: vocabulary every other module shares; no model library, no other retrievekit layer.
FOUNDATION = {
    "errors",
    "types",
    "trace",
    "paths",
    "threads",
    "deadline",
    "checks",
    "options",
    "spans",
    "sources",
    "retriever",
    "memo",
    "renamed",
    "descriptors",
    "fallbacks",
    "storage",
    "group_offsets",
    "plugins",
}
# Layer 1: shared machinery (models, indexes, the method registry, fine-tuning).
MACHINERY = {"llm", "index", "registry", "training", "edge", "fakes"}
# Layer 3: the applications over everything else.
APPS = {"eval", "cli", "demo", "demo_snapshot"}
# Layer 2: one package per paper, and the relevance judge: read from the package tree, so a new method's package
# needs no edit here (docs/adding-a-method.md). Every other core package is named above.
METHODS = {
    p.name
    for p in (REPO / "core" / "retrievekit" / "core").iterdir()
    if (p / "__init__.py").is_file() and p.name not in FOUNDATION | MACHINERY | APPS
}
# Integration edges that wrap another edge (and may import it).
EDGE_WRAPS = {
    "retrievekit.langgraph": {"retrievekit.langchain"},  # LangGraph speaks langchain-core messages and tools
    "retrievekit.llama_index": {"retrievekit.langgraph"},  # the agent as a LlamaIndex retriever
}
EDGES = ("retrievekit.llama_index", "retrievekit.langchain", "retrievekit.langgraph", "retrievekit.outlines")


def layer_of(module: str) -> tuple[int, str]:
    """``(layer, unit)`` of a retrievekit module: 0-3 for core, 4 for an edge."""
    if module == CORE:
        return 0, "package"
    if module.startswith(CORE + "."):
        unit = module.split(".")[2]
        for layer, units in enumerate((FOUNDATION, MACHINERY, METHODS, APPS)):
            if unit in units:
                return layer, unit
        raise AssertionError(f"{module}: {unit!r} is in no layer; add it to docs/architecture.md and this test")
    for edge in EDGES:
        if module == edge or module.startswith(edge + "."):
            return 4, edge
    raise AssertionError(f"{module} is neither core nor an integration edge")


def allowed(importer: str, imported: str) -> bool:
    """The one rule per layer (docs/architecture.md, "Layers")."""
    layer, unit = layer_of(importer)
    other_layer, other_unit = layer_of(imported)
    if layer == 4:  # an edge: any core module, its own edge, or an edge it wraps
        edge = unit
        return other_layer < 4 or other_unit == edge or other_unit in EDGE_WRAPS.get(edge, set())
    if other_layer == 4:
        return False  # core never names an integration
    if layer == 3:
        return True
    if layer == 2:  # a method: lower layers and itself (the judge's hooks are in the model layer)
        return other_layer < 2 or other_unit == unit
    return other_layer <= layer  # foundation imports foundation; machinery imports machinery and foundation


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every edge of ``graph`` that breaks a layer rule, as ``"a -> b"``."""
    return [f"{a} -> {b}" for a in sorted(graph) for b in sorted(graph[a]) if not allowed(a, b)]


def test_every_module_has_a_layer():
    for module in import_graph():
        layer_of(module)


def test_the_method_packages_are_the_papers_and_the_judge():
    assert {"lattice", "arm", "oneshot", "iterative", "generative", "judge"} <= METHODS


def test_every_built_in_method_is_built_by_a_method_package_or_the_baselines():
    from retrievekit.core.registry import _BUILTIN

    for name, path in _BUILTIN.items():
        unit = path.split(":")[0].split(".")[2]
        assert unit in METHODS or path.startswith(f"{CORE}.index.baselines:"), f"{name}: {path}"


def test_no_import_breaks_a_layer_rule():
    assert violations(import_graph()) == []


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("retrievekit.core.types", "retrievekit.core.llm.local"),  # foundation importing machinery
        ("retrievekit.core.index.bm25", "retrievekit.core.lattice.method"),  # machinery importing a method
        ("retrievekit.core.lattice.method", "retrievekit.core.arm.method"),  # a method importing another method
        ("retrievekit.core.lattice.listwise", "retrievekit.core.judge.scorer"),  # a method importing the judge
        ("retrievekit.core.judge.cli", "retrievekit.core.eval.datasets"),  # a method's command line is no app
        ("retrievekit.core.arm.verify", "retrievekit.core.eval.runner"),  # a method importing the harness
        ("retrievekit.core.eval.runner", "retrievekit.langchain.retriever"),  # core importing an edge
        ("retrievekit.langchain.retriever", "retrievekit.llama_index.retriever"),  # an edge importing another edge
    ],
)
def test_the_rules_refuse_what_they_should(importer, imported):
    assert violations({importer: {imported}}) == [f"{importer} -> {imported}"]


@pytest.mark.parametrize(
    ("importer", "imported"),
    [
        ("retrievekit.core.lattice.method", "retrievekit.core.llm.judge_hooks"),
        ("retrievekit.core.cli.train_judge", "retrievekit.core.eval.datasets"),
        ("retrievekit.core.index.bm25", "retrievekit.core.registry"),
        ("retrievekit.langgraph.graph", "retrievekit.langchain.llm"),
    ],
)
def test_the_rules_allow_the_documented_edges(importer, imported):
    assert violations({importer: {imported}}) == []


def test_the_architecture_page_names_every_unit():
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    for unit in sorted(FOUNDATION | MACHINERY | METHODS | APPS):
        assert f"`{unit}" in page, unit
    for edge in EDGES:
        assert edge.split(".")[1] in page
