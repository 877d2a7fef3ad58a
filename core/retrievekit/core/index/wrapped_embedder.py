"""An embedding model reached through two functions (many texts, one query) as an
:class:`~retrievekit.core.index.embeddings.Embedder`: what the framework edges wrap a LlamaIndex ``BaseEmbedding`` or
a LangChain ``Embeddings`` in.

Vectors come back as float32 rows, L2-normalised (every retrievekit index and method compares by cosine), in batches
of ``batch_size`` texts. The vector size is asked of the model once, with one short text, when it is first needed. An
exception the model raises becomes :class:`~retrievekit.core.errors.EmbedderUnavailableError` naming the model (a
framework client's own timeout and retries apply: set them on the client). So is a reply that is not one finite,
non-zero vector per text of the model's one dimension (fixed by its first reply or ``dim=``):
:func:`~retrievekit.core.index.embedder_rows.checked_rows`.

Awaited (``aembed_documents`` / ``aembed_query``: the async model driver, an index's awaited search), the model's
own async API is awaited on the caller's loop when the edge passed one (``aembed_many`` / ``aembed_one``: LlamaIndex
``aget_text_embedding_batch`` / ``aget_query_embedding``, LangChain ``aembed_documents`` / ``aembed_query``), with the
same batches, checks and typed errors; a model with none runs its sync API on the bridge's bounded pool.

Examples:
    >>> import numpy as np
    >>> e = WrappedEmbedder("words", lambda ts: [[t.count("a"), 1.0] for t in ts], lambda t: [t.count("a"), 1.0],
    ...                     source="a function")
    >>> e.dim, e.embed_documents(["a", "b"]).astype(float).round(3).tolist(), e.embed_query("aa").shape
    (2, [[0.707, 0.707], [0.0, 1.0]], (2,))
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import EmbedderUnavailableError, RetrieveKitError
from retrievekit.core.index.embedder_rows import checked_rows
from retrievekit.core.llm.bridge import run_in_pool
from retrievekit.core.threads import model_threads

__all__ = ["WrappedEmbedder", "framework_embedder", "loaded_class"]


def loaded_class(module: str, name: str) -> type | None:
    """The class ``module.name`` when ``module`` is already imported, else None: an object can only be an instance of
    a class whose module is loaded, so an edge's adapter checks a framework type without importing the framework.

    Examples:
        >>> loaded_class("collections", "OrderedDict").__name__, loaded_class("no_such_module", "X")
        ('OrderedDict', None)
    """
    cls = getattr(sys.modules.get(module), name, None)
    return cls if isinstance(cls, type) else None


def framework_embedder(
    model: Any, *, ours: tuple[str, str], theirs: tuple[str, str], wrap: Callable[[Any, type], WrappedEmbedder]
) -> Any:
    """The one rule of an edge's embedder adapter: retrievekit's own framework model (the class ``ours``, by module
    and name) is unwrapped to the ``Embedder`` it holds, an instance of the framework's base class ``theirs`` becomes
    ``wrap(model, that class)``, anything else None. Neither module is imported (:func:`loaded_class`).

    Examples:
        >>> from collections import OrderedDict
        >>> def wrap(model, base):
        ...     return WrappedEmbedder(base.__name__, lambda ts: [[1.0] for _ in ts], lambda t: [1.0], source="x")
        >>> sides = {"ours": ("no_such_module", "X"), "theirs": ("collections", "OrderedDict"), "wrap": wrap}
        >>> framework_embedder(OrderedDict(), **sides).name, framework_embedder("text", **sides)
        ('OrderedDict', None)
    """
    own: Any = loaded_class(*ours)  # a class of the edge, unknown here: its instances hold `.embedder`
    if own is not None and isinstance(model, own):
        return model.embedder
    base = loaded_class(*theirs)
    if base is None or not isinstance(model, base):
        return None
    return wrap(model, base)


class WrappedEmbedder:
    """An :class:`~retrievekit.core.index.embeddings.Embedder` over ``embed_many(texts)`` and ``embed_one(text)``.

    Args:
        name: what an index records (the model's name).
        embed_many: texts to one vector each (any nested sequence of numbers).
        embed_one: a query to its vector.
        source: how errors name the model (``"LlamaIndex HuggingFaceEmbedding (model ...)"``).
        batch_size: texts per call of ``embed_many``.
        dim: the vector size when known (otherwise asked once).
        wrapped: the framework object, kept for the caller (``.wrapped``).
        aembed_many: the model's async ``embed_many`` (awaited by :meth:`aembed_documents`), when it has one.
        aembed_one: the model's async ``embed_one`` (awaited by :meth:`aembed_query`), when it has one.

    Examples:
        >>> def broken(texts):
        ...     raise RuntimeError("CUDA out of memory")
        >>> WrappedEmbedder("m", broken, lambda t: [1.0], source="model m").embed_documents(["x"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderUnavailableError: the embedding model model m failed: RuntimeError: CUDA out of memory
    """

    def __init__(
        self,
        name: str,
        embed_many: Callable[[list[str]], Any],
        embed_one: Callable[[str], Any],
        *,
        source: str,
        batch_size: int = 64,
        dim: int | None = None,
        wrapped: Any = None,
        aembed_many: Callable[[list[str]], Awaitable[Any]] | None = None,
        aembed_one: Callable[[str], Awaitable[Any]] | None = None,
    ) -> None:
        self.name = str(name)
        self.source = source
        self.batch_size = max(1, int(batch_size))
        self.wrapped = wrapped
        self._many = embed_many
        self._one = embed_one
        self._amany = aembed_many
        self._aone = aembed_one
        self._dim = int(dim) if dim is not None else None

    def __repr__(self) -> str:
        return f"WrappedEmbedder({self.name!r}, {self.source})"

    @property
    def dim(self) -> int:
        """The vector size (one text embedded on first use when not given)."""
        if self._dim is None:
            self._dim = int(self._rows(self._call(self._many, ["dimension probe"]), 1).shape[1])
        return self._dim

    def embed_documents(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        """Embed texts in batches: shape ``(len(texts), dim)``, rows L2-normalised."""
        texts = [str(t) for t in texts]
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = []
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i : i + self.batch_size]
            parts.append(self._rows(self._call(self._many, batch), len(batch)))
        return np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: shape ``(dim,)``, L2-normalised."""
        return self._rows([self._call(self._one, str(text))], 1)[0]

    async def aembed_documents(self, texts: Sequence[str], **_: Any) -> np.ndarray:
        """:meth:`embed_documents` awaited: the model's async API on the running loop, else its sync API on the
        bridge's bounded pool (module docstring).

        Examples:
            >>> import asyncio
            >>> async def many(ts):
            ...     return [[1.0, 0.0] for _ in ts]
            >>> e = WrappedEmbedder("m", None, None, source="m", aembed_many=many)
            >>> asyncio.run(e.aembed_documents(["a", "b"])).tolist()
            [[1.0, 0.0], [1.0, 0.0]]
        """
        texts = [str(t) for t in texts]
        if self._amany is None:
            return await run_in_pool(self.embed_documents, texts)
        if self._dim is None and not texts:
            self._rows(await self._acall(self._amany, ["dimension probe"]), 1)
        parts = [np.zeros((0, self.dim), dtype=np.float32)] if not texts else []
        for i in range(0, len(texts), self.batch_size):
            batch = texts[i : i + self.batch_size]
            parts.append(self._rows(await self._acall(self._amany, batch), len(batch)))
        return np.concatenate(parts, axis=0)

    async def aembed_query(self, text: str) -> np.ndarray:
        """:meth:`embed_query` awaited (as :meth:`aembed_documents`): shape ``(dim,)``, L2-normalised."""
        if self._aone is None:
            return await run_in_pool(self.embed_query, str(text))
        return self._rows([await self._acall(self._aone, str(text))], 1)[0]

    async def _acall(self, fn: Callable[[Any], Awaitable[Any]], arg: Any) -> Any:
        try:
            return await fn(arg)
        except RetrieveKitError:
            raise
        except Exception as e:
            raise self._failed(e) from e

    def _failed(self, e: Exception) -> EmbedderUnavailableError:
        return EmbedderUnavailableError(
            f"the embedding model {self.source} failed: {type(e).__name__}: {str(e)[:300]}", endpoint=self.source
        )

    def _call(self, fn: Callable[[Any], Any], arg: Any) -> Any:
        # A model that runs torch in this process gets retrievekit's bounded thread count (core.threads); a client
        # of a served model (torch never imported) is called as it is.
        threads = model_threads() if "torch" in sys.modules else contextlib.nullcontext()
        try:
            with threads:
                return fn(arg)
        except RetrieveKitError:
            raise
        except Exception as e:
            raise self._failed(e) from e

    def _rows(self, raw: Any, n: int) -> np.ndarray:
        rows = checked_rows(raw, n, self._dim, self.source)  # one per text, finite, one dimension for its life
        self._dim = int(rows.shape[1]) if self._dim is None else self._dim
        return rows
