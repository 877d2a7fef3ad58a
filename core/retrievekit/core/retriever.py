"""The retriever protocol every method implements, and the method registry ``retrievekit bench`` uses.

A retriever is anything with ``search(query, k, trace=None) -> list[ScoredHit]``.
Methods are registered by name with a factory that builds a retriever over a
corpus; later methods (LATTICE, ARM, ...) add themselves with
:func:`register_method`. Installed packages add theirs as entry points of the
group ``retrievekit.methods`` (``name = "module:factory"``, the standard plugin
mechanism of ``importlib.metadata``), loaded only when a method of that name is
built; ``retrievekit.langgraph`` registers ``iterative`` this way.

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
import importlib.metadata
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from retrievekit.core.errors import EmptyCorpusError, EmptyQueryError, InvalidInputError, LLMOutputError
from retrievekit.core.paths import check_folder_path
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, Passage, ScoredHit, Table, TableRow, ensure_text

__all__ = [
    "METHOD_ENTRY_POINT_GROUP",
    "MethodContext",
    "Retriever",
    "available_methods",
    "build_method",
    "check_corpus",
    "check_k",
    "check_query",
    "judge_from_options",
    "judge_relevance",
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
        work_dir: a folder the method may cache indexes in (None: in memory / temp). Checked on construction:
            a path that is, or lies under, a regular file raises
            :class:`~retrievekit.core.errors.InvalidPathError` before anything is built.
        llm: name of the local LLM to use (``smollm2`` or ``qwen0.5b``) or None.
        options: method-specific options (e.g. ``{"budget": 4000}``).

    Examples:
        >>> MethodContext(corpus=[]).options
        {}
        >>> MethodContext(corpus=[], work_dir=Path(__file__) / "cache")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidPathError: work_dir .../retriever.py/cache cannot be a folder: ... is a file, not a folder
    """

    corpus: Sequence[DataObject]
    work_dir: Path | None = None
    llm: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.work_dir is not None:
            object.__setattr__(self, "work_dir", check_folder_path(self.work_dir, "work_dir"))


MethodFactory = Callable[[MethodContext], Retriever]

_BUILTIN: dict[str, str] = {
    "bm25": "retrievekit.core.index.baselines:build_bm25",
    "dense": "retrievekit.core.index.baselines:build_dense",
    "hybrid": "retrievekit.core.index.baselines:build_hybrid",
    "oneshot": "retrievekit.core.oneshot.method:build_oneshot",
    "mindref": "retrievekit.core.generative.mindref:build_mindref",
    "lattice": "retrievekit.core.lattice.method:build_lattice",
    "llm-rerank": "retrievekit.core.lattice.method:build_llm_rerank",
    "arm": "retrievekit.core.arm.method:build_arm",
    "arm-no-mip": "retrievekit.core.arm.method:build_arm_no_mip",
    "arm-no-verify": "retrievekit.core.arm.method:build_arm_no_verify",
    "judge-rerank": "retrievekit.core.judge.method:build_judge_rerank",
    "self-retrieval": "retrievekit.core.generative.self_retrieval.method:build_self_retrieval",
}
_REGISTRY: dict[str, MethodFactory] = {}

METHOD_ENTRY_POINT_GROUP = "retrievekit.methods"
"""Entry-point group of method factories in installed packages (``[project.entry-points."retrievekit.methods"]``)."""


