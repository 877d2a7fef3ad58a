"""The relevance-judge hook every LLM-judged method shares: :func:`judge_relevance` and :func:`judge_from_options`.

LATTICE, llm-rerank, ARM verification, One-SHOT cropping and the iterative agent call :func:`judge_relevance` when
their ``llm=`` implements :class:`~retrievekit.core.llm.protocol.RelevanceJudge`; their bench factories read
``--judge DIR`` with :func:`judge_from_options`. Importing this module loads no model library (torch and
transformers load when a judge is loaded).

Each caller passes ``refs``: for every candidate, the ids of the corpus objects it stands for (a LATTICE node: the
leaves of its subtree; an ARM object or an agent's chunk: itself; a One-SHOT sentence: its passage). The hook
records them with the scores in ``trace.judged`` (:class:`~retrievekit.core.trace.JudgedBatch`), from which
``retrievekit bench`` measures the judge's accuracy on the candidates it scored; a judge that declares
``needs_refs = True`` (the gold-label :class:`~retrievekit.core.judge.oracle.OracleJudge`) also receives them as
``score_relevance(..., refs=...)``. Other judges are called exactly as before.

Examples:
    >>> class Half:
    ...     def score_relevance(self, query, candidates, *, trace=None):
    ...         return [0.5] * len(candidates)
    >>> judge_relevance(Half(), "q", ["a", "b"])
    [0.5, 0.5]
"""

from __future__ import annotations

import importlib
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError, LLMOutputError
from retrievekit.core.registry import MethodContext
from retrievekit.core.trace import JudgedBatch, Trace

__all__ = [
    "JUDGES",
    "ORACLE",
    "describe_judge",
    "judge_from_options",
    "judge_relevance",
    "load_judge_by_path",
    "parse_oracle",
    "resolve_judge",
]

ORACLE = "oracle"
"""The ``--judge`` value (``oracle``, ``oracle:S`` or ``oracle:S:SEED``)."""


def parse_oracle(spec: object) -> tuple[float, int] | None:
    """``(noise, seed)`` of an oracle spec (``oracle``, ``oracle:S``, ``oracle:S:SEED``); None for anything else.

    Raises:
        InvalidInputError: ``oracle:...`` with a noise outside ``[0, 1]`` or a seed that is not an integer.

    Examples:
        >>> parse_oracle("oracle"), parse_oracle("oracle:0.4:7"), parse_oracle(None)
        ((0.0, 0), (0.4, 7), None)
        >>> parse_oracle("oracle:2")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --judge oracle:S needs a noise S in [0, 1] (and optionally :SEED, an integer), got 'oracle:2'
    """
    if not isinstance(spec, str) or spec.split(":", 1)[0] != ORACLE:
        return None
    parts = spec.split(":")
    try:
        noise = float(parts[1]) if len(parts) > 1 else 0.0
        seed = int(parts[2]) if len(parts) > 2 else 0
        ok = len(parts) <= 3 and 0.0 <= noise <= 1.0
    except ValueError:
        ok = False
    if not ok:
        raise InvalidInputError(
            f"--judge oracle:S needs a noise S in [0, 1] (and optionally :SEED, an integer), got {spec!r}"
        )
    return noise, seed


def describe_judge(judge: Any) -> dict[str, Any]:
    """``{"name", "noise", "uses_gold_labels"}`` of a judge, as a benchmark result reports it.

    ``name`` is the judge's ``judge_name`` attribute, else its ``repr`` when its class defines one (a trained
    :class:`~retrievekit.core.judge.Judge` names its base model, prompt and calibration), else its class name;
    ``uses_gold_labels`` and ``noise`` come from the judge's attributes of those names (the oracle's).

    Examples:
        >>> class Half:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.5] * len(candidates)
        >>> describe_judge(Half())
        {'name': 'Half', 'noise': None, 'uses_gold_labels': False}
    """
    gold = bool(getattr(judge, "uses_gold_labels", False))
    name = getattr(judge, "judge_name", None)
    if not isinstance(name, str):
        name = repr(judge) if type(judge).__repr__ is not object.__repr__ else type(judge).__name__
    noise = getattr(judge, "noise", None) if gold else None
    return {"name": name[:200], "noise": float(noise) if noise is not None else None, "uses_gold_labels": gold}


