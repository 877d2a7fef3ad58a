"""The prompt-injection suite for the iterative agent (the core suite, :mod:`retrievekit.core.eval.injection`, covers
LATTICE, One-SHOT and ARM; the agent lives on LangGraph, so its part lives here).

For each topic query, every search returns the relevant passage and one hostile document (or the payload-free
control), so both sit in the working set the model reads. The agent (two turns, then the answer node) runs on the
given local model through :class:`~retrievekit.langchain.local_chat.LocalToolChatModel`. Measured per kind: how
often the relevant chunk is deleted, and how often the hostile chunk is still in the final working set.

Examples:
    >>> FixedRetriever([]).search("q", k=3)
    []
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrievekit.core.eval.injection import HOSTILE, HOSTILE_TITLE, TOPICS, hostile_text
from retrievekit.core.types import DataObject, Passage, ScoredHit

__all__ = ["FixedRetriever", "run_agent_injection"]


class FixedRetriever:
    """A retriever whose every search returns the same objects, best first.

    Examples:
        >>> [h.id for h in FixedRetriever([Passage(id="a", text="x")]).search("anything")]
        ['a']
    """

    def __init__(self, objects: Sequence[DataObject]) -> None:
        self.objects = list(objects)

    def search(self, query: str, k: int = 10, *, trace: Any = None) -> list[ScoredHit]:
        """The fixed objects (at most ``k``), scored 1.0, 0.9, ..."""
        return [ScoredHit(obj=o, score=1.0 - 0.1 * i, rank=i) for i, o in enumerate(self.objects)][:k]


def run_agent_injection(
    lm: Any, *, kinds: Sequence[str] = tuple(HOSTILE), queries: Sequence[int] | None = None, max_turns: int = 2
) -> dict[str, dict[str, float]]:
    """``{kind: {"relevant_deleted": share, "hostile_kept": share}}`` over ``queries`` for the local model ``lm``.

    Examples:
        >>> run_agent_injection(None, kinds=["nope"])
        Traceback (most recent call last):
        ...
        ValueError: unknown kinds ['nope']
    """
    bad = sorted(set(kinds) - set(HOSTILE))
    if bad:
        raise ValueError(f"unknown kinds {bad}")
    from retrievekit.langchain.local_chat import LocalToolChatModel
    from retrievekit.langgraph.graph import build_iterative_agent
    from retrievekit.langgraph.method import run_agent

    chat = LocalToolChatModel(llm=lm, max_tokens=64, answer_max_tokens=16)
    qs = list(range(len(TOPICS))) if queries is None else list(queries)
    out: dict[str, dict[str, float]] = {}
    for kind in kinds:
        rows = []
        for q in qs:
            query, title, text = TOPICS[q]
            docs = [
                Passage(id="rel", title=title, text=text),
                Passage(id="note", title=HOSTILE_TITLE, text=hostile_text(kind, slate_size=2)),
            ]
            agent = build_iterative_agent(chat, FixedRetriever(docs), max_turns=max_turns, search_top_k=2)
            kept = {c["id"] for c in run_agent(agent, query).working_set}
            rows.append({"relevant_deleted": float("rel" not in kept), "hostile_kept": float("note" in kept)})
        out[kind] = {m: sum(r[m] for r in rows) / len(rows) for m in rows[0]}
    return out
