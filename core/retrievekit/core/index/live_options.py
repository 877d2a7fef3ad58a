"""A living index's settings, checked: the BM25 engine it names, the embedder it takes, ``hybrid``'s fusion
(:class:`~retrievekit.core.index.live.LiveIndex`'s ``options``, ``embedder``).

Examples:
    >>> bm25_config("bm25", {"bm25_engine": "tantivy"}).engine
    'tantivy'
    >>> fusion_settings("bm25", {"fusion": "rrf"})
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: ...
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.bm25 import BM25Config, config_for_option
from retrievekit.core.index.hybrid import FusionConfig
from retrievekit.core.options import check_option_keys

__all__ = [
    "ENGINE_KEY",
    "LIVE_METHODS",
    "bm25_config",
    "check_method",
    "fusion_settings",
    "no_embedder",
    "options_json",
]

LIVE_METHODS = ("bm25", "dense", "hybrid")
"""The methods a :class:`~retrievekit.core.index.live.LiveIndex` is itself; a method's own living index (a subclass:
LATTICE's :class:`~retrievekit.core.lattice.index.LiveLattice`, ARM's :class:`~retrievekit.core.arm.index.LiveArm`,
MindRef's :class:`~retrievekit.core.generative.mindref_index.LiveMindRef`) adds its name once its module is
imported."""

ENGINE_KEY = "bm25_engine"
"""The option that names the BM25 part's engine (``bm25`` and ``hybrid``)."""


def bm25_config(method: str, options: Mapping[str, Any]) -> BM25Config:
    """The BM25 part's settings: the engine named by the ``bm25_engine`` option (``bm25`` / ``hybrid``).

    Examples:
        >>> bm25_config("dense", {"bm25_engine": "tantivy"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: bm25_engine reaches no part of a dense LiveIndex (it has no BM25 part); leave it out
    """
    if ENGINE_KEY in options and method == "dense":
        raise InvalidInputError(
            f"{ENGINE_KEY} reaches no part of a dense LiveIndex (it has no BM25 part); leave it out"
        )
    return config_for_option(options.get(ENGINE_KEY))


def no_embedder(embedder: Any) -> Any:
    """``None`` for a ``bm25`` index, which embeds nothing; an embedder given to one is refused by name.

    Examples:
        >>> no_embedder(None) is None
        True
    """
    if embedder is not None:
        raise InvalidInputError("embedder= reaches no part of a bm25 LiveIndex (it embeds nothing); leave it out")
    return None


def fusion_settings(method: str, options: Mapping[str, Any]) -> tuple[FusionConfig, list[float]]:
    """The fusion settings of ``hybrid`` (its options checked); the other methods take no options.

    Examples:
        >>> fusion_settings("dense", {})[1]
        [1.0]
    """
    if method == "hybrid":
        from retrievekit.core.index.baselines import hybrid_settings

        return hybrid_settings(options)
    check_option_keys(options, (), label=method)
    return FusionConfig(), [1.0]


def options_json(value: Any) -> str:
    """``value`` as sorted JSON (options as a manifest keeps them: a tuple and a list alike).

    Examples:
        >>> options_json({"b": (1, 2), "a": 0}) == options_json({"a": 0, "b": [1, 2]})
        True
    """
    return json.dumps(value, sort_keys=True, default=str)


def check_method(method: str, methods: tuple[str, ...] = LIVE_METHODS) -> str:
    """``method`` when it is one of ``methods`` (a :class:`InvalidInputError` naming them otherwise).

    Examples:
        >>> check_method("bm25")
        'bm25'
        >>> check_method("lattice", ("bm25",))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a LiveIndex is one of ('bm25',), not 'lattice'
    """
    if method not in methods:
        more = ""
        if methods == LIVE_METHODS:
            more = (
                " (or 'lattice' / 'arm' / 'mindref', once retrievekit.core.lattice.index / .arm.index / "
                ".generative.mindref_index is imported)"
            )
        raise InvalidInputError(f"a LiveIndex is one of {methods}{more}, not {method!r}")
    return method