def _check_refs(refs: Sequence[Collection[str]] | None, n: int) -> tuple[AbstractSet[str], ...] | None:
    """``refs`` as one set of ids per candidate (shared when already a set, lazy ones included: a LATTICE node's
    leaves are listed only if read), checked against ``n``."""
    if refs is None:
        return None
    if len(refs) != n:
        raise InvalidInputError(f"judge_relevance got {len(refs)} refs for {n} candidates")
    out: list[AbstractSet[str]] = []
    for r in refs:
        if isinstance(r, str):
            raise InvalidInputError(f"each refs item is a collection of object ids, not one string ({r!r})")
        if isinstance(r, frozenset) or (isinstance(r, AbstractSet) and not isinstance(r, set)):
            out.append(r)  # shared as it is (a LATTICE node's lazy leaves included)
        else:
            out.append(frozenset(str(x) for x in r))
    return tuple(out)


def judge_relevance(
    judge: Any,
    query: str,
    candidates: Sequence[str],
    *,
    trace: Trace | None = None,
    refs: Sequence[Collection[str]] | None = None,
) -> list[float]:
    """One batched ``judge.score_relevance`` call, checked: one finite number per candidate, clipped to ``[0, 1]``.

    The shared hook every LLM-judged method uses when its ``llm=`` implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. Counts ``judge.calls`` and ``judge.candidates`` in
    ``trace``; out-of-range scores are clipped and counted (``judge.clipped``, with a note). A reply of the wrong
    length, or with a non-number, NaN or infinity, raises :class:`~retrievekit.core.errors.LLMOutputError` (the
    caller falls back and says so).

    ``refs`` (one collection of object ids per candidate: what it stands for) are recorded with the scores in
    ``trace.judged`` and passed on to a judge whose class sets ``needs_refs = True``; such a judge without
    ``refs`` raises :class:`~retrievekit.core.errors.InvalidInputError`.

    Examples:
        >>> class Overlap:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         q = set(query.lower().split())
        ...         return [len(q & set(c.lower().split())) / len(q) for c in candidates]
        >>> t = Trace()
        >>> judge_relevance(Overlap(), "aspirin pain", ["aspirin relieves pain", "Rome"], trace=t)
        [1.0, 0.0]
        >>> t.counters["judge.calls"], t.counters["judge.candidates"]
        (1, 2)
        >>> judge_relevance(Overlap(), "q", [])
        []
    """
    texts = [str(c) for c in candidates]
    ref_sets = _check_refs(refs, len(texts))
    if not texts:
        return []
    needs_refs = bool(getattr(judge, "needs_refs", False))
    if needs_refs and ref_sets is None:
        raise InvalidInputError(
            f"{type(judge).__name__} needs refs= (the object ids each candidate stands for); this caller gave none"
        )
    if trace is not None:
        trace.count("judge.calls")
        trace.count("judge.candidates", len(texts))
    if needs_refs:
        raw = judge.score_relevance(query, texts, trace=trace, refs=ref_sets)
    else:
        raw = judge.score_relevance(query, texts, trace=trace)
    values = _scores_of(raw)
    if len(values) != len(texts):
        raise LLMOutputError(f"the judge returned {len(values)} scores for {len(texts)} candidates", raw=str(raw)[:200])
    if not all(math.isfinite(v) for v in values):
        raise LLMOutputError("the judge returned a NaN or infinite score", raw=str(raw)[:200])
    wild = [v for v in values if not _PLAUSIBLE[0] <= v <= _PLAUSIBLE[1]]
    if wild:  # not a probability off by rounding: a broken judge, whose ranking nothing should rest on
        raise LLMOutputError(f"the judge returned a score far outside [0, 1] ({wild[0]!r})", raw=str(raw)[:200])
    clipped = sum(1 for v in values if not 0.0 <= v <= 1.0)
    if clipped and trace is not None:
        trace.count("judge.clipped", clipped)
        trace.note("judge.clipped", f"{clipped} judge score(s) outside [0, 1] clipped")
    scores = [min(max(v, 0.0), 1.0) for v in values]
    if trace is not None and ref_sets is not None:
        trace.judged.append(JudgedBatch(describe_judge(judge), ref_sets, tuple(scores)))
    return scores


