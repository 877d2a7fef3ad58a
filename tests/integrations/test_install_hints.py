"""Without an extra, every edge and method that needs it is one typed error naming that extra (issue #62 item 11).

Each case runs a fresh interpreter whose ``sys.meta_path`` refuses the top-level packages an extra installs, as if
they were not there, then imports every edge package, every name it exports, every module of it, loads every bench
method's factory and opens a Chroma client. Each either works (it does not need the extra) or raises retrievekit's
``MissingDependencyError`` whose message says ``pip install "retrievekit[EXTRA]"`` for an extra that provides a
refused package; a bare ``ModuleNotFoundError`` (before: ``import retrievekit.langgraph``) fails the test. Every
install hint in the source names an extra that ``pyproject.toml`` defines (before: ``retrievekit[report]``)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import tomllib

import pytest
from _paths import REPO

# the top-level packages each extra installs (that retrievekit imports)
PROVIDES = {
    "llama-index": {"llama_index"},
    "langchain": {"langchain_core", "langchain_classic"},
    "langgraph": {"langgraph", "langchain_core"},
    "local": {"outlines", "transformers", "pydivsufsort", "torch"},
    "chroma": {"chromadb"},
    "dense": {"chromadb", "sentence_transformers", "torch"},
    "serve": {"langchain_openai", "openai", "xllamacpp"},
    "bench": {"matplotlib"},
}
EDGES = ("llama_index", "langchain", "langgraph", "outlines")

_PROBE = """
    import importlib, json, pkgutil, sys, tempfile

    BLOCKED = set(json.loads(sys.argv[1]))

    class Uninstalled:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, Uninstalled())
    results = {}

    def attempt(label, action):
        try:
            action()
            results[label] = ["ok", ""]
        except BaseException as e:  # noqa: BLE001 - every outcome is reported
            results[label] = [type(e).__module__ + "." + type(e).__name__, str(e)[:400]]

    for edge in sys.argv[2].split(","):
        package = f"retrievekit.{edge}"
        attempt(package, lambda: importlib.import_module(package))
        folder = importlib.util.find_spec("retrievekit").submodule_search_locations
        for info in pkgutil.iter_modules([f"{p}/{edge}" for p in folder]):
            name = f"{package}.{info.name}"
            attempt(name, lambda: importlib.import_module(name))
        if results[package][0] == "ok":
            module = sys.modules[package]
            for export in module.__all__:
                attempt(f"{package}.{export}", lambda: getattr(module, export))

    from retrievekit.core import registry
    for method in registry.available_methods():
        attempt(f"method {method}", lambda: registry._load_factory(method))
    from retrievekit.core.index.chroma_clients import persistent_client
    attempt("persistent_client", lambda: persistent_client(tempfile.mkdtemp()))
    print(json.dumps(results))
"""


def _probe(blocked: set[str]) -> dict[str, list[str]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_PROBE), json.dumps(sorted(blocked)), ",".join(EDGES)],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    return json.loads(proc.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize(
    ("extra", "must_fail"),
    [
        ("langgraph", ["retrievekit.langgraph", "retrievekit.langgraph.graph", "method iterative"]),
        ("llama-index", ["retrievekit.llama_index", "retrievekit.llama_index.retriever"]),
        ("langchain", ["retrievekit.langchain", "retrievekit.langchain.retriever"]),
        ("local", ["retrievekit.outlines", "retrievekit.outlines.processors"]),
        ("chroma", ["persistent_client"]),
    ],
)
def test_each_edge_and_method_without_an_extra_is_one_typed_error_naming_it(extra, must_fail):
    blocked = PROVIDES[extra]
    results = _probe(blocked)
    assert len(results) > 40  # every edge's modules and names, every method
    offered = {name for name, provides in PROVIDES.items() if provides & blocked}
    wrong = {}
    for label, (kind, message) in sorted(results.items()):
        if kind == "ok":
            continue
        named = set(re.findall(r"retrievekit\[([\w-]+)\]", message))
        if kind != "retrievekit.core.errors.MissingDependencyError" or not named & offered:
            wrong[label] = f"{kind}: {message}"
    assert not wrong, "\n".join(f"{k}: {v}" for k, v in wrong.items())
    for label in must_fail:
        assert results[label][0] == "retrievekit.core.errors.MissingDependencyError", (label, results[label])
        assert f'pip install "retrievekit[{extra}]"' in results[label][1], results[label]
    if extra == "chroma":  # Chroma alone serves a served embedder: no torch asked for first
        assert results["persistent_client"][1].index("retrievekit[chroma]") < results["persistent_client"][1].find(
            "torch"
        )


def test_with_every_extra_installed_every_edge_module_and_method_imports():
    results = _probe(set())
    failed = {k: v for k, v in results.items() if v[0] != "ok"}
    assert not failed, failed


def test_every_install_hint_names_an_extra_pyproject_defines():
    extras = set(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    assert {"chroma", "dense", "bench", "langgraph", "local"} <= extras
    named: dict[str, set[str]] = {}
    for folder in ("core", "integrations"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for group in re.findall(r"retrievekit\[([\w,\s-]+)\]", path.read_text(encoding="utf-8")):
                for extra in (e.strip() for e in group.split(",")):
                    named.setdefault(extra, set()).add(str(path.relative_to(REPO)))
    assert "bench" in named and "chroma" in named
    unknown = {extra: sorted(paths) for extra, paths in named.items() if extra not in extras and extra != "EXTRA"}
    assert not unknown, unknown
