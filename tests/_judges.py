"""Scripted relevance judges for the judge-hook tests (issue #9).

``OverlapJudge`` is a ``RelevanceJudge`` and a chat LLM, like the real judge: it scores P(relevant) as word overlap
with the query, or a planted number, and counts its chat calls so a test can assert the prompt path was bypassed.
``PromptScorer`` is the zero-shot prompt path (the same overlap scores as slate JSON), not a judge; it is a
``ScriptedChat``, the counting chat LLM that answers a function of the last message (the advise tests' too).
"""

from __future__ import annotations

import json
import re

from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion

_WORD = re.compile(r"[a-z0-9]+")


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if len(w) > 2}


class OverlapJudge(ChatLLMBase):
    """A judge (and a chat LLM, like the real one) scoring P(relevant) = word overlap with the query.

    ``planted`` maps a substring to a fixed score (first match wins) to force a decision. Its chat side must not
    be used for scoring: ``complete`` counts calls so the tests can assert the prompt path was bypassed.
    """

    def __init__(self, planted: dict[str, float] | None = None) -> None:
        self.planted = dict(planted or {})
        self.judge_calls: list[tuple[str, list[str]]] = []
        self.chat_calls = 0

    def score_relevance(self, query, candidates, *, trace=None):
        self.judge_calls.append((query, list(candidates)))
        if trace is not None:
            trace.record_llm_call(10 * len(candidates), 0)
        q = _words(query)
        out = []
        for c in candidates:
            fixed = next((v for key, v in self.planted.items() if key in c), None)
            out.append(fixed if fixed is not None else len(q & _words(c)) / max(1, len(q)))
        return out

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.chat_calls += 1
        self._record(trace, 1, 1)
        return Completion("Topic summary")


class ScriptedChat(ChatLLMBase):
    """A chat LLM that counts its calls (``calls``) and answers :meth:`reply` of the last message's text, the
    reply's token counts recorded in the call's trace."""

    def __init__(self) -> None:
        self.calls = 0

    def reply(self, text: str) -> tuple[str, int, int]:
        """``(reply, prompt tokens, completion tokens)`` for the last message's ``text``."""
        raise NotImplementedError

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        self.calls += 1
        out, prompt_tokens, completion_tokens = self.reply(prompt if isinstance(prompt, str) else prompt[-1].content)
        self._record(trace, prompt_tokens, completion_tokens)
        return Completion(out, prompt_tokens, completion_tokens)


class PromptScorer(ScriptedChat):
    """The zero-shot prompt path: the same overlap scores, answered as slate JSON."""

    def reply(self, text: str) -> tuple[str, int, int]:
        query = _words(re.search(r"Query: (.*)", text).group(1))
        items = re.findall(r'^<data id="(\d+)">(.*)</data>$', text, flags=re.M)
        scores = [min(100, 100 * len(query & _words(t)) // max(1, len(query))) for _, t in items]
        out = json.dumps({"scores": scores})
        return out, len(text) // 4, len(out) // 4
