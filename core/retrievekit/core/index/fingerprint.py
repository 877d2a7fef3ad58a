"""Which embedding model built an index: its name, its dimension and a fingerprint of a few probe vectors.

An index records :func:`embedder_fingerprint` when it is built and calls :func:`check_embedder` when it is opened, so
searching it through another model fails with :class:`~retrievekit.core.errors.EmbedderMismatchError` instead of
returning wrong neighbours: another vector size is refused, and so is a model of the same name and size whose
vectors differ (a swapped model). The probe vectors are :data:`PROBE_TEXTS` embedded as documents, L2-normalised,
sampled at :data:`COMPONENTS` evenly spaced positions and rounded to :data:`DECIMALS` decimals; two runs of one model
through different libraries (sentence-transformers, LlamaIndex's ``HuggingFaceEmbedding``, LangChain's
``HuggingFaceEmbeddings``) agree within :data:`TOLERANCE`, two different models do not. When the probes match, the
model is accepted under another name (the same weights reached another way). An index recorded without a
fingerprint (built before fingerprints) is accepted by name and dimension, with an
:class:`~retrievekit.core.errors.UnverifiedIndexWarning`.

Examples:
    >>> import numpy as np
    >>> class Words:  # a stand-in embedder: counts of three words
    ...     name, dim = "words", 3
    ...     def embed_documents(self, texts):
    ...         return np.array([[t.count(w) + 0.1 for w in ("the", "light", "rate")] for t in texts])
    >>> recorded = embedder_fingerprint(Words())
    >>> recorded["name"], recorded["dim"], len(recorded["probes"])
    ('words', 3, 3)
    >>> check_embedder(recorded, Words(), where="index x")  # the same model: accepted
    >>> class Swapped(Words):
    ...     def embed_documents(self, texts):
    ...         return np.array([[t.count(w) + 0.1 for w in ("rate", "the", "light")] for t in texts])
    >>> check_embedder(recorded, Swapped(), where="index x")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.EmbedderMismatchError: index x was embedded with 'words' (dim 3), and 'words' (dim 3) embeds the probe texts differently (largest difference 0.950): another model under the same name; pass the model that built it, or rebuild the index
"""

from __future__ import annotations

import json
import warnings
from typing import Any

import numpy as np

from retrievekit.core.errors import EmbedderMismatchError, IndexFormatError, UnverifiedIndexWarning

__all__ = [
    "COMPONENTS",
    "DECIMALS",
    "PROBE_TEXTS",
    "TOLERANCE",
    "check_embedder",
    "embedder_fingerprint",
    "recorded_fingerprint",
]

PROBE_TEXTS = (
    "The cat sat quietly on the warm mat by the window.",
    "Photosynthesis converts light energy into chemical energy in plant cells.",
    "The central bank raised interest rates by a quarter of a percentage point.",
)
"""The fixed texts every fingerprint embeds (three unrelated topics)."""

COMPONENTS = 16
"""Positions sampled from each probe vector (evenly spaced over its dimension)."""

DECIMALS = 3
"""Decimals kept of each sampled component."""

TOLERANCE = 0.02
"""The largest difference between a recorded component and a fresh one for the two to count as the same model."""


def _probe_components(embedder: Any) -> list[list[float]]:
    """The probe texts embedded, L2-normalised, sampled at :data:`COMPONENTS` positions and rounded."""
    x = np.asarray(embedder.embed_documents(list(PROBE_TEXTS)), dtype=np.float64)
    x = x.reshape(len(PROBE_TEXTS), -1)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    cols = np.unique(np.linspace(0, x.shape[1] - 1, COMPONENTS).round().astype(int))
    return [[round(float(v), DECIMALS) for v in row] for row in x[:, cols]]


