"""The framework-free core names no framework or integration module; integrations register themselves."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys

import pytest
from _paths import REPO as REPO_ROOT

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.registry import METHOD_ENTRY_POINT_GROUP, MethodContext, available_methods, build_method

CORE = REPO_ROOT / "core" / "retrievekit" / "core"
FORBIDDEN = (
    "retrievekit.langgraph",
    "retrievekit.langchain",
    "retrievekit.llama_index",
    "retrievekit.outlines",
    "langgraph",
    "langchain",
    "langchain_core",
    "langchain_classic",
    "llama_index",
)
# a module path, optionally with ":attribute" (an entry-point or lazy registry string)
_MODULE_PATH = re.compile(r"^(?P<module>[A-Za-z_][\w.]*)(:[\w.]+)?$")


def _forbidden(module: str) -> bool:
    return any(module == f or module.startswith(f + ".") for f in FORBIDDEN)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _named_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Modules the code imports or names as a string: import statements, ``import_module("...")``-style calls and
    ``"package.module[:attr]"`` strings (docstrings, which only describe, are skipped)."""
    found: list[tuple[int, str]] = []
    docstrings = _docstring_nodes(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if func in ("import_module", "__import__", "find_spec") and isinstance(node.args[0].value, str):
                found.append((node.lineno, node.args[0].value))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            m = _MODULE_PATH.match(node.value.strip())
            if m and ("." in node.value or ":" in node.value):
                found.append((node.lineno, m.group("module")))
    return found


def test_core_source_names_no_framework_or_integration_module():
    offenders = []
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 20
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        offenders += [
            f"{path.relative_to(CORE)}:{line}: {mod}" for line, mod in _named_modules(tree) if _forbidden(mod)
        ]
    assert not offenders, "core must not name integration modules:\n" + "\n".join(offenders)


def test_the_checker_sees_registry_strings_imports_and_dynamic_imports():
    src = (
        '"""Docs may mention retrievekit.langgraph."""\n'
        "import langgraph.graph\n"
        "from langchain_core.messages import AIMessage\n"
        'REG = {"x": "retrievekit.langgraph.method:build_iterative"}\n'
        'importlib.import_module("llama_index")\n'
        'path = Path(".") / "llama_index" / "core"\n'
    )
    named = [m for _, m in _named_modules(ast.parse(src)) if _forbidden(m)]
    assert sorted(named) == [
        "langchain_core.messages",
        "langgraph.graph",
        "llama_index",
        "retrievekit.langgraph.method",
    ]


def test_iterative_is_registered_by_the_langgraph_entry_point():
    eps = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=METHOD_ENTRY_POINT_GROUP)}
    assert eps.get("iterative") == "retrievekit.langgraph.method:build_iterative"
    assert "iterative" in available_methods()


def test_listing_methods_imports_no_integration():
    code = (
        "import sys\n"
        "from retrievekit.core.registry import available_methods\n"
        "assert 'iterative' in available_methods()\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain_core', 'llama_index')"
        " or m.startswith(('retrievekit.langgraph', 'retrievekit.langchain', 'retrievekit.llama_index'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_bench_builds_iterative_through_the_entry_point():
    from retrievekit.core.types import Passage

    ctx = MethodContext(corpus=[Passage(id="a", text="x")], options={"base": "nope"})
    with pytest.raises(InvalidInputError, match="option base must be one of"):  # raised by the langgraph factory
        build_method("iterative", ctx)
