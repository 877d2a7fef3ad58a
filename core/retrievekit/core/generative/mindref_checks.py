"""Checks and diagnosis of MindRef's output, for benchmarks and tests.

* :func:`hit_violations` -- every returned passage must be an exact token span of its document under the document's
  real title (the constraint guarantees it; the check proves it on every query).
* :func:`title_violations` -- every title the stage-1 search returns must be a real title of the corpus.
* :func:`diagnose_miss` -- when no gold document was recalled, was it a **search error** (a gold title scores above
  the best recalled title under the model's own length-normalised beam score, so a wider beam would find it) or a
  **model error** (the model prefers a wrong title; no beam width helps)?
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from retrievekit.core.generative.mindref import MindRef, TitleHit
from retrievekit.core.types import ScoredHit

__all__ = ["diagnose_miss", "hit_violations", "title_violations"]


def hit_violations(mr: MindRef, hits: Sequence[ScoredHit]) -> dict[str, int]:
    """Count hits whose passage is not an exact token span of their document, or whose title is not its title.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> class Bytes:  # the tokenizer side of a scoring LM, one token per byte (MindRef is run with a LocalLM)
        ...     eos_token_id = 0
        ...     def encode(self, text): return list(text.encode())
        ...     def decode(self, ids): return bytes(ids).decode()
        >>> mr = MindRef([Passage(id="a", title="Aspirin", text="Aspirin thins the blood.")], Bytes())
        >>> where = {"document_id": "a", "token_start": 9, "token_end": 24}  # " Aspirin thins the blood." tokens
        >>> good = ScoredHit(Passage(id="a", title="Aspirin", text="thins the blood", metadata=where), 1.0)
        >>> bad = ScoredHit(Passage(id="a", title="Asprin", text="thins blood", metadata=where), 0.5)
        >>> hit_violations(mr, [good, bad])
        {'title_not_real': 1, 'passage_not_span': 1}
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
        >>> from retrievekit.core.types import Passage
        >>> class Bytes:  # the tokenizer side of a scoring LM, one token per byte (MindRef is run with a LocalLM)
        ...     eos_token_id = 0
        ...     def encode(self, text): return list(text.encode())
        >>> mr = MindRef([Passage(id="a", title="Aspirin", text="Aspirin thins the blood.")], Bytes())
        >>> ids = tuple(b" Aspirin")  # the title as the trie holds it (title_prefix + title)
        >>> title_violations(mr, [TitleHit("Aspirin", ids, -0.1, (0,)), TitleHit("Asprin", ids, -0.2, (0,))])
        1
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
        >>> from retrievekit.core.types import Passage
        >>> class Flat:  # a scoring LM that gives every token log-probability -0.5 (MindRef is run with a LocalLM)
        ...     eos_token_id = 0
        ...     def encode(self, text): return list(text.encode())
        ...     def token_logprobs(self, prompt, continuation, *, trace=None): return [-0.5] * len(continuation)
        >>> mr = MindRef([Passage(id="a", title="Aspirin", text="Aspirin thins the blood.")], Flat())
        >>> q = "What thins the blood?"
        >>> [diagnose_miss(mr, q, recalled, {"a": 1}, best) for recalled, best in ((["a"], -1.0), ([], -1.0), ([], 0.0))]
        ['hit', 'search', 'model']
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
