"""A relevance judge from any chat LLM: candidates scored in slates with LATTICE's slate prompt (listwise).

A zero-shot :class:`~retrievekit.core.judge.Judge` reads a local model's next-token logits, which a served LLM does
not expose. :class:`ListwiseJudge` gives the judge rerankers (``JudgeReranker``, ``JudgeCompressor``) and every
judge hook a served LLM instead: the candidates go to the LLM in slates of ``slate_size`` numbered data blocks (the
prompt, schema and reply checks of :class:`~retrievekit.core.lattice.scoring.SlateScorer`), the slates side by side
(``max_concurrency``), and each candidate's ``P(relevant)`` is its score over ``score_max``. A slate whose reply is
unusable scores 0 for its candidates, noted as a ``"fallback"``.

Examples:
    >>> from retrievekit.core.llm.base import ChatLLMBase
    >>> from retrievekit.core.llm.protocol import Completion
    >>> class Fruit(ChatLLMBase):  # a stand-in LLM: blocks that mention fruit score 90 of 100
    ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
    ...         items = [l for l in prompt[-1].content.splitlines() if l.startswith("<data")]
    ...         return Completion('{"scores": [%s]}' % ", ".join("90" if "fruit" in l else "10" for l in items))
    >>> ListwiseJudge(Fruit()).score_relevance("fruit", ["Apples are fruit.", "Rust is a language."])
    [0.9, 0.1]
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.lattice.config import LatticeConfig
from retrievekit.core.lattice.scoring import SlateScorer
from retrievekit.core.llm.concurrency import map_calls
from retrievekit.core.llm.judge_hooks import resolve_judge
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.trace import Trace

__all__ = ["ListwiseJudge", "resolve_reranking_judge"]


class ListwiseJudge:
    """``score_relevance`` by slate prompts to a chat LLM (a ``RelevanceJudge`` for served models).

    Args:
        llm: any :class:`~retrievekit.core.llm.protocol.ChatLLM` (a wrapped ``ChatOpenAI`` / ``OpenAILike``).
        config: the slate prompt's settings (:class:`~retrievekit.core.lattice.config.LatticeConfig`: ``score_max``,
            ``reply_format``, ``max_candidate_chars``, ``retries``).
        slate_size: candidates per LLM call (ours: 10; LATTICE's leaf slates hold about as many).
        max_concurrency: slates in flight at once (ours: 4; capped by the adapter's own ``max_concurrency``).

    Examples:
        >>> ListwiseJudge(None)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: ListwiseJudge needs a chat LLM (complete_json), got NoneType
    """

    def __init__(
        self, llm: ChatLLM, config: LatticeConfig | None = None, *, slate_size: int = 10, max_concurrency: int = 4
    ) -> None:
        if not hasattr(llm, "complete_json"):
            raise InvalidInputError(f"ListwiseJudge needs a chat LLM (complete_json), got {type(llm).__name__}")
        if isinstance(slate_size, bool) or int(slate_size) < 1:
            raise InvalidInputError(f"slate_size must be >= 1, got {slate_size!r}")
        self.llm = llm
        self.config = config or LatticeConfig()
        self.scorer = SlateScorer(llm, self.config)
        self.slate_size = int(slate_size)
        self.max_concurrency = int(max_concurrency)
        self.name = f"listwise ({llm!r})"

    def __repr__(self) -> str:
        return f"ListwiseJudge({self.llm!r}, slate_size={self.slate_size})"

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Trace | None = None) -> list[float]:
        """``P(relevant)`` in ``[0, 1]`` per candidate, in input order (``score / score_max`` of its slate)."""
        texts = list(candidates)
        slates = [texts[i : i + self.slate_size] for i in range(0, len(texts), self.slate_size)]
        scored = map_calls(
            lambda slate, sub: self.scorer.score(query, slate, leaf=True, trace=sub).scores,
            slates,
            llm=self.llm,
            max_concurrency=self.max_concurrency,
            trace=trace,
        )
        return [float(s) for scores in scored for s in scores]


def resolve_reranking_judge(judge: Any = None, judge_dir: str | Path | None = None, *, llm: Any = None) -> Any:
    """The judge a reranker edge (``JudgeReranker``, ``JudgeCompressor``) uses: a :class:`ListwiseJudge` over ``llm``
    when it is a chat LLM without logits (a served one, a framework's model) and no ``judge`` / ``judge_dir`` is
    given; else :func:`~retrievekit.core.llm.judge_hooks.resolve_judge` (a trained judge, or the zero-shot judge of a
    local model). ``llm`` is resolved by :func:`~retrievekit.core.llm.resolve.resolve_llm` (None: the default model).

    Examples:
        >>> from retrievekit.core.llm.base import ChatLLMBase
        >>> class Served(ChatLLMBase):
        ...     pass
        >>> type(resolve_reranking_judge(llm=Served())).__name__
        'ListwiseJudge'
    """
    from retrievekit.core.llm.local import LocalLM

    llm = resolve_llm(llm, default=None) if judge is None and judge_dir is None else llm
    reads_logits = isinstance(llm, LocalLM) or hasattr(llm, "score_relevance")  # a LocalLM, or a judge
    if judge is None and judge_dir is None and llm is not None and hasattr(llm, "complete_json") and not reads_logits:
        return ListwiseJudge(llm)
    return resolve_judge(judge, judge_dir, llm=llm)
