"""What an embedding model outside retrievekit's control (a served endpoint, a framework's model) must hand back before
its vectors reach an index or a search: one row per text, in the texts' order, of the model's one dimension, every
value finite and no row all zeros. Anything else is an
:class:`~retrievekit.core.errors.EmbedderUnavailableError` that names the model, never a vector scored NaN, a row given
to another text, or a raw numpy error (issue #62 item 4).

Examples:
    >>> checked_rows([[3.0, 4.0]], 1, None, "model m").tolist()
    [[0.6000000238418579, 0.800000011920929]]
    >>> checked_rows([[1.0, float("nan")]], 1, None, "model m")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.EmbedderUnavailableError: the embedding model model m sent a vector with a NaN or infinite value (row 0 of 1)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from retrievekit.core.errors import EmbedderUnavailableError

__all__ = ["checked_rows", "ordered_embeddings"]


def _fail(source: str, what: str) -> EmbedderUnavailableError:
    return EmbedderUnavailableError(f"the embedding model {source} {what}", endpoint=source)


def checked_rows(raw: Any, n: int, dim: int | None, source: str) -> np.ndarray:
    """``raw`` as ``n`` L2-normalised float32 rows of ``dim`` values (any size > 0 when ``dim`` is None).

    Raises:
        EmbedderUnavailableError: not numbers, not ``n`` rows of one size, another size than ``dim``, a NaN or
            infinite value (float32 overflow included), or a row of zeros (it has no direction); naming ``source``.

    Examples:
        >>> checked_rows([[1.0, 0.0]], 1, 3, "model m")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderUnavailableError: the embedding model model m sent 2-d vectors, but its vectors are 3-d (the dimension is fixed by its first reply, or by dim=)
        >>> checked_rows([[0.0, 0.0]], 1, None, "model m")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderUnavailableError: the embedding model model m sent a vector of zeros (row 0 of 1), which has no direction
    """
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            x = np.asarray(raw, dtype=np.float32)
    except (TypeError, ValueError, OverflowError) as e:
        raise _fail(source, f"sent something that is not one vector per text ({type(e).__name__}: {e})") from e
    if x.ndim != 2 or len(x) != n or x.shape[1] == 0:
        raise _fail(source, f"sent an array of shape {x.shape} for {n} text(s)")
    if dim is not None and x.shape[1] != dim:
        raise _fail(
            source,
            f"sent {x.shape[1]}-d vectors, but its vectors are {dim}-d (the dimension is fixed by its first reply, "
            "or by dim=)",
        )
    bad = np.flatnonzero(~np.isfinite(x).all(axis=1))
    if len(bad):
        raise _fail(source, f"sent a vector with a NaN or infinite value (row {int(bad[0])} of {n})")
    norms = np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    zero = np.flatnonzero(norms[:, 0] == 0)
    if len(zero):
        raise _fail(source, f"sent a vector of zeros (row {int(zero[0])} of {n}), which has no direction")
    return (x / norms).astype(np.float32)


def ordered_embeddings(body: Any, n: int, source: str) -> list[Any]:
    """The ``data[*].embedding`` lists of an OpenAI-style embeddings reply, in the order of the ``n`` texts sent.

    Each row's ``index`` says which text it belongs to, and the indexes must be exactly ``0 .. n-1``: a reply of more
    than one row without them (or with a repeated, missing or non-integer one) cannot be matched to its texts, so it
    is refused rather than read in the order it came.

    Examples:
        >>> ordered_embeddings({"data": [{"index": 1, "embedding": [2]}, {"index": 0, "embedding": [1]}]}, 2, "m")
        [[1], [2]]
        >>> ordered_embeddings({"data": [{"embedding": [1]}]}, 1, "m")
        [[1]]
        >>> ordered_embeddings({"data": [{"embedding": [2]}, {"embedding": [1]}]}, 2, "m")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmbedderUnavailableError: the embedding model m sent rows whose index fields are not exactly 0..1 (got [None, None]), so its vectors cannot be matched to the texts
    """
    try:
        rows = body["data"]
        if not isinstance(rows, list) or not all(isinstance(r, dict) and "embedding" in r for r in rows):
            raise TypeError("data is not a list of objects with an embedding")
    except (KeyError, TypeError) as e:
        raise _fail(source, f"sent a reply that is not an embeddings response ({type(e).__name__}: {e})") from e
    if len(rows) != n:
        raise _fail(source, f"sent {len(rows)} vector(s) for {n} text(s)")
    if n == 1 and "index" not in rows[0]:
        return [rows[0]["embedding"]]
    found = [r.get("index") for r in rows]
    if sorted(i for i in found if type(i) is int) != list(range(n)):
        shown = found if n <= 8 else [*found[:8], "..."]
        raise _fail(
            source,
            f"sent rows whose index fields are not exactly 0..{n - 1} (got {shown}), so its vectors cannot be matched "
            "to the texts",
        )
    out: list[Any] = [None] * n
    for r in rows:
        out[r["index"]] = r["embedding"]
    return out
