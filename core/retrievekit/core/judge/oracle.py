"""The gold-label oracle judge: a diagnostic of controlled accuracy, never a retriever (``retrievekit bench --judge oracle``).

:class:`OracleJudge` reads the dataset's gold labels. It scores a candidate 1 when the candidate is, or stands for, a
gold object of the query and 0 otherwise; what a candidate stands for is the ``refs`` the method passes to
:func:`~retrievekit.core.llm.judge_hooks.judge_relevance` (a LATTICE internal node: the leaves of its subtree; an ARM
object: itself; a One-SHOT sentence: its passage; an agent's chunk: itself). With noise strength ``S`` in ``[0, 1]``
(``--judge oracle:S``) every judged pair gets its own reproducible error:

* the verdict is flipped with probability ``S / 2`` (``flip = h1 < S / 2``, so ``S = 1`` flips half: chance);
* the score is ``(1 - S/2) * verdict + (S/2) * h2``: verdicts of 1 land in ``[1 - S/2, 1)``, of 0 in ``[0, S/2)``,
  so ties are broken at random and a ``0.5`` threshold reads the (possibly flipped) verdict;
* ``h1, h2`` are uniform in ``[0, 1)``, from a BLAKE2b hash of ``(seed, query, sorted refs, candidate text)``:
  the same pair always gets the same score, whatever the order, batch or process it is scored in.

The expected ROC AUC, and the expected accuracy on positive/negative pairs, is ``1 - S/2`` (1 at ``S = 0``, 0.5 at
``S = 1``): a pair ranks right when neither or both verdicts flip (both flipped: wrong; one flipped: the jitter
decides, half the time). ``S = 0`` scores exactly 1 or 0. The measured figures of a run are in its result's
``judge`` block (:mod:`retrievekit.core.eval.judge_accuracy`); docs/methods/judge.md lists them for SciFact.

The oracle is built by the benchmark harness from the dataset's qrels (so a method only ever sees its scores) and
is keyed by query text (whitespace-normalised); a query it was not built for is refused. For methods that also need
free text (ARM keywords, a new LATTICE tree) it delegates to a base chat model (:class:`ChatDelegate`).

Examples:
    >>> oracle = OracleJudge({"who wrote it?": {"d1"}})
    >>> oracle.score_relevance("who wrote it?", ["a", "b", "c"], refs=[{"d1"}, {"d2"}, {"d2", "d1"}])
    [1.0, 0.0, 1.0]
    >>> noisy = OracleJudge({"who wrote it?": {"d1"}}, noise=0.5, seed=1)  # the second verdict is flipped
    >>> [round(s, 3) for s in noisy.score_relevance("who wrote it?", ["a", "b"], refs=[{"d1"}, {"d2"}])]
    [0.867, 0.952]
    >>> parse_oracle("oracle:0.25"), parse_oracle("runs/judge")
    ((0.25, 0), None)
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.delegate import ChatDelegate
from retrievekit.core.llm.judge_hooks import ORACLE, parse_oracle  # noqa: F401  (the examples use parse_oracle)
from retrievekit.core.trace import Trace

__all__ = ["OracleJudge", "normalize_query", "pair_uniforms"]


def normalize_query(text: str) -> str:
    """The oracle's key for a query: its words joined by single spaces.

    Examples:
        >>> normalize_query("  Who  wrote\\nit? ")
        'Who wrote it?'
    """
    return " ".join(str(text).split())


def pair_uniforms(seed: int, query: str, refs: Collection[str], text: str) -> tuple[float, float]:
    """Two independent uniforms in ``[0, 1)`` for one judged pair (order- and batch-independent).

    Examples:
        >>> pair_uniforms(0, "q", {"b", "a"}, "t") == pair_uniforms(0, "q", ["a", "b"], "t")
        True
        >>> pair_uniforms(0, "q", {"a"}, "t") != pair_uniforms(1, "q", {"a"}, "t")
        True
    """
    h = hashlib.blake2b(digest_size=16)
    for part in (str(seed), normalize_query(query), "\x1e".join(sorted(refs)), text):
        h.update(part.encode("utf-8"))
        h.update(b"\x1f")
    d = h.digest()
    return int.from_bytes(d[:8], "big") / 2.0**64, int.from_bytes(d[8:], "big") / 2.0**64


class OracleJudge(ChatDelegate):
    """A relevance judge that reads gold labels, with seeded noise of strength ``noise`` (see the module docstring).

    Args:
        gold: query text -> ids of its relevant objects (texts are whitespace-normalised).
        noise: ``S`` in ``[0, 1]``; each pair's verdict flips with probability ``S / 2`` (expected AUC ``1 - S/2``).
        seed: seed of the noise.
        base: a chat model for free-text requests (see :class:`~retrievekit.core.llm.delegate.ChatDelegate`).
        load_base: called once, on the first free-text request, when ``base`` is None.

    ``needs_refs = True``: :func:`~retrievekit.core.llm.judge_hooks.judge_relevance` passes it the ``refs`` of every
    candidate; ``uses_gold_labels = True``: the benchmark result says the run read the gold labels.

    Examples:
        >>> OracleJudge({"q": ["d1"]}).score_relevance("q", ["x"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: the oracle judge needs refs= (the object ids each candidate stands for); call it through retrievekit.core.llm.judge_hooks.judge_relevance from a method that passes them
        >>> OracleJudge({"q": ["d1"]}).score_relevance("other", ["x"], refs=[["d1"]])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: the oracle judge has no gold labels for the query 'other'
    """

    needs_refs = True
    uses_gold_labels = True
    judge_name = ORACLE

    def __init__(
        self,
        gold: Mapping[str, Collection[str]],
        *,
        noise: float = 0.0,
        seed: int = 0,
        base: Any = None,
        load_base: Callable[[], Any] | None = None,
    ) -> None:
        if isinstance(noise, bool) or not isinstance(noise, (int, float)) or not 0.0 <= float(noise) <= 1.0:
            raise InvalidInputError(f"oracle noise must be a number in [0, 1], got {noise!r}")
        self._gold: dict[str, frozenset[str]] = {}
        for text, ids in gold.items():
            key = normalize_query(text)
            self._gold[key] = self._gold.get(key, frozenset()) | frozenset(map(str, ids))
        self.noise = float(noise)
        self.seed = int(seed)
        self.base = base
        self.load_base = load_base

    @classmethod
    def from_qrels(cls, queries: Iterable[Any], qrels: Mapping[str, Mapping[str, float]], **kwargs: Any) -> OracleJudge:
        """An oracle for ``queries`` (objects with ``id`` and ``text``): gold = ids graded above 0 in ``qrels``.

        Examples:
            >>> from types import SimpleNamespace as Q
            >>> o = OracleJudge.from_qrels([Q(id="1", text="q?")], {"1": {"d1": 1, "d2": 0}})
            >>> o.score_relevance("q?", ["a", "b"], refs=[["d1"], ["d2"]])
            [1.0, 0.0]
        """
        gold = {q.text: [d for d, g in qrels.get(q.id, {}).items() if g > 0] for q in queries}
        return cls(gold, **kwargs)

    def __repr__(self) -> str:
        return f"OracleJudge(noise={self.noise}, seed={self.seed}, queries={len(self._gold)})"

    def label(self, query: str, refs: Collection[str]) -> int:
        """1 when ``refs`` holds a gold object of ``query``, else 0.

        Examples:
            >>> OracleJudge({"q": ["d1"]}).label("q", ["d9", "d1"])
            1
        """
        gold = self._gold.get(normalize_query(query))
        if gold is None:
            raise InvalidInputError(f"the oracle judge has no gold labels for the query {query!r}")
        return int(not gold.isdisjoint(refs))

    def score(self, query: str, refs: Collection[str], text: str = "") -> float:
        """The score of one pair (see the module docstring for the noise model).

        Examples:
            >>> OracleJudge({"q": ["d1"]}, noise=1.0).score("q", ["d1"], "x") in (0.0, 1.0)
            False
        """
        verdict = self.label(query, refs)
        if self.noise == 0.0:
            return float(verdict)
        flip, jitter = pair_uniforms(self.seed, query, refs, text)
        half = self.noise / 2.0
        if flip < half:
            verdict = 1 - verdict
        return (1.0 - half) * verdict + half * jitter

    def score_relevance(
        self,
        query: str,
        candidates: Sequence[str],
        *,
        trace: Trace | None = None,
        refs: Sequence[Collection[str]] | None = None,
    ) -> list[float]:
        """One score per candidate, from the gold labels of what ``refs`` says each candidate stands for.

        Examples:
            >>> OracleJudge({"q": ["d1"]}).score_relevance("q", ["x", "y"], refs=[["d2"], ["d1"]])
            [0.0, 1.0]
        """
        if refs is None:
            raise InvalidInputError(
                "the oracle judge needs refs= (the object ids each candidate stands for); call it through "
                "retrievekit.core.llm.judge_hooks.judge_relevance from a method that passes them"
            )
        if len(refs) != len(candidates):
            raise InvalidInputError(f"the oracle judge got {len(refs)} refs for {len(candidates)} candidates")
        return [self.score(query, r, str(c)) for c, r in zip(candidates, refs, strict=True)]
