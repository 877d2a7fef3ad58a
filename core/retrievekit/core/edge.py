"""What the LlamaIndex and LangChain edges share, written once: a fix here lands in both frameworks.

Each framework edge is a thin, typed face over these steps; only the framework's own types (nodes or documents,
its LLM wrapper, its callback events) stay in ``integrations/``:

1. :func:`caller_passage` -- one caller document (id, text, metadata) as a core passage;
2. :func:`split_corpus` -- a mixed list of caller documents and core objects as the corpus a method indexes;
3. :func:`build_for_edge` -- a registered method built over the corpus (``from_documents(method=...)``);
4. :func:`traced_search` -- one search with its own trace, kept as the edge's ``last_trace`` and published;
5. :func:`hit_metadata` / :func:`close_core` -- a hit's metadata for a new node or document, and closing;
6. :class:`CoreAlias` -- a method edge's typed name for its core object (``ArmRetriever(...).arm``);
7. :func:`lazy_exports` -- an edge package's names, each imported from its module on first use;
8. :func:`require_extras` -- an edge package's framework checked at import: a missing one is a
   :class:`~retrievekit.core.errors.MissingDependencyError` naming the extra that provides it.

An edge's ``llm=`` goes to the method as the user gave it: a name, a served spec, a framework's model or a
retrievekit model, resolved once by :func:`~retrievekit.core.llm.resolve.resolve_llm` (the edge's framework
registered its adapter there when its ``llm`` module was imported).

Examples:
    >>> from retrievekit.core.index.bm25 import BM25Index
    >>> p = caller_passage(None, "red apples", {"when": object()})
    >>> len(p.id), isinstance(p.metadata["when"], str)
    (16, True)
    >>> class Edge:
    ...     last_trace = None
    >>> edge = Edge()
    >>> hits, trace = traced_search(edge, BM25Index.build([p]), "apples", 1)
    >>> [h.obj.text for h in hits], edge.last_trace is trace, trace.query
    (['red apples'], True, 'apples')
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar, overload

from retrievekit.core.checks import check_corpus, check_k
from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.registry import EMBEDS_NOTHING, MethodContext, build_method
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace, publish
from retrievekit.core.types import DataObject, Passage, ScoredHit

__all__ = [
    "build_for_edge",
    "caller_passage",
    "close_core",
    "hit_metadata",
    "lazy_exports",
    "require_extras",
    "split_corpus",
    "atraced_search",
    "traced_search",
]

D = TypeVar("D")
R = TypeVar("R")


def caller_passage(oid: str | None, text: str, metadata: Mapping[Any, Any] | None) -> Passage:
    """A caller's document as a passage: its id (or the first 16 hex digits of its text's sha1), its text, and its
    metadata made JSON-safe (a value JSON cannot hold becomes its ``str``).

    Examples:
        >>> caller_passage("d1", "hi", {"page": 3}).metadata
        {'page': 3}
        >>> caller_passage("", "hi", None).id == caller_passage(None, "hi", {}).id
        True
    """
    meta: dict[str, Any] = {}
    for k, v in (metadata or {}).items():
        try:
            json.dumps(v)
            meta[str(k)] = v
        except (TypeError, ValueError):
            meta[str(k)] = str(v)
    return Passage(id=oid or hashlib.sha1(text.encode("utf-8")).hexdigest()[:16], text=text, metadata=meta)


def split_corpus(
    items: Sequence[Any], caller_type: type[D], convert: Callable[[Sequence[D]], list[DataObject]]
) -> tuple[list[D], list[DataObject]]:
    """``(the caller's documents, the checked corpus)`` of a list mixing the framework's documents (converted with
    ``convert``) and core objects (kept as they are, so a ``Table`` keeps its structure), in the given order.

    Examples:
        >>> docs, corpus = split_corpus(["a b", Passage(id="t", text="c")], str, lambda xs: [Passage(id=x, text=x) for x in xs])
        >>> docs, [o.id for o in corpus]
        (['a b'], ['a b', 't'])
    """
    callers = [d for d in items if isinstance(d, caller_type)]
    converted = iter(convert(callers))
    return callers, check_corpus([next(converted) if isinstance(d, caller_type) else d for d in items])


def build_for_edge(
    method: str,
    corpus: Sequence[DataObject],
    *,
    work_dir: str | os.PathLike[str] | None,
    llm: Any,
    options: dict[str, Any],
    store: Any = None,
    embedder: Any = None,
    default_embedder: Any = None,
) -> Retriever:
    """A registered method built over ``corpus`` (checked) for an edge's ``from_documents``; ``llm`` is the model as
    the user gave it (:attr:`~retrievekit.core.registry.MethodContext.llm`), ``work_dir`` caches the built indexes,
    ``store`` is the user's vector store as the dense side (``MethodContext.store``; an edge's ``from_vector_store``),
    ``embedder`` is the embedding model the user passed for the methods that embed (a framework's is wrapped by
    :func:`~retrievekit.core.index.as_embedder.as_embedder`), ``default_embedder`` the one used when none is passed
    (LlamaIndex's ``Settings.embed_model``).

    An ``embedder`` that no stage of the method takes is refused by name (:class:`InvalidInputError`): before anything
    is built for a method that embeds nothing (:data:`~retrievekit.core.registry.EMBEDS_NOTHING`), else once the
    method is built (e.g. ``llm-rerank`` over a ``bm25`` first stage), never dropped in silence.

    Examples:
        >>> docs = [Passage(id="a", text="red apples"), Passage(id="b", text="green pears")]
        >>> build_for_edge("bm25", docs, work_dir=None, llm=None, options={}).search("pears", 1)[0].id
        'b'
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> build_for_edge("bm25", docs, work_dir=None, llm=None, options={}, embedder=OnesEmbedder())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: from_documents(method='bm25'): embedder= reaches no stage of this method (none of them embeds); leave embedder= out, or choose a method or first stage that embeds (dense, hybrid, oneshot, arm, lattice; llm-rerank or judge-rerank with first_stage=dense or hybrid)
    """
    given = as_embedder(embedder, where="from_documents")
    if given is not None and method in EMBEDS_NOTHING:
        raise InvalidInputError(_unused_embedder(method, "none of them embeds"))
    ctx = MethodContext(
        corpus=check_corpus(corpus),
        work_dir=Path(work_dir) if work_dir else None,
        options=options,
        llm=llm,
        store=store,
        embedder=given if given is not None else as_embedder(default_embedder, where="from_documents"),
    )
    built = build_method(method, ctx)
    if given is not None and not ctx.embedder_taken:
        close_core(built)
        raise InvalidInputError(_unused_embedder(method, f"with options {options}, none of its stages embeds"))
    return built


def _unused_embedder(method: str, why: str) -> str:
    return (
        f"from_documents(method={method!r}): embedder= reaches no stage of this method ({why}); leave embedder= out, "
        "or choose a method or first stage that embeds (dense, hybrid, oneshot, arm, lattice; llm-rerank or "
        "judge-rerank with first_stage=dense or hybrid)"
    )


def traced_search(owner: Any, core: Retriever, query: str, k: int) -> tuple[list[ScoredHit], Trace]:
    """One search with a trace of its own (``query`` set), kept as ``owner.last_trace`` and published for the
    caller's ``*_with_trace``; returns the hits and the trace, which the edge then sends to its framework's callbacks.

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> class Edge:
        ...     last_trace = None
        >>> traced_search(Edge(), BM25Index.build([Passage(id="a", text="x")]), "x", 0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: k must be a positive integer, got 0
    """
    trace = Trace(query=query)  # this call's own (as search_with_trace makes it), one file fewer on a query's path
    hits = core.search(query, check_k(k), trace=trace)
    owner.last_trace = trace
    publish(trace)
    return hits, trace


async def atraced_search(owner: Any, core: Retriever, query: str, k: int) -> tuple[list[ScoredHit], Trace]:
    """:func:`traced_search` awaited: a core with an async search of its own (``asearch``: LATTICE's, on the async
    model driver) is awaited on the caller's loop; any other runs off the loop on the bridge's bounded pool.

    Examples:
        >>> import asyncio
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> class Edge:
        ...     last_trace = None
        >>> index = BM25Index.build([Passage(id="a", text="red apples"), Passage(id="b", text="tea")])
        >>> hits, trace = asyncio.run(atraced_search(Edge(), index, "apples", 1))
        >>> [h.id for h in hits], trace.query
        (['a'], 'apples')
    """
    from retrievekit.core.llm.bridge import run_off_loop

    trace = Trace(query=query)
    k = check_k(k)
    asearch = getattr(core, "asearch", None)
    if asearch is not None:
        hits = await asearch(query, k, trace=trace)
    else:
        hits = await run_off_loop(core.search, query, k, trace=trace)
    owner.last_trace = trace
    publish(trace)
    return hits, trace


def hit_metadata(obj: DataObject, **extra: Any) -> dict[str, Any]:
    """The metadata of a new node or document made from a hit: the object's own, its kind and title, then ``extra``.

    Examples:
        >>> hit_metadata(Passage(id="a", text="x", title="T"), score=0.5)
        {'retrievekit_kind': 'passage', 'title': 'T', 'score': 0.5}
    """
    meta = dict(obj.metadata)
    meta.setdefault("retrievekit_kind", obj.kind)
    if obj.title:
        meta.setdefault("title", obj.title)
    meta.update(extra)
    return meta


def close_core(core: Any) -> None:
    """Close a wrapped core retriever that holds resources (a ``DenseIndex``'s Chroma client); others are left be.

    Examples:
        >>> close_core(object())
    """
    close = getattr(core, "close", None)
    if callable(close):
        close()


class CoreAlias(Generic[R]):
    """A method edge's typed, read-only name for the core object it wraps: ``ArmRetriever(...).arm`` is its ``Arm``.

    One line per edge class instead of a property block per class and framework; ``attr`` is where the framework's
    base class keeps the core (LlamaIndex: ``_core``; LangChain: the ``retriever`` field). :func:`core_argument`
    accepts the alias as the constructor keyword it used to be.

    Examples:
        >>> class Edge:
        ...     arm = CoreAlias["list[int]"]("_core")
        ...     def __init__(self, core): self._core = core
        >>> Edge([1, 2]).arm
        [1, 2]
    """

    def __init__(self, attr: str) -> None:
        self.attr = attr

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> CoreAlias[R]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> R: ...
    def __get__(self, obj: object | None, owner: type | None = None) -> Any:
        if obj is None:
            return self
        return getattr(obj, self.attr)


def core_argument(owner: type, core: Any, renamed: Mapping[str, Any]) -> Any:
    """The core object an edge constructor was given, positionally or by its former keyword (a :class:`CoreAlias`
    name, e.g. ``ArmRetriever(arm=...)``), which still works for one release with a :class:`DeprecationWarning`.

    Raises ``TypeError`` for any other keyword, as a constructor does.

    Examples:
        >>> class Edge:
        ...     arm = CoreAlias["str"]("_core")
        >>> core_argument(Edge, "core", {})
        'core'
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as w:
        ...     warnings.simplefilter("always")
        ...     core_argument(Edge, None, {"arm": "core"}), w[0].category.__name__
        ('core', 'DeprecationWarning')
    """
    aliases = {n for n in dir(owner) if isinstance(getattr(owner, n, None), CoreAlias)}
    if set(renamed) - aliases:
        raise TypeError(f"{owner.__name__}() got unexpected keyword arguments {sorted(set(renamed) - aliases)}")
    if len(renamed) + (core is not None) > 1:
        raise TypeError(f"{owner.__name__}() got the core retriever more than once ({sorted(renamed)})")
    if not renamed:
        return core
    ((name, value),) = renamed.items()
    warnings.warn(
        f"{owner.__name__}({name}=...) is deprecated; pass the core object first (or as retriever=)",
        DeprecationWarning,
        stacklevel=3,
    )
    return value


def lazy_exports(
    package: str, exports: Mapping[str, str], needs: Mapping[str, str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's module-level ``__getattr__`` and ``__dir__`` (PEP 562) serving ``exports`` (public name -> module
    that defines it) lazily: importing one component does not import the dependencies of every other.

    ``needs`` (module -> its install hint, as :func:`require_extras` takes) turns a component's
    ``ModuleNotFoundError`` for one of those modules into a
    :class:`~retrievekit.core.errors.MissingDependencyError` naming the component and the hint.

    Examples:
        >>> getattr_, dir_ = lazy_exports("pkg", {"dumps": "json"})
        >>> getattr_("dumps")({"a": 1}), dir_()
        ('{"a": 1}', ['dumps'])
        >>> getattr_("loads")
        Traceback (most recent call last):
        ...
        AttributeError: module 'pkg' has no attribute 'loads'
        >>> lazy_exports("pkg", {"X": "no_such_framework.x"}, {"no_such_framework": "pip install nsf"})[0]("X")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.MissingDependencyError: the package 'no_such_framework' is required but not installed; install it with: pip install nsf (pkg.X needs it)
    """
    names = sorted(exports)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        try:
            found = importlib.import_module(module)
        except ModuleNotFoundError as e:
            top = (e.name or "").partition(".")[0]
            hint = next((h for m, h in (needs or {}).items() if m.partition(".")[0] == top), None)
            if hint is None:
                raise
            raise MissingDependencyError(top, hint, f"{package}.{name} needs it") from e
        return getattr(found, name)

    def __dir__() -> list[str]:
        return list(names)

    return __getattr__, __dir__


def require_extras(edge: str, needs: Mapping[str, str]) -> None:
    """Check, without importing them, that the modules an edge package needs are installed: the first one missing
    (in ``needs``' order: module -> its install hint, ``pip install "retrievekit[EXTRA]"``) raises
    :class:`~retrievekit.core.errors.MissingDependencyError` naming it, the hint and ``edge``, where the edge's
    own imports would raise a bare ``ModuleNotFoundError``. An edge package calls it first thing.

    Examples:
        >>> require_extras("retrievekit.demo", {"json": "pip install json"})
        >>> require_extras("retrievekit.demo", {"no_such_framework.core": 'pip install "retrievekit[all]"'})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.MissingDependencyError: the package 'no_such_framework' is required but not installed; install it with: pip install "retrievekit[all]" (retrievekit.demo needs it)
    """
    for module, hint in needs.items():
        try:
            installed = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # its parent package is missing (or an import hook refuses it)
            installed = False
        except ValueError:  # imported already, without a spec (a test's stand-in)
            installed = True
        if not installed:
            raise MissingDependencyError(module.partition(".")[0], hint, f"{edge} needs it")


def check_core(owner: type, core: Any) -> Any:
    """``core`` if it is a core retriever (a callable ``search``); ``None`` raises ``TypeError`` as a missing
    argument does, anything else :class:`~retrievekit.core.errors.InvalidInputError` naming its type: the one check
    of both edges' retriever constructors, so a wrong object is refused where it is given, not at its first query.

    Examples:
        >>> class Edge: ...
        >>> check_core(Edge, "not a retriever")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: Edge() wraps a retrievekit core retriever (an object with a search(query, k) method), got str
    """
    if core is None:
        raise TypeError(f"{owner.__name__}() needs the core retriever it wraps")
    if not callable(getattr(core, "search", None)):
        raise InvalidInputError(
            f"{owner.__name__}() wraps a retrievekit core retriever (an object with a search(query, k) method), "
            f"got {type(core).__name__}"
        )
    return core
