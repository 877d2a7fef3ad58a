"""The ```python blocks of README.md and docs/, for tests/integrations/test_docs_blocks.py.

Every block is run or marked. A block is marked by an HTML comment on the line just before it:
``<!-- not-run: REASON -->`` (it cannot run here, and why) or ``<!-- tested: tests/PATH.py ... -->`` (another test
runs it as written). :func:`run_page` runs a page's other blocks in order in one namespace, the way a reader would
paste them, with the names and the few substitutions (a server's URL for a placeholder) that its test supplies.

A block whose first line is ``# PATH.py`` is a file: it is written under a temporary folder and imported where it
stands (``core/retrievekit/...`` as that module of retrievekit, ``tests/...`` by its file, anything else from the
temporary folder on ``sys.path``); its module is bound as ``file:PATH`` in the namespace.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _paths import REPO

PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (REPO / "docs").glob("*.md"))]
PAGES += sorted(f"docs/methods/{p.name}" for p in (REPO / "docs" / "methods").glob("*.md"))

_FENCE = re.compile(r"^(?P<indent> *)```python[ \t]*\n(?P<code>.*?)^(?P=indent)```[ \t]*$", re.S | re.M)
_MARK = re.compile(r"<!--\s*(?P<kind>not-run|tested)\s*:\s*(?P<reason>.*?)\s*-->\s*$", re.S)
_FILE = re.compile(r"#\s*(?P<path>[\w./-]+\.py)\s*$")


@dataclass(frozen=True)
class Block:
    """One ```python block: its page, first line (of the fence), code, and its mark (``""`` when it is run)."""

    page: str
    line: int
    code: str
    mark: str = ""
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def file(self) -> str | None:
        """The path a file block names on its first line, else None."""
        found = _FILE.fullmatch(self.code.splitlines()[0].strip()) if self.code.strip() else None
        return found.group("path") if found else None


def blocks(page: str) -> list[Block]:
    """Every ```python block of ``page`` (relative to the repository), in order, with its mark."""
    text = (REPO / page).read_text(encoding="utf-8")
    found = []
    for m in _FENCE.finditer(text):
        before = text[: m.start()].rstrip()
        last = before[before.rfind("<!--") :] if before.endswith("-->") else ""
        mark = _MARK.fullmatch(last)
        code = "\n".join(line[len(m.group("indent")) :] for line in m.group("code").splitlines())
        found.append(
            Block(
                page=page,
                line=text[: m.start()].count("\n") + 1,
                code=code + "\n",
                mark=mark.group("kind") if mark else "",
                reason=mark.group("reason") if mark else "",
            )
        )
    return found


def all_blocks() -> list[Block]:
    """Every block of every page."""
    return [b for page in PAGES for b in blocks(page)]


class _Modules:
    """File blocks written under ``root`` and made importable; everything undone by :meth:`close`."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.saved_paths: list[tuple[Any, list[str]]] = []
        self.before = set(sys.modules)
        sys.path.insert(0, str(root))

    def write(self, block: Block) -> None:
        path = self.root / str(block.file)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block.code, encoding="utf-8")
        if block.file and block.file.startswith("core/retrievekit/"):
            self._extend(Path(block.file).relative_to("core").with_suffix("").parts)

    def _extend(self, parts: tuple[str, ...]) -> None:
        """Let the deepest package of retrievekit that exists also look in the temporary folder."""
        for n in range(len(parts) - 1, 0, -1):
            name = ".".join(parts[:n])
            try:
                package = importlib.import_module(name)
            except ImportError:
                continue
            extra = str(self.root / "core" / Path(*parts[:n]))
            if extra not in package.__path__:
                self.saved_paths.append((package, list(package.__path__)))
                package.__path__.append(extra)
            return

    def load(self, file: str) -> Any:
        if file.startswith("core/retrievekit/"):
            parts = list(Path(file).relative_to("core").with_suffix("").parts)
            return importlib.import_module(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        if file.startswith("tests/"):
            name = "docs_" + re.sub(r"\W", "_", file[: -len(".py")])
            spec = importlib.util.spec_from_file_location(name, self.root / file)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            return module
        return importlib.import_module(".".join(Path(file).with_suffix("").parts))

    def close(self) -> None:
        for package, path in reversed(self.saved_paths):
            package.__path__[:] = path
        for name in set(sys.modules) - self.before:
            module = sys.modules[name]
            if str(self.root) in str(getattr(module, "__file__", "") or ""):
                del sys.modules[name]
        sys.path.remove(str(self.root))
        importlib.invalidate_caches()


def _substitute(code: str, subs: Mapping[str, str], used: set[str]) -> str:
    for old, new in subs.items():
        if old in code:
            code = code.replace(old, new)
            used.add(old)
    return code


@contextlib.contextmanager
def run_page(
    page: str,
    namespace: dict[str, Any],
    root: Path,
    *,
    subs: Mapping[str, str] | None = None,
    before: Mapping[int, Mapping[str, Any]] | None = None,
    handlers: Mapping[str, Callable[[str, dict[str, Any]], None]] | None = None,
) -> Iterator[list[Block]]:
    """Run the unmarked blocks of ``page`` in order in ``namespace``; yield them (the files stay importable until
    the ``with`` ends).

    ``subs``: text replacements (a placeholder URL by a served one), each of which must be used;
    ``before``: names bound before the n-th run block (1-based; a page whose sections mean different objects by one
    name); ``handlers``: blocks that are a fragment of a file (a registry entry), by their first line, each run by
    its handler instead of ``exec``, and each of which must be used. Files are written under ``root``.
    """
    subs, before, handlers = dict(subs or {}), dict(before or {}), dict(handlers or {})
    run = [b for b in blocks(page) if not b.mark]
    used: set[str] = set()
    modules = _Modules(root)
    try:
        for b in run:
            if b.file:
                modules.write(b)
        for n, b in enumerate(run, start=1):
            namespace.update(before.get(n, {}))
            first = b.code.strip().splitlines()[0].strip()
            if first in handlers:
                handlers[first](b.code, namespace)
                used.add(first)
            elif b.file:
                namespace[f"file:{b.file}"] = modules.load(b.file)
            else:
                exec(compile(_substitute(b.code, subs, used), b.id, "exec"), namespace)  # noqa: S102 - the docs
        unused = (set(subs) | set(handlers)) - used
        assert not unused, f"{page}: no block has {sorted(unused)} any more (update its test)"
        yield run
    finally:
        modules.close()


def run_tests(module: Any, fixtures: Mapping[str, Any]) -> Iterator[str]:
    """Call every ``test_*`` function of a file block's module with the fixtures its parameters name; yield names."""
    import inspect

    for name, fn in sorted(vars(module).items()):
        if name.startswith("test_") and callable(fn):
            fn(*[fixtures[p] for p in inspect.signature(fn).parameters])
            yield name