_TEXT = (str, bytes, bytearray)
_PLAUSIBLE = (-1.0, 2.0)
"""Scores outside ``[0, 1]`` but inside this range are clipped (and noted); outside it, the judge is refused."""


def _is_sequence(raw: Any) -> bool:
    """A list, tuple or array: sized and indexable (a generator or an iterator is not: it cannot be checked whole)."""
    return isinstance(raw, Sequence) or (
        hasattr(raw, "__len__") and hasattr(raw, "__getitem__") and hasattr(raw, "shape")
    )


def _scores_of(raw: Any) -> list[float]:
    """The judge's reply as floats: a sequence (list, tuple, array) of numbers, nothing else. A string, bytes, a
    mapping, a generator is refused whole (iterating it would give characters, keys or a one-shot stream), and so is
    an element that is text or a boolean (``True`` is no probability)."""
    if isinstance(raw, (*_TEXT, Mapping)) or not isinstance(raw, Iterable) or not _is_sequence(raw):
        raise LLMOutputError(f"the judge returned a {type(raw).__name__}, not a list of scores", raw=str(raw)[:200])
    values = []
    for x in raw:
        if isinstance(x, _TEXT) or not hasattr(x, "__float__") or _is_bool(x):
            raise LLMOutputError(f"the judge returned a non-number score ({x!r})", raw=str(raw)[:200])
        values.append(float(x))
    return values


def _is_bool(x: Any) -> bool:
    return isinstance(x, bool) or type(x).__name__ in ("bool", "bool_")  # numpy's bool too (np.bool, np.bool_)


JUDGES: dict[str, str] = {
    "trained": "retrievekit.core.judge:load_judge",
    "zero-shot": "retrievekit.core.judge:Judge.zero_shot",
    "cosine": "retrievekit.core.judge.cosine:CosineJudge",
    "served": "retrievekit.core.judge.served:ServedJudge.from_spec",
}
"""How ``--judge`` builds each kind of judge: ``module:attribute`` paths into the judge package, imported on first
use (as the method registry names its factories), so the model layer and the methods never import that package."""


def load_judge_by_path(kind: str) -> Any:
    """The loader :data:`JUDGES` names for ``kind``, imported now (the module is looked up at call time, so a test
    can put a scripted judge package in ``sys.modules``).

    Examples:
        >>> load_judge_by_path("trained").__name__
        'load_judge'
    """
    module, _, attr = JUDGES[kind].partition(":")
    try:
        found: Any = importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - the judge package ships with retrievekit
        raise InvalidInputError(f"--judge needs {module}, which failed to import: {e}") from e
    for part in attr.split("."):
        found = getattr(found, part)
    return found


