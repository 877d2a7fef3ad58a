"""The method registry ``retrievekit bench`` uses: :class:`MethodContext`, :func:`register_method`,
:func:`available_methods` and :func:`build_method`.

Methods are registered by name with a factory that builds a retriever over a corpus; later methods (LATTICE, ARM,
...) add themselves with :func:`register_method`. Installed packages add theirs as entry points of the group
``retrievekit.methods`` (``name = "module:factory"``, the standard plugin mechanism of ``importlib.metadata``),
loaded only when a method of that name is built; ``retrievekit.langgraph`` registers ``iterative`` this way. The
table is :data:`METHODS`, a :class:`~retrievekit.core.plugins.Registry`: the shape of every pluggable part
(``docs/plugins.md``).

Examples:
    >>> from retrievekit.core.types import Passage
    >>> {"bm25", "dense", "hybrid"} <= set(available_methods())
    True
    >>> r = build_method("bm25", MethodContext(corpus=[Passage(id="a", text="red apples"), Passage(id="b", text="blue sky")]))
    >>> r.search("apples", k=1)[0].id
    'a'
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_corpus
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.paths import check_folder_path
from retrievekit.core.plugins import Registry
from retrievekit.core.retriever import Retriever
from retrievekit.core.types import DataObject

__all__ = [
    "EMBEDS_NOTHING",
    "METHODS",
    "METHOD_ENTRY_POINT_GROUP",
    "MethodContext",
    "Registry",
    "MethodFactory",
    "available_methods",
    "build_method",
    "register_method",
]


@dataclass(frozen=True)
class MethodContext:
    """What a method factory gets: the corpus and run options.

    Attributes:
        corpus: objects to index.
        work_dir: a folder the method may cache indexes in (None: in memory / temp). Checked on construction:
            a path that is, or lies under, a regular file raises
            :class:`~retrievekit.core.errors.InvalidPathError` before anything is built.
        options: method-specific options (e.g. ``{"budget": 4000}``).
        llm: the model methods use (``retrievekit bench --llm``): a registry name (``"qwen0.5b"``), a served LLM
            (``CLIENT:MODEL@URL`` or a :class:`~retrievekit.core.llm.served_spec.ServedLLMSpec`), ``"none"``, a
            model object (a ``ChatLLM`` / ``ScoringLM`` such as a loaded ``LocalLM``, a framework's model), or None
            (the method's default); resolved by :func:`~retrievekit.core.llm.resolve.resolve_llm` when a method
            loads it.
        judge: a ready :class:`~retrievekit.core.llm.protocol.RelevanceJudge` that the factories' judge lookup
            (``retrievekit.core.llm.judge_hooks.judge_from_options``) returns instead of loading option ``judge_dir``;
            the benchmark harness puts the gold-label oracle of ``--judge oracle`` here.
        store: the user's vector store as the dense side of the methods that embed (``dense``, ``hybrid``, ARM,
            One-SHOT's candidates, the first stage of ``llm-rerank`` and ``judge-rerank``): a
            :class:`~retrievekit.core.index.store_retriever.StoreRetriever` (a store and the model that wrote it),
            or a :class:`~retrievekit.core.index.vector_store.VectorStore` (searched through all-MiniLM-L6-v2).
            None: the methods build their own Chroma index over ``corpus``.
        embedder: the embedding model of the methods that embed (anything
            :func:`~retrievekit.core.index.as_embedder.as_embedder` takes; ``retrievekit bench --embedder``); None:
            all-MiniLM-L6-v2. A factory (or stage) that embeds takes it with :meth:`take_embedder`, and a method's
            stages get a context made by :meth:`stage`, so a ``from_documents`` can tell whether the user's model
            reached any stage (:attr:`embedder_taken`) and refuse it by name when it did not.

    Examples:
        >>> MethodContext(corpus=[], llm="qwen0.5b").llm
        'qwen0.5b'
        >>> MethodContext(corpus=[]).options
        {}
        >>> MethodContext(corpus=[], work_dir=Path(__file__) / "cache")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidPathError: work_dir .../registry.py/cache cannot be a folder: ... is a file, not a folder
    """

    corpus: Sequence[DataObject]
    work_dir: Path | None = None
    options: dict[str, Any] = field(default_factory=dict)
    llm: Any = None
    judge: Any = None
    store: Any = None
    embedder: Any = None
    _taken: set[str] = field(default_factory=set, repr=False, compare=False)  # shared with every stage()

    def __post_init__(self) -> None:
        from retrievekit.core.llm.resolve import checked_llm

        if self.work_dir is not None:
            object.__setattr__(self, "work_dir", check_folder_path(self.work_dir, "work_dir"))
        object.__setattr__(self, "llm", checked_llm(self.llm))  # a framework's model wrapped; a name loads later

    def stage(self, **changes: Any) -> MethodContext:
        """This context for one stage of the method (a first-stage retriever, the index of a pool): every field, the
        user's embedder, store, LLM and judge included, carried over, ``changes`` replaced; what the stage takes is
        recorded for the whole method (:attr:`embedder_taken`).

        Examples:
            >>> from retrievekit.core.fakes import OnesEmbedder
            >>> ctx = MethodContext(corpus=[], embedder=OnesEmbedder(), options={"budget": 10})
            >>> first = ctx.stage(options={})
            >>> first.embedder is ctx.embedder, first.options, ctx.embedder_taken
            (True, {}, False)
            >>> _ = first.take_embedder(); ctx.embedder_taken
            True
        """
        return dataclasses.replace(self, **changes)

    def take_embedder(self) -> Any:
        """:attr:`embedder`, for a factory or stage that embeds with it; recorded (:attr:`embedder_taken`).

        Examples:
            >>> MethodContext(corpus=[]).take_embedder() is None
            True
        """
        self._taken.add("embedder")
        return self.embedder

    @property
    def embedder_taken(self) -> bool:
        """Whether some stage of the method took :attr:`embedder` (:meth:`take_embedder`).

        Examples:
            >>> MethodContext(corpus=[]).embedder_taken
            False
        """
        return "embedder" in self._taken

    def load_llm(self, default: str | None = DEFAULT_MODEL) -> Any:
        """The model a method uses: :attr:`llm` resolved by :func:`~retrievekit.core.llm.resolve.resolve_llm`
        (``default`` when it is None); None (no LLM) for ``"none"`` (``retrievekit bench --llm none``).

        Examples:
            >>> from retrievekit.core.fakes import WordScoreLLM
            >>> model = WordScoreLLM("sun")
            >>> MethodContext(corpus=[], llm=model).load_llm() is model
            True
            >>> MethodContext(corpus=[], llm="none").load_llm() is None
            True
        """
        from retrievekit.core.llm.resolve import resolve_llm

        return resolve_llm(self.llm, default=default)

    @property
    def llm_label(self) -> str | None:
        """The name :attr:`llm` gives (the method's default for None), or None for a model object.

        Examples:
            >>> MethodContext(corpus=[]).llm_label == DEFAULT_MODEL, MethodContext(corpus=[], llm="qwen0.5b").llm_label
            (True, 'qwen0.5b')
        """
        from retrievekit.core.llm.resolve import llm_label

        return llm_label(self.llm)


EMBEDS_NOTHING = frozenset({"bm25", "mindref", "self-retrieval"})
"""Built-in methods no stage of which embeds: an ``embedder=`` given to one is refused before anything is built."""

MethodFactory = Callable[[MethodContext], Retriever]
"""A method factory: builds a retriever from a :class:`MethodContext`."""

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
METHOD_ENTRY_POINT_GROUP = "retrievekit.methods"
"""Entry-point group of method factories in installed packages (``[project.entry-points."retrievekit.methods"]``)."""

METHODS: Registry[MethodFactory] = Registry(
    "method", METHOD_ENTRY_POINT_GROUP, unknown="unknown {kind} {name!r}; available: {known}", builtin=_BUILTIN
)
"""The methods (a :class:`~retrievekit.core.plugins.Registry`): the built-in ``module:function`` paths, those
registered with :func:`register_method`, and the entry points of :data:`METHOD_ENTRY_POINT_GROUP`."""


def _plugin_methods() -> dict[str, importlib.metadata.EntryPoint]:
    """Methods that installed packages declare as entry points (read from their metadata; nothing is imported)."""
    return METHODS.entry_points()


def _load_factory(name: str) -> MethodFactory:
    """The factory registered as ``name``: registered, a lazy ``module:function`` path, or an entry point."""
    return METHODS.get(name)


def register_method(name: str, factory: MethodFactory | str) -> None:
    """Register a method factory (or a lazy ``"module:function"`` path) under ``name``.

    Examples:
        >>> register_method("my-bm25", "retrievekit.core.index.baselines:build_bm25")
        >>> "my-bm25" in available_methods()
        True
    """
    METHODS.register(name, factory)


def available_methods() -> list[str]:
    """Names of all registered methods, sorted: built in, registered with :func:`register_method`, or declared as
    entry points of group :data:`METHOD_ENTRY_POINT_GROUP` by an installed package (listed without importing it).

    Examples:
        >>> "hybrid" in available_methods()
        True
    """
    return METHODS.names()


def build_method(name: str, ctx: MethodContext) -> Retriever:
    """Build the retriever registered as ``name`` over ``ctx.corpus``.

    The corpus is validated (:func:`~retrievekit.core.checks.check_corpus`) before the factory runs, so a bad corpus
    is refused before any model is loaded or index built.

    Examples:
        >>> build_method("nope", MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.UnknownNameError: unknown method 'nope'; available: ...
        >>> build_method("bm25", MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    factory = METHODS.get(name)
    check_corpus(ctx.corpus)
    return factory(ctx)
