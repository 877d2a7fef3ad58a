"""What may cross the boundary into a vector store: metadata filters, objects, ids and query vectors, checked once,
before any store (Chroma, or a framework's store such as pgvector) sees them.

A metadata filter (``where=``) is a mapping of metadata keys to values; an object matches when every item matches:

- a key is an identifier: :data:`FILTER_KEY_PATTERN` (ASCII letters, digits and ``_``, not starting with a digit, at
  most 64 characters). Operator keys (``$and``, ``$or``, ``$in``...) and nested dicts are refused: the operators are
  the two below, and each store adapter writes them in its store's own filter API;
- a value is a ``str``, ``bool``, ``int`` (64-bit) or finite ``float``: the metadata value equals it;
- or a non-empty list (at most :data:`MAX_FILTER_VALUES`) of ``str`` or of ``int`` (one type): the metadata value is
  one of them;
- a string holds no NUL byte and is valid UTF-8 (no lone surrogate), at most :data:`MAX_FILTER_TEXT` characters.

Anything else raises :class:`~retrievekit.core.errors.InvalidInputError` naming the key, before any store is called.
Objects, ids and query vectors get the same treatment: no NUL byte or lone surrogate in an id, a text, a title or
metadata (keys and values, nested ones included), finite 64-bit numbers among the metadata a store filters on, a
finite query vector.

Examples:
    >>> check_where({"tenant": "acme", "year": [2020, 2021]})
    {'tenant': 'acme', 'year': [2020, 2021]}
    >>> check_where({"tenant": "nobody' OR '1'='1"})  # a value is data: stores bind it or refuse it
    {'tenant': "nobody' OR '1'='1"}
    >>> check_where({"$or": "a"})
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: metadata filter key '$or' is not an identifier (ASCII letters, digits and _, not starting with a digit, at most 64 characters); operators such as $or or $in are not accepted: a value is one value to equal, or a list of values to match any of
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.types import DataObject

__all__ = [
    "FILTER_KEY_PATTERN",
    "MAX_FILTER_TEXT",
    "MAX_FILTER_VALUES",
    "check_ids",
    "check_query_vector",
    "check_storable",
    "check_where",
]

FILTER_KEY_PATTERN = r"[A-Za-z_][A-Za-z0-9_]{0,63}"
"""What a metadata filter key must match, whole."""
MAX_FILTER_VALUES = 1000
"""The most values one ``any of`` list may hold."""
MAX_FILTER_TEXT = 4096
"""The most characters a filter's string value may hold."""

_KEY = re.compile(FILTER_KEY_PATTERN)
_INT64 = (-(2**63), 2**63 - 1)
_Scalar = str | bool | int | float


def check_where(where: Mapping[str, Any] | None) -> dict[str, Any]:
    """The metadata filter ``where`` as checked, typed values (see the module's rules); ``{}`` for None or empty.

    Examples:
        >>> check_where({"year": 2020, "score": 0.5, "open": True})
        {'year': 2020, 'score': 0.5, 'open': True}
        >>> check_where({"tenant": "a\\x00"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: metadata filter 'tenant': a string may not hold a NUL byte
        >>> check_where({"score": float("nan")})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: metadata filter 'score': a number must be finite, got nan
    """
    if where is None:
        return {}
    if not isinstance(where, Mapping):
        raise InvalidInputError(f"a metadata filter must be a dict of key: value, got a {type(where).__name__}")
    out: dict[str, Any] = {}
    for key, value in where.items():
        if not isinstance(key, str) or not _KEY.fullmatch(key):
            raise InvalidInputError(
                f"metadata filter key {key!r} is not an identifier (ASCII letters, digits and _, not starting with "
                "a digit, at most 64 characters); operators such as $or or $in are not accepted: a value is one "
                "value to equal, or a list of values to match any of"
            )
        out[key] = _filter_value(key, value)
    return out


