"""No module in core/ or integrations/ grows past its seams: at most 600 lines each (split it where its own
structure divides it; docs/adding-a-method.md)."""

from __future__ import annotations

from _paths import REPO

PACKAGES = ("core", "integrations")
MAX_LINES = 600


def long_modules(max_lines: int = MAX_LINES) -> list[str]:
    """``"path (N lines)"`` for every Python module under the packages longer than ``max_lines``."""
    out = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            n = len(path.read_text(encoding="utf-8").splitlines())
            if n > max_lines:
                out.append(f"{path.relative_to(REPO)} ({n} lines)")
    return out


def test_the_check_sees_a_long_module() -> None:
    assert long_modules(max_lines=10), "every package has a module over 10 lines"


def test_no_module_in_core_or_integrations_is_over_600_lines() -> None:
    assert long_modules() == []
