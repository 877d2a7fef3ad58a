"""The retriever protocol every method implements, and the method registry ``retrievekit bench`` uses.

A retriever is anything with ``search(query, k, trace=None) -> list[ScoredHit]``.
Methods are registered by name with a factory that builds a retriever over a
corpus; later methods (LATTICE, ARM, ...) add themselves with
:func:`register_method`.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> {"bm25", "dense", "hybrid"} <= set(available_methods())
    True
    >>> r = build_method("bm25", MethodContext(corpus=[Passage(id="a", text="red apples"), Passage(id="b", text="blue sky")]))
    >>> r.search("apples", k=1)[0].id
    'a'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from retrievekit.core.errors import EmptyCorpusError, EmptyQueryError, InvalidInputError
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit, Table, TableRow, ensure_text

__all__ = [
    "MethodContext",
    "Retriever",
    "available_methods",
    "build_method",
    "check_corpus",
    "check_k",
    "check_query",
    "option_bool",
    "register_method",
]


@runtime_checkable
class Retriever(Protocol):
    """Anything that returns scored hits for a query.

    Examples:
        >>> class Const:
        ...     def search(self, query, k=10, *, trace=None):
        ...         return []
        >>> isinstance(Const(), Retriever)
        True
    """

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Return at most ``k`` hits, best first."""
        ...


def check_query(query: object) -> str:
    """Validate a query: UTF-8 text, not empty or whitespace.

    Examples:
        >>> check_query("  hi ")
        '  hi '
        >>> check_query("   ")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyQueryError: query is empty (or only whitespace)
    """
    text = ensure_text(query, field_name="query")
    if not text.strip():
        raise EmptyQueryError("query is empty (or only whitespace)")
    return text


def check_corpus(objects: Iterable[DataObject]) -> list[DataObject]:
    """Validate a corpus: at least one object, unique ids, some non-empty text.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> len(check_corpus([Passage(id="a", text="x")]))
        1
        >>> check_corpus([])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    objs = list(objects)
    if not objs:
        raise EmptyCorpusError("the corpus is empty: nothing to index")
    seen: set[str] = set()
    for o in objs:
        if not isinstance(o, (Passage, Table, TableRow)):
            raise InvalidInputError(f"corpus items must be Passage/Table/TableRow, got {type(o).__name__}")
        if o.id in seen:
            raise InvalidInputError(f"duplicate object id {o.id!r} in the corpus (ids must be unique)")
        seen.add(o.id)
    if not any(o.index_text().strip() for o in objs):
        raise EmptyCorpusError(f"all {len(objs)} objects have empty text: nothing to index")
    return objs


def check_k(k: object) -> int:
    """Validate ``k`` (a positive int).

    Examples:
        >>> check_k(3)
        3
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return k


def option_bool(name: str, value: Any) -> bool:
    """Read a boolean method option (``--option filter=true``): bools, 0/1, and true/false/yes/no strings.

    Examples:
        >>> option_bool("filter", "yes"), option_bool("crop", 0)
        (True, False)
        >>> option_bool("filter", "maybe")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: option filter must be true/false, got 'maybe'
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.lower() in ("true", "1", "yes")
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise InvalidInputError(f"option {name} must be true/false, got {value!r}")


@dataclass(frozen=True)
class MethodContext:
    """What a method factory gets: the corpus and run options.

    Attributes:
        corpus: objects to index.
        work_dir: a folder the method may cache indexes in (None: in memory / temp).
        llm: name of the local LLM to use (``smollm2`` or ``qwen0.5b``) or None.
        options: method-specific options (e.g. ``{"budget": 4000}``).

    Examples:
        >>> MethodContext(corpus=[]).options
        {}
    """

    corpus: Sequence[DataObject]
    work_dir: Path | None = None
    llm: str | None = None
    options: dict[str, Any] = field(default_factory=dict)


MethodFactory = Callable[[MethodContext], Retriever]

_BUILTIN: dict[str, str] = {
    "bm25": "retrievekit.core.index.baselines:build_bm25",
    "dense": "retrievekit.core.index.baselines:build_dense",
    "hybrid": "retrievekit.core.index.baselines:build_hybrid",
    "oneshot": "retrievekit.core.oneshot.method:build_oneshot",
    "mindref": "retrievekit.core.generative.mindref:build_mindref",
    "iterative": "retrievekit.langgraph.method:build_iterative",
    "lattice": "retrievekit.core.lattice.method:build_lattice",
    "llm-rerank": "retrievekit.core.lattice.method:build_llm_rerank",
    "arm": "retrievekit.core.arm.method:build_arm",
    "arm-no-mip": "retrievekit.core.arm.method:build_arm_no_mip",
    "arm-no-verify": "retrievekit.core.arm.method:build_arm_no_verify",
}
_REGISTRY: dict[str, MethodFactory] = {}


def register_method(name: str, factory: MethodFactory | str) -> None:
    """Register a method factory (or a lazy ``"module:function"`` path) under ``name``.

    Examples:
        >>> register_method("my-bm25", "retrievekit.core.index.baselines:build_bm25")
        >>> "my-bm25" in available_methods()
        True
    """
    if isinstance(factory, str):
        _BUILTIN[name] = factory
        _REGISTRY.pop(name, None)
    else:
        _REGISTRY[name] = factory


def available_methods() -> list[str]:
    """Names of all registered methods, sorted.

    Examples:
        >>> "hybrid" in available_methods()
        True
    """
    return sorted(set(_BUILTIN) | set(_REGISTRY))


def build_method(name: str, ctx: MethodContext) -> Retriever:
    """Build the retriever registered as ``name`` over ``ctx.corpus``.

    Examples:
        >>> build_method("nope", MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown method 'nope'; available: ...
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        path = _BUILTIN.get(name)
        if path is None:
            raise InvalidInputError(f"unknown method {name!r}; available: {', '.join(available_methods())}")
        module, _, attr = path.partition(":")
        factory = getattr(importlib.import_module(module), attr)
        _REGISTRY[name] = factory
    return factory(ctx)