def _filter_value(key: str, value: Any) -> Any:
    """One filter value: a scalar, or a list of str or of int (one type)."""
    field = f"metadata filter {key!r}"
    if isinstance(value, list | tuple):
        if not value or len(value) > MAX_FILTER_VALUES:
            raise InvalidInputError(f"{field}: a list of values must hold 1 to {MAX_FILTER_VALUES}, got {len(value)}")
        items = [_scalar(field, v) for v in value]
        kinds = {type(v) for v in items}
        if kinds not in ({str}, {int}):
            raise InvalidInputError(
                f"{field}: a list of values must be all str or all int, got {sorted(t.__name__ for t in kinds)}"
            )
        return items
    return _scalar(field, value)


def _scalar(field: str, value: Any) -> _Scalar:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, str):
        if len(value) > MAX_FILTER_TEXT:
            raise InvalidInputError(f"{field}: a string may hold at most {MAX_FILTER_TEXT} characters")
        _check_text(field, value)
        return value
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        if not _INT64[0] <= value <= _INT64[1]:
            raise InvalidInputError(f"{field}: an int must fit in 64 bits, got {value}")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{field}: a number must be finite, got {value}")
        return value
    raise InvalidInputError(
        f"{field}: a value must be a str, int, float or bool (or a list of str or of int), got "
        f"{type(value).__name__} {_short(value)}"
    )


def _check_text(field: str, text: str) -> None:
    """A string a store can hold: no NUL byte (PostgreSQL's text refuses it) and valid UTF-8."""
    if "\x00" in text:
        raise InvalidInputError(f"{field}: a string may not hold a NUL byte")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidInputError(f"{field}: a string must be valid UTF-8 ({e.reason} at {e.start})") from None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_storable(objects: Iterable[DataObject]) -> None:
    """Refuse objects a store cannot hold as they are: a NUL byte or lone surrogate in an id, text, title or metadata
    (keys and values, nested ones included), a non-finite float or an int beyond 64 bits among the metadata values a
    store filters on (the top-level str, int, float and bool values).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> check_storable([Passage(id="a", text="fine", metadata={"year": 2020})])
        >>> check_storable([Passage(id="a", text="cut\\x00here")])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: object 'a' text: a string may not hold a NUL byte
    """
    for obj in objects:
        _check_text("object id", obj.id)
        where = f"object {obj.id!r}"
        _check_text(f"{where} text", obj.index_text())
        _check_text(f"{where} title", getattr(obj, "title", "") or "")
        for key, value in obj.metadata.items():
            _walk(f"{where} metadata {_short(key)}", key)
            _walk(f"{where} metadata {_short(key)}", value)
            if isinstance(value, float | int) and not isinstance(value, bool):
                _scalar(f"{where} metadata {_short(key)}", value)


def _walk(field: str, value: Any) -> None:
    """Every string inside ``value`` (dict keys and values, list items) checked with :func:`_check_text`."""
    if isinstance(value, str):
        _check_text(field, value)
    elif isinstance(value, Mapping):
        for k, v in value.items():
            _walk(field, k)
            _walk(field, v)
    elif isinstance(value, list | tuple | set | frozenset):
        for v in value:
            _walk(field, v)


def check_ids(ids: Sequence[str]) -> list[str]:
    """Ids to delete as strings a store can hold (no NUL byte, valid UTF-8).

    Examples:
        >>> check_ids(["a", 2])
        ['a', '2']
        >>> check_ids(["a\\x00"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: object id: a string may not hold a NUL byte
    """
    if isinstance(ids, str):
        raise InvalidInputError("ids must be a list of ids, not one string")
    out = [str(i) for i in ids]
    for i in out:
        _check_text("object id", i)
    return out


def check_query_vector(vector: Any) -> list[float]:
    """A query vector as a list of finite floats (one dimension).

    Examples:
        >>> check_query_vector(np.array([1.0, 0.5]))
        [1.0, 0.5]
        >>> check_query_vector([1.0, float("nan")])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a query vector must be finite numbers (one row); got shape (2,) with non-finite values
    """
    try:
        arr = np.asarray(vector, dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"a query vector must be finite numbers (one row) ({e})") from None
    if arr.ndim != 1 or arr.size == 0 or not np.isfinite(arr).all():
        raise InvalidInputError(
            f"a query vector must be finite numbers (one row); got shape {arr.shape}"
            + (" with non-finite values" if arr.size and not np.isfinite(arr).all() else "")
        )
    return [float(x) for x in arr]