def judge_from_options(ctx: MethodContext) -> tuple[Any, dict[str, Any]]:
    """The judge named by option ``judge_dir`` (``retrievekit bench --judge DIR``) and the other options.

    Returns ``(None, options)`` when no judge is asked for; otherwise loads it (:data:`JUDGES`: a trained judge
    with ``retrievekit.core.judge.load_judge``) and checks it implements
    :class:`~retrievekit.core.llm.protocol.RelevanceJudge`. ``--judge zero-shot`` (when no folder of that name
    exists) gives the untrained ``Judge.zero_shot(--llm)`` instead (``ctx.llm``: a loaded ``LocalLM`` or a model's
    name): the same readout without fine-tuning, for trained-vs-zero-shot comparisons at the same
    budget of calls. ``--judge cosine`` gives the embedding-cosine judge
    (:class:`~retrievekit.core.judge.cosine.CosineJudge`); ``--judge served`` the served ``--llm CLIENT:MODEL@URL``
    as a pointwise Yes/No judge (:class:`~retrievekit.core.judge.served.ServedJudge`). A ready judge in ``ctx.judge`` is returned as it is
    (``judge_dir`` then only names it): that is how the benchmark harness hands a method the gold-label oracle of
    ``--judge oracle[:S]``, which nothing else can build (it needs the dataset's qrels). Every method factory that
    accepts a judge calls this, so ``judge_dir`` never leaks into a method's own option parsing.

    Examples:
        >>> judge_from_options(MethodContext(corpus=[], options={"beam_size": 2}))
        (None, {'beam_size': 2})
        >>> judge_from_options(MethodContext(corpus=[], options={"judge_dir": ""}))
        (None, {})
        >>> judge_from_options(MethodContext(corpus=[], options={"judge_dir": "oracle:0.2"}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --judge oracle:0.2 reads the dataset's gold labels, so only the benchmark harness can build it (retrievekit bench, or run_benchmark with options={'judge_dir': 'oracle:0.2'})
    """
    opts = dict(ctx.options)
    judge_dir = opts.pop("judge_dir", None)
    if ctx.judge is not None:
        return ctx.judge, opts
    if judge_dir is None or not str(judge_dir).strip():
        return None, opts
    if parse_oracle(judge_dir) is not None and not Path(str(judge_dir)).exists():
        raise InvalidInputError(
            f"--judge {judge_dir} reads the dataset's gold labels, so only the benchmark harness can build it "
            f"(retrievekit bench, or run_benchmark with options={{'judge_dir': {str(judge_dir)!r}}})"
        )
    from retrievekit.core.llm.protocol import RelevanceJudge

    if str(judge_dir) == "zero-shot" and not Path(str(judge_dir)).exists():
        judge = load_judge_by_path("zero-shot")(ctx.llm)
    elif str(judge_dir) == "served" and not Path(str(judge_dir)).exists():  # --judge served --llm CLIENT:MODEL@URL
        judge = load_judge_by_path("served")(ctx.llm)
    elif str(judge_dir) == "cosine" and not Path(str(judge_dir)).exists():
        judge = load_judge_by_path("cosine")(ctx.take_embedder(), load_base=ctx.load_llm)
    else:
        judge = load_judge_by_path("trained")(str(judge_dir))
    if not isinstance(judge, RelevanceJudge):
        raise InvalidInputError(f"the judge loaded from {judge_dir} has no score_relevance(query, candidates)")
    return judge, opts


def resolve_judge(judge: Any = None, judge_dir: str | Path | None = None, *, llm: Any = None) -> Any:
    """The judge to use: ``judge`` as given, else :func:`~retrievekit.core.judge.load_judge` of ``judge_dir``, else the zero-shot judge of
    ``llm`` (a loaded ``LocalLM`` or a model's name; None: the default model). (The rerankers give a chat LLM
    without logits, a served one, to :func:`~retrievekit.core.lattice.listwise.resolve_reranking_judge` instead.)

    Used by the LlamaIndex / LangChain reranker edges.

    Examples:
        >>> class Half:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.5] * len(candidates)
        >>> isinstance(resolve_judge(Half()), Half)
        True
        >>> resolve_judge(object())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: judge must implement score_relevance, got object
    """
    if judge is not None:
        if not hasattr(judge, "score_relevance"):
            raise InvalidInputError(f"judge must implement score_relevance, got {type(judge).__name__}")
        return judge
    if judge_dir is not None:
        return load_judge_by_path("trained")(judge_dir)
    return load_judge_by_path("zero-shot")(llm)
