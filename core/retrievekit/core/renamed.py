"""Names that changed, still answered under their old spelling for one release (with a ``DeprecationWarning``).

Trace counters are named ``<method>.<counter>`` everywhere (``lattice.slates``, ``oneshot.judge_crops``,
``arm.keywords``, ``iterative.retrieval_calls``). ARM, Self-Retrieval, the judge's scorer and the agent used to
write theirs without the method's dot; :class:`Counters` (the type of ``Trace.counters`` and of a bench result's
``counters_per_query``) answers a read by an old name with the value under the new one, and
:meth:`~retrievekit.core.trace.Trace.count` files a count made under an old name under the new one. Result files
are written with the new names only; stored per-query records with old names are read under the new ones
(:func:`counter_name` with ``warn=False``).

The first-stage candidate count (how many first-stage hits a method considers) is the option ``candidates`` for
every method, as llm-rerank's already was. judge-rerank (``rerank_k``), One-SHOT (``pool``) and ARM (``pool_size``)
still read it under their older option name, which :func:`method_options` accepts with a ``DeprecationWarning``
(``--option`` and ``run_benchmark(options=...)``; their config fields, and the Python factories that take config
fields, keep those names).

Examples:
    >>> import warnings
    >>> c = Counters({"arm.keywords": 3.0})
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = c["arm_keywords"]
    >>> old, "arm_keywords" in c, caught[0].category.__name__
    (3.0, True, 'DeprecationWarning')
    >>> counter_name("self_retrieval_titles", warn=False), counter_name("lattice.slates")
    ('self_retrieval.titles', 'lattice.slates')
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from retrievekit.core.errors import InvalidInputError

__all__ = ["CANDIDATES_OPTION", "COUNTER_PREFIXES", "COUNTERS", "Counters", "counter_name", "method_options"]

#: Counters renamed one by one (the agent's and the judge scorer's): old name -> new name.
COUNTERS: dict[str, str] = {
    "retrieval_calls": "iterative.retrieval_calls",
    "context_tokens": "iterative.context_tokens",
    "turns": "iterative.turns",
    "working_set_size": "iterative.working_set_size",
    "judge_calls": "iterative.judge_calls",
    "plan_replayed": "iterative.plan_replayed",
    "judge_pairs": "judge.pairs",
}
#: Counters renamed by prefix (every ARM and Self-Retrieval counter): old prefix -> new prefix.
COUNTER_PREFIXES: dict[str, str] = {"arm_": "arm.", "self_retrieval_": "self_retrieval."}


def _renamed(name: str) -> str | None:
    if name in COUNTERS:
        return COUNTERS[name]
    for old, new in COUNTER_PREFIXES.items():
        if name.startswith(old):
            return new + name[len(old) :]
    return None


def counter_name(name: str, *, warn: bool = True) -> str:
    """The current name of a trace counter (``name`` itself when it was never renamed).

    Examples:
        >>> counter_name("arm_mip_seconds", warn=False), counter_name("json.calls")
        ('arm.mip_seconds', 'json.calls')
    """
    new = _renamed(name)
    if new is None:
        return name
    if warn:
        warnings.warn(
            f"trace counter {name!r} is now {new!r}; the old name is answered until the next release",
            DeprecationWarning,
            stacklevel=3,
        )
    return new


class Counters(dict[str, float]):
    """A counters mapping that answers an old counter name (see :data:`COUNTERS`) with a ``DeprecationWarning``.

    It stores and lists the new names only; JSON writes it as a plain object.

    Examples:
        >>> c = Counters({"retrieval_calls": 2})  # built from old names: stored under the new ones
        >>> dict(c)
        {'iterative.retrieval_calls': 2}
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__()
        for key, value in dict(*args, **kwargs).items():
            self[counter_name(key, warn=False)] = value

    def _key(self, key: object) -> object:
        if isinstance(key, str) and not super().__contains__(key):
            new = _renamed(key)
            if new is not None:
                counter_name(key)  # warns
                return new
        return key

    def __getitem__(self, key: str) -> float:
        return super().__getitem__(str(self._key(key)))

    def __contains__(self, key: object) -> bool:
        return super().__contains__(self._key(key))

    def get(self, key: str, default: Any = None) -> Any:
        """``dict.get``, answering an old name too.

        Examples:
            >>> Counters({"judge.pairs": 4}).get("nope", 0)
            0
        """
        return super().get(str(self._key(key)), default)


#: Methods whose factory reads the option ``candidates`` under an older name: method -> that name.
CANDIDATES_OPTION: dict[str, str] = {
    "judge-rerank": "rerank_k",
    "oneshot": "pool",
    "arm": "pool_size",
    "arm-no-mip": "pool_size",
    "arm-no-verify": "pool_size",
}


def method_options(method: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` in the words of ``method``'s factory: ``candidates`` under the name it reads; its old name is
    accepted with a ``DeprecationWarning``, both at once are refused.

    Examples:
        >>> method_options("judge-rerank", {"candidates": 20, "mix": 0.5})
        {'mix': 0.5, 'rerank_k': 20}
        >>> method_options("bm25", {"k1": 1.2})
        {'k1': 1.2}
        >>> method_options("oneshot", {"candidates": 50, "pool": 60})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: oneshot: give candidates or pool (its old name), not both
    """
    out = dict(options)
    old = CANDIDATES_OPTION.get(method)
    if old is None:
        return out
    if old in out:
        if "candidates" in out:
            raise InvalidInputError(f"{method}: give candidates or {old} (its old name), not both")
        warnings.warn(
            f"option {old!r} of {method} is now 'candidates'; the old name is answered until the next release",
            DeprecationWarning,
            stacklevel=3,
        )
    elif "candidates" in out:
        out[old] = out.pop("candidates")
    return out