def _plugin_methods() -> dict[str, importlib.metadata.EntryPoint]:
    """Methods that installed packages declare as entry points (read from their metadata; nothing is imported)."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=METHOD_ENTRY_POINT_GROUP)}


def _load_factory(name: str) -> MethodFactory:
    """Import the factory registered as ``name``: a lazy ``module:function`` path first, then an entry point."""
    path = _BUILTIN.get(name)
    if path is not None:
        module, _, attr = path.partition(":")
        factory: MethodFactory = getattr(importlib.import_module(module), attr)
        return factory
    plugin = _plugin_methods().get(name)
    if plugin is None:
        raise InvalidInputError(f"unknown method {name!r}; available: {', '.join(available_methods())}")
    loaded: MethodFactory = plugin.load()
    return loaded


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
    """Names of all registered methods, sorted: built in, registered with :func:`register_method`, or declared as
    entry points of group :data:`METHOD_ENTRY_POINT_GROUP` by an installed package (listed without importing it).

    Examples:
        >>> "hybrid" in available_methods()
        True
    """
    return sorted(set(_BUILTIN) | set(_REGISTRY) | set(_plugin_methods()))


def build_method(name: str, ctx: MethodContext) -> Retriever:
    """Build the retriever registered as ``name`` over ``ctx.corpus``.

    The corpus is validated (:func:`check_corpus`) before the factory runs, so a bad corpus is refused before any
    model is loaded or index built.

    Examples:
        >>> build_method("nope", MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown method 'nope'; available: ...
        >>> build_method("bm25", MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    factory = _REGISTRY.get(name)
    if factory is None:
        factory = _load_factory(name)
        _REGISTRY[name] = factory
    check_corpus(ctx.corpus)
    return factory(ctx)


def judge_relevance(judge: Any, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
    """One batched ``judge.score_relevance`` call, checked: one finite number per candidate, clipped to ``[0, 1]``.

    The shared hook every LLM-judged method uses when its ``llm=`` implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. Counts ``judge.calls`` and ``judge.candidates`` in
    ``trace``; out-of-range scores are clipped and counted (``judge.clipped``, with a note). A reply of the wrong
    length, or with a non-number, NaN or infinity, raises :class:`~retrievekit.core.errors.LLMOutputError` (the
    caller falls back and says so).

    Examples:
        >>> class Overlap:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         q = set(query.lower().split())
        ...         return [len(q & set(c.lower().split())) / len(q) for c in candidates]
        >>> t = Trace()
        >>> judge_relevance(Overlap(), "aspirin pain", ["aspirin relieves pain", "Rome"], trace=t)
        [1.0, 0.0]
        >>> t.counters["judge.calls"], t.counters["judge.candidates"]
        (1, 2)
        >>> judge_relevance(Overlap(), "q", [])
        []
    """
    texts = [str(c) for c in candidates]
    if not texts:
        return []
    if trace is not None:
        trace.count("judge.calls")
        trace.count("judge.candidates", len(texts))
    raw = judge.score_relevance(query, texts, trace=trace)
    try:
        values = [float(x) for x in raw]
    except (TypeError, ValueError) as e:
        raise LLMOutputError(f"the judge returned a non-number score ({e})", raw=str(raw)[:200]) from None
    if len(values) != len(texts):
        raise LLMOutputError(f"the judge returned {len(values)} scores for {len(texts)} candidates", raw=str(raw)[:200])
    if not all(math.isfinite(v) for v in values):
        raise LLMOutputError("the judge returned a NaN or infinite score", raw=str(raw)[:200])
    clipped = sum(1 for v in values if not 0.0 <= v <= 1.0)
    if clipped and trace is not None:
        trace.count("judge.clipped", clipped)
        trace.note("judge.clipped", f"{clipped} judge score(s) outside [0, 1] clipped")
    return [min(max(v, 0.0), 1.0) for v in values]


def judge_from_options(ctx: MethodContext) -> tuple[Any, dict[str, Any]]:
    """The judge named by option ``judge_dir`` (``retrievekit bench --judge DIR``) and the other options.

    Returns ``(None, options)`` when no judge is asked for; otherwise loads it with
    ``retrievekit.core.judge.load_judge`` and checks it implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. ``--judge zero-shot`` (when no folder of that name
    exists) gives the untrained ``Judge.zero_shot(--llm)`` instead: the same readout without fine-tuning, for
    trained-vs-zero-shot comparisons at the same budget of calls. Every method factory that accepts a judge calls
    this, so ``judge_dir`` never leaks into a method's own option parsing.

    Examples:
        >>> judge_from_options(MethodContext(corpus=[], options={"beam_size": 2}))
        (None, {'beam_size': 2})
        >>> judge_from_options(MethodContext(corpus=[], options={"judge_dir": ""}))
        (None, {})
    """
    opts = dict(ctx.options)
    judge_dir = opts.pop("judge_dir", None)
    if judge_dir is None or not str(judge_dir).strip():
        return None, opts
    from retrievekit.core.llm.protocol import RelevanceJudge

    try:
        judge_pkg = importlib.import_module("retrievekit.core.judge")
    except ImportError as e:  # pragma: no cover - the judge package ships with retrievekit
        raise InvalidInputError(f"--judge needs retrievekit.core.judge, which failed to import: {e}") from e
    if str(judge_dir) == "zero-shot" and not Path(str(judge_dir)).exists():
        judge = judge_pkg.Judge.zero_shot(ctx.llm or "smollm2")
    else:
        judge = judge_pkg.load_judge(str(judge_dir))
    if not isinstance(judge, RelevanceJudge):
        raise InvalidInputError(f"the judge loaded from {judge_dir} has no score_relevance(query, candidates)")
    return judge, opts


_judge_from_options = judge_from_options  # the former private name, still used by some method factories
