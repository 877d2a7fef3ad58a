"""Input checks every retriever runs first: a query, a corpus and ``k``.

Each raises a typed error (:mod:`retrievekit.core.errors`) before any index is built or model loaded.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> check_query("red apples"), check_k(3), len(check_corpus([Passage(id="a", text="x")]))
    ('red apples', 3, 1)
"""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable
from typing import Any

from retrievekit.core.errors import EmptyCorpusError, EmptyQueryError, InvalidInputError
from retrievekit.core.types import DataObject, Passage, Table, TableRow, ensure_text

__all__ = [
    "CountSetting",
    "check_corpus",
    "check_held",
    "check_k",
    "check_object",
    "check_positive_int",
    "check_query",
    "empty_corpus_error",
]


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
    seen: set[str] = set()
    for o in objs:
        check_object(o)
        if o.id in seen:
            raise InvalidInputError(f"duplicate object id {o.id!r} in the corpus (ids must be unique)")
        seen.add(o.id)
    if not any(o.index_text().strip() for o in objs):
        raise empty_corpus_error(len(objs))
    return objs


def check_object(obj: object) -> DataObject:
    """``obj`` if it is a corpus item (a ``Passage``, ``Table`` or ``TableRow``), else :class:`InvalidInputError`:
    what :func:`check_corpus` asks of each item, for a check made one object at a time (a streamed build).

    Examples:
        >>> check_object("text")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: corpus items must be Passage/Table/TableRow, got str
    """
    if not isinstance(obj, (Passage, Table, TableRow)):
        raise InvalidInputError(f"corpus items must be Passage/Table/TableRow, got {type(obj).__name__}")
    return obj


def empty_corpus_error(n: int) -> EmptyCorpusError:
    """The error of a corpus of ``n`` objects none of which has text (``n`` = 0: no object at all).

    Examples:
        >>> str(empty_corpus_error(0)), str(empty_corpus_error(2))
        ('the corpus is empty: nothing to index', 'all 2 objects have empty text: nothing to index')
    """
    if n == 0:
        return EmptyCorpusError("the corpus is empty: nothing to index")
    return EmptyCorpusError(f"all {n} objects have empty text: nothing to index")


def check_k(k: object) -> int:
    """Validate ``k`` (a positive int).

    Examples:
        >>> check_k(3)
        3
        >>> check_k(0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: k must be a positive integer, got 0
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidInputError(f"k must be a positive integer, got {k!r}")
    return k


def check_positive_int(value: object, what: str) -> int:
    """``value`` (an int or its text, e.g. an environment variable) as a positive integer.

    Raises:
        InvalidInputError: anything else, naming ``what``.

    Examples:
        >>> check_positive_int(" 4 ", "the thread count")
        4
        >>> check_positive_int("1.5", "RETRIEVEKIT_EMBED_MEMO_SIZE")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: RETRIEVEKIT_EMBED_MEMO_SIZE must be a positive integer, got '1.5'
    """
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if number < 1:
        raise InvalidInputError(f"{what} must be a positive integer, got {value!r}")
    return number


_NOT_HELD = object()  # "every id is held" (None may be an id the error names)


def check_held(ids: Iterable[Any], held: Container[Any], message: str) -> None:
    """Nothing when every one of ``ids`` is in ``held``; else :class:`InvalidInputError` naming the first that is
    not (``message`` with ``{id!r}`` in it). The one rule of the changes in place that take held ids only (a
    ``delete`` that refuses unknown ids, an ``update``): checked first, so a refused change changes nothing.

    Examples:
        >>> check_held(["a", "b"], {"a": 1, "b": 2}, "update: id {id!r} is not held; add it")
        >>> check_held(["a", "c", "d"], {"a": 1}, "update: id {id!r} is not held; add it")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: update: id 'c' is not held; add it
    """
    missing = next((i for i in ids if i not in held), _NOT_HELD)
    if missing is not _NOT_HELD:
        raise InvalidInputError(message.format(id=missing))


class CountSetting:
    """A positive count read, first to last that is set: :meth:`set` (in code), the environment variable ``env_var``
    (checked with :func:`check_positive_int`), ``default()``. The one rule of retrievekit's counts (thread counts,
    the async bridge's workers, the embedding memo).

    Examples:
        >>> import os
        >>> workers = CountSetting("RETRIEVEKIT_EXAMPLE_WORKERS", "the worker count", default=lambda: 8)
        >>> workers.get()
        8
        >>> os.environ["RETRIEVEKIT_EXAMPLE_WORKERS"] = "3"; workers.get()
        3
        >>> workers.set(2); workers.get()
        2
        >>> workers.set(0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: the worker count must be a positive integer, got 0
        >>> workers.set(None); del os.environ["RETRIEVEKIT_EXAMPLE_WORKERS"]; workers.get()
        8
    """

    def __init__(self, env_var: str, what: str, default: Callable[[], int]) -> None:
        self.env_var = env_var
        self.what = what
        self.default = default
        self.override: int | None = None

    def set(self, n: int | None) -> None:
        """Set the count for this process (``None``: back to the environment variable or the default).

        Examples:
            >>> s = CountSetting("RETRIEVEKIT_EXAMPLE_N", "n", default=lambda: 1); s.set(4); s.override
            4
        """
        self.override = None if n is None else check_positive_int(n, self.what)

    def get(self) -> int:
        """The count now.

        Examples:
            >>> CountSetting("RETRIEVEKIT_EXAMPLE_N", "n", default=lambda: 5).get()
            5
        """
        if self.override is not None:
            return self.override
        raw = os.environ.get(self.env_var, "").strip()
        return check_positive_int(raw, f"${self.env_var}") if raw else self.default()
