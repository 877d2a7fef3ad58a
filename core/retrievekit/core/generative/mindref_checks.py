"""Checks and diagnosis of MindRef's output, for benchmarks and tests.

* :func:`hit_violations` -- every returned passage must be an exact token span of its document under the document's
  real title (the constraint guarantees it; the check proves it on every query).
* :func:`title_violations` -- every title the stage-1 search returns must be a real title of the corpus.
* :func:`diagnose_miss` -- when no gold document was recalled, was it a **search error** (a gold title scores above
  the best recalled title under the model's own length-normalised beam score, so a wider beam would find it) or a
  **model error** (the model prefers a wrong title; no beam width helps)?

Examples:
    >>> from retrievekit.core.generative.mindref import MindRef
    >>> from retrievekit.core.llm import LocalLM
    >>> mr = MindRef(corpus, LocalLM.load("smollm2"))  # doctest: +SKIP
    >>> hit_violations(mr, mr.search("What thins the blood?", k=2))  # doctest: +SKIP
    {'title_not_real': 0, 'passage_not_span': 0}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrievekit.core.generative.mindref import MindRef, TitleHit
from retrievekit.core.types import ScoredHit

__all__ = ["diagnose_miss", "hit_violations", "title_violations"]


def hit_violations(mr: MindRef, hits: Sequence[ScoredHit]) -> dict[str, int]:
    """Count hits whose passage is not an exact token span of their document, or whose title is not its title.

    Examples:
        >>> hits = mr.search("What thins the blood?", k=2)  # doctest: +SKIP
        >>> hit_violations(mr, hits)  # doctest: +SKIP
        {'title_not_real': 0, 'passage_not_span': 0}
    """
    index = {o.id: i for i, o in enumerate(mr.corpus)}
    out = {"title_not_real": 0, "passage_not_span": 0}
    for h in hits:
        meta = h.obj.metadata
        i = index[str(meta["document_id"])]
        span = [int(t) for t in mr.doc_tokens(i)[int(meta["token_start"]) : int(meta["token_end"])]]
        if mr.lm.decode(span).strip() != h.obj.text or h.obj.text not in mr.corpus[i].text:
            out["passage_not_span"] += 1
        if h.obj.title != mr.titles[i]:
            out["title_not_real"] += 1
    return out


def title_violations(mr: MindRef, titles: Sequence[TitleHit]) -> int:
    """Titles that are not a real title of the documents they point to, or not a path of the title trie.

    Examples:
        >>> title_violations(mr, mr.recall_titles("blood thinners"))  # doctest: +SKIP
        0
    """
    return sum(
        1 for t in titles if any(mr.titles[d] != t.title for d in t.documents) or tuple(t.token_ids) not in mr.trie
    )


def diagnose_miss(
    mr: MindRef, query: str, recalled: Sequence[str], gold: Mapping[str, int], best_title_score: float
) -> str | None:
    """``"hit"`` (a gold document was recalled), ``"search"`` (a gold title outscores the best recalled title:
    the beam search missed it), ``"model"`` (the model scores every gold title below the recalled one), or ``None``
    for a query without gold documents.

    Each gold title is scored like a beam: the sum of its token log-probabilities (end of sequence included)
    divided by its length to the power ``length_penalty``.

    Examples:
        >>> hits = mr.search("What thins the blood?", k=2)  # doctest: +SKIP
        >>> best = max(h.obj.metadata["title_score"] for h in hits)  # doctest: +SKIP
        >>> diagnose_miss(mr, "What thins the blood?", [h.id for h in hits], {"aspirin": 1}, best)  # doctest: +SKIP
        'hit'
    """
    if not gold:
        return None
    if set(recalled) & set(gold):
        return "hit"
    cfg = mr.config
    index = {o.id: i for i, o in enumerate(mr.corpus)}
    prompt = cfg.title_prompt.format(query=query)
    scores = []
    for doc_id in gold:
        if doc_id not in index:
            continue
        title_ids = [*mr.lm.encode(cfg.title_prefix + mr.titles[index[doc_id]]), mr.lm.eos_token_id]
        lps = mr.lm.token_logprobs(prompt, title_ids)
        scores.append(sum(lps) / len(lps) ** cfg.length_penalty)
    return "search" if scores and max(scores) > best_title_score else "model"
