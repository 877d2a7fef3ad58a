"""Every function in core/ and integrations/ reads as a short list of named steps: at most 80 lines each."""

from __future__ import annotations

import ast

from _paths import REPO as REPO_ROOT

ROOT = REPO_ROOT
PACKAGES = ("core", "integrations")
MAX_LINES = 80
"""Counted from ``def`` to the function's last line, docstring and nested functions included."""


def long_functions(source: str, label: str, max_lines: int = MAX_LINES) -> list[str]:
    """``"label:line name (N lines)"`` for every function or method (nested too) of ``source`` over ``max_lines``."""
    out = []
    for node in ast.walk(ast.parse(source, filename=label)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = (node.end_lineno or node.lineno) - node.lineno + 1
            if n > max_lines:
                out.append(f"{label}:{node.lineno} {node.name} ({n} lines)")
    return out


def test_the_check_counts_from_def_to_the_last_line() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_LINES - 2))
    source = (
        f'def fits():\n    """Doc."""\n{body}\n\n\n'
        f'class C:\n    async def too_long(self):\n        """Doc."""\n{body.replace("    ", "        ")}\n'
        "        return 1\n"
    )
    assert long_functions(source, "x.py") == [f"x.py:{MAX_LINES + 4} too_long ({MAX_LINES + 1} lines)"]


def test_no_function_in_core_or_integrations_is_over_80_lines() -> None:
    files = sorted(p for pkg in PACKAGES for p in (ROOT / pkg).rglob("*.py"))
    assert files, "no Python files found under core/ and integrations/"
    offenders = [
        line for f in files for line in long_functions(f.read_text(encoding="utf-8"), f.relative_to(ROOT).as_posix())
    ]
    assert not offenders, f"functions over {MAX_LINES} lines; split them into named steps:\n" + "\n".join(offenders)