def embedder_fingerprint(embedder: Any) -> dict[str, Any]:
    """What an index records about the model that builds it: ``{"name", "dim", "probes"}`` (JSON-safe).

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> fp = embedder_fingerprint(OnesEmbedder())
        >>> fp["name"], fp["dim"], fp["probes"][0][:2]
        ('ones', 2, [0.707, 0.707])
    """
    return {"name": str(embedder.name), "dim": int(embedder.dim), "probes": _probe_components(embedder)}


def _largest_difference(recorded: list[list[float]], fresh: list[list[float]]) -> float:
    a, b = np.asarray(recorded, dtype=np.float64), np.asarray(fresh, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def recorded_fingerprint(name: Any, dim: Any, probes: Any, *, where: str) -> dict[str, Any]:
    """A fingerprint read back from where it was kept (a collection's or a store's metadata holds the probes as a
    JSON string): the record :func:`check_embedder` takes, without ``probes`` when none was kept (an index or store
    written before fingerprints). Damaged probes raise :class:`~retrievekit.core.errors.IndexFormatError`.

    Examples:
        >>> recorded_fingerprint("m", "2", "[[0.5, 0.5]]", where="the store")
        {'name': 'm', 'dim': 2, 'probes': [[0.5, 0.5]]}
        >>> recorded_fingerprint("m", 2, "[[0.5", where="the store")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.IndexFormatError: the embedder fingerprint recorded in the store is damaged (...)
    """
    out: dict[str, Any] = {"name": name, "dim": None if dim is None else int(dim)}
    if isinstance(probes, str) and probes:
        try:
            out["probes"] = json.loads(probes)
        except ValueError as e:
            raise IndexFormatError(f"the embedder fingerprint recorded in {where} is damaged ({e})") from e
    elif isinstance(probes, list):
        out["probes"] = probes
    return out


def check_embedder(recorded: dict[str, Any], embedder: Any, *, where: str, written: str = "embedded with") -> None:
    """Refuse ``embedder`` for the index ``where`` unless it is the model ``recorded`` (an
    :func:`embedder_fingerprint`, or the ``{"name", "dim"}`` of an index built before fingerprints). ``written``
    words how the index was made in the message (a vector store says ``"written with the embedding model"``).

    Raises:
        EmbedderMismatchError: another dimension; probe vectors that differ by more than :data:`TOLERANCE`; or, with
            no probes recorded, another name.

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> check_embedder({"name": "other", "dim": 2}, OnesEmbedder(), where="index y")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderMismatchError: index y was embedded with 'other' (dim 2), but the model given is 'ones' (dim 2); pass the model that built it, or rebuild the index
        >>> check_embedder({"name": "ones", "dim": 4}, OnesEmbedder(), where="index y")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderMismatchError: index y was embedded with 'ones' (dim 4), but the model given is 'ones' (dim 2); pass the model that built it, or rebuild the index
    """
    name, dim = recorded.get("name"), recorded.get("dim")
    given = f"{embedder.name!r} (dim {embedder.dim})"
    built = f"{where} was {written} {name!r} (dim {dim})"
    advice = "pass the model that built it, or rebuild the index"
    if dim is not None and dim != embedder.dim:
        raise EmbedderMismatchError(f"{built}, but the model given is {given}; {advice}")
    probes = recorded.get("probes")
    if not probes:
        if name is not None and name != embedder.name:
            raise EmbedderMismatchError(f"{built}, but the model given is {given}; {advice}")
        warnings.warn(
            f"{where} records no fingerprint of its embedding model (built before fingerprints): accepted by name "
            f"and dimension only ({given}); rebuild it to record one",
            UnverifiedIndexWarning,
            stacklevel=3,
        )
        return
    diff = _largest_difference(probes, _probe_components(embedder))
    if diff > TOLERANCE:
        kind = "another model under the same name" if name == embedder.name else "another model"
        raise EmbedderMismatchError(
            f"{built}, and {given} embeds the probe texts differently (largest difference {diff:.3f}): {kind}; {advice}"
        )
