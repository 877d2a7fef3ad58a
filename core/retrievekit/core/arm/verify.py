"""Self-verification of one draft: the LLM names the objects needed to answer the question (reference ``verify.py``).

The prompt shows the question, each candidate object under its display name (tables: title, header and the rows
most similar to the question; passages: title and opening text) and the connections the MIP kept between them.

* **Scoring LM**: the answer is decoded under a grammar over candidate names, ``" Name1;" " Name2;" ... EOS``
  (each name at most once, at most ``max_objects``), so only real candidate names can come out; each chosen
  object's confidence is the mean log-probability of its name tokens in the best beam.
* **Chat LLM only**: schema-validated JSON ``{"objects": [names]}`` with an ``enum`` over the candidate names;
  no log-probs are available, so each chosen object gets log-prob 0 (aggregation then rests on the votes alone).
* **Relevance judge** (an ``llm`` implementing :class:`~retrievekit.core.llm.protocol.RelevanceJudge`, e.g. a
  fine-tuned judge from ``retrievekit bench --judge DIR``): no prompt and no names; one batched
  ``score_relevance(question, [serialized objects])`` call per draft gives each object ``p = P(relevant)``; the
  objects with ``p >= judge_threshold`` are chosen (the best one when none passes), each with confidence
  ``log(max(p, 1e-6))`` -- a log-probability like the scoring-LM path's, so :mod:`~retrievekit.core.arm.aggregate`
  combines it with the votes unchanged (``0.5 * mean log p + 0.5 * softmax(votes)``).

Examples:
    >>> grammar = NameGrammar([[5, 6], [7]], sep=[9], eos=0, max_items=2)
    >>> grammar.allowed([]), grammar.allowed([5]), grammar.allowed([5, 6]), grammar.allowed([5, 6, 9])
    ([5, 7], [6], [9], [0, 7])
    >>> grammar.parse([5, 6, 9, 7, 9], [-1.0, -3.0, -0.5, -2.0, -0.1])
    [(0, -2.0), (1, -2.0)]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from retrievekit.core.arm.recover import failure_of, falls_back, recovering
from retrievekit.core.arm.serialize import serialize_object
from retrievekit.core.errors import ConstraintError, RetrieveKitError
from retrievekit.core.llm.calls import ModelCall
from retrievekit.core.llm.drivers import send_call
from retrievekit.core.llm.protocol import RelevanceJudge
from retrievekit.core.llm.untrusted import DATA_RULE, fence, neutralize
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = [
    "VERIFY_PROMPT",
    "NameGrammar",
    "Verdict",
    "VerifyAsk",
    "ask_verification",
    "build_prompt",
    "read_verification",
    "verify_draft",
]

VERIFY_PROMPT = (
    "{rule}\nCandidate objects:\n{objects}\n{connections}\nQuestion: {question}\n"
    "Which objects are needed to answer the question? Name the minimum number of objects by their ids.\nObjects:"
)
SEP = ";"
JUDGE_LOGPROB_FLOOR = 1e-6
"""Judge probabilities are floored here before ``log`` (a confidence of at least about -13.8)."""


@dataclass
class Verdict:
    """A verified draft.

    Attributes:
        chosen: ``{object id: mean log-prob of its name}`` (0.0 when the verifier has no log-probs).
        ok: False when verification failed (the draft then casts no votes; ``message`` says why).

    Examples:
        >>> Verdict({"a": -0.5}).ok
        True
    """

    chosen: dict[str, float] = field(default_factory=dict)
    ok: bool = True
    message: str = ""


class NameGrammar:
    """Stateless allowed-next-token function for ``ITEM+ EOS``, ``ITEM = name tokens + separator tokens``.

    Args:
        names: token ids of each candidate name (distinct sequences).
        sep: token ids of the separator.
        eos: the EOS id (allowed only after a complete item).
        max_items: at most this many items (then only EOS).

    Examples:
        >>> NameGrammar([[1]], sep=[2], eos=0, max_items=1).allowed([1, 2])
        [0]
    """

    def __init__(self, names: Sequence[Sequence[int]], sep: Sequence[int], eos: int, max_items: int) -> None:
        self.eos = int(eos)
        self.sep = [int(t) for t in sep]
        self.max_items = max(1, int(max_items))
        self.items = [tuple(int(t) for t in n) + tuple(self.sep) for n in names]
        self.name_lens = [len(n) for n in names]
        # trie: node -> {token: child}; terminal[node] = item index
        self.children: list[dict[int, int]] = [{}]
        self.terminal: dict[int, int] = {}
        self.below: list[set[int]] = [set()]
        for idx, item in enumerate(self.items):
            node = 0
            self.below[0].add(idx)
            for t in item:
                nxt = self.children[node].get(t)
                if nxt is None:
                    nxt = len(self.children)
                    self.children[node][t] = nxt
                    self.children.append({})
                    self.below.append(set())
                node = nxt
                self.below[node].add(idx)
            self.terminal.setdefault(node, idx)

    def _walk(self, prefix: Sequence[int]) -> tuple[int | None, list[tuple[int, int]]]:
        node, start = 0, 0
        done: list[tuple[int, int]] = []
        for pos, t in enumerate(prefix):
            nxt = self.children[node].get(int(t))
            if nxt is None:
                return None, done
            node = nxt
            if node in self.terminal and not self.children[node]:
                done.append((self.terminal[node], start))
                node, start = 0, pos + 1
        return node, done

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Tokens allowed after ``prefix`` (the generated ids so far).

        Examples:
            >>> NameGrammar([[1], [3]], sep=[2], eos=0, max_items=2).allowed([1, 2])
            [0, 3]
        """
        node, done = self._walk(prefix)
        if node is None:
            return []
        if node == 0:
            if len(done) >= self.max_items:
                return [self.eos] if done else []
            chosen = {i for i, _ in done}
            out = [t for t, c in self.children[0].items() if self.below[c] - chosen]
            if done:
                out.append(self.eos)
            return sorted(out)
        return sorted(self.children[node])

    def parse(self, tokens: Sequence[int], logprobs: Sequence[float]) -> list[tuple[int, float]]:
        """Complete items of a generated sequence and the mean log-prob of each item's *name* tokens.

        Repeated items keep their first occurrence.

        Examples:
            >>> NameGrammar([[1]], sep=[2], eos=0, max_items=3).parse([1, 2, 1], [-1.0, 0.0, -5.0])
            [(0, -1.0)]
        """
        _, done = self._walk(list(tokens))
        out: list[tuple[int, float]] = []
        seen: set[int] = set()
        for idx, start in done:
            if idx in seen:
                continue
            seen.add(idx)
            span = list(logprobs[start : start + self.name_lens[idx]])
            out.append((idx, sum(span) / len(span) if span else 0.0))
        return out


def build_prompt(
    question: str,
    objs: Sequence[DataObject],
    names: Sequence[str],
    connections: Sequence[str],
    *,
    rows: int = 5,
    chars: int = 300,
    max_chars: int | None = None,
) -> str:
    """The verification prompt (see :data:`VERIFY_PROMPT`); with ``max_chars``, objects whose text would push the
    candidate list over it are cut to an even share (at least 80 characters each).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> print(build_prompt("Q?", [Passage(id="a", text="x", title="A")], ["A"], [])[len(DATA_RULE) + 1 :])
        Candidate objects:
        <data id="A">A
        x</data>
        <BLANKLINE>
        Question: Q?
        Which objects are needed to answer the question? Name the minimum number of objects by their ids.
        Objects:
    """
    bodies = [serialize_object(o, question, rows=rows, chars=chars) for o in objs]
    if max_chars is not None and objs and sum(len(b) for b in bodies) > max_chars:
        per = max(80, max_chars // len(objs))  # an even share per object (a wide table is cut, a passage kept)
        bodies = [b if len(b) <= per else b[: per - 3].rstrip() + "..." for b in bodies]
    blocks = fence(bodies, ids=list(names))
    conn = "Connections:\n" + "\n".join(f"- {neutralize(c)}" for c in connections) + "\n" if connections else ""
    return VERIFY_PROMPT.format(rule=DATA_RULE, objects=blocks, connections=conn, question=question)


@dataclass(frozen=True)
class VerifyAsk:
    """The model call that verifies one draft (a value: nothing is sent) and what reading its reply needs.

    Attributes:
        call: a JSON call (``{"objects": [names]}``) or, for a relevance judge, a judge call over the objects.
        objs: the draft's objects; ``names``: their display names (the JSON path's enum).
        judge_threshold: the judge path's threshold (None: the JSON path).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> ask = ask_verification(object(), "Q?", [Passage(id="a", text="x")], ["A"], [])
        >>> ask.call.kind, ask.call.schema["properties"]["objects"]["items"]
        ('json', {'enum': ['A']})
    """

    call: ModelCall
    objs: tuple[DataObject, ...]
    names: tuple[str, ...]
    judge_threshold: float | None = None


def ask_verification(
    llm: Any,
    question: str,
    objs: Sequence[DataObject],
    names: Sequence[str],
    connections: Sequence[str],
    *,
    max_objects: int = 4,
    rows: int = 5,
    chars: int = 300,
    max_chars: int | None = None,
    judge_threshold: float = 0.5,
) -> VerifyAsk:
    """The call that verifies a non-empty draft with a chat LLM (JSON enum over the names) or a relevance judge
    (one batched judge call; see the module docstring); :func:`read_verification` reads its reply.

    Examples:
        >>> from retrievekit.core.fakes import WordJudge
        >>> from retrievekit.core.types import Passage
        >>> ask_verification(WordJudge("x"), "Q?", [Passage(id="a", text="x")], ["A"], []).call.kind
        'judge'
    """
    if isinstance(llm, RelevanceJudge):
        bodies = [serialize_object(o, question, rows=rows, chars=chars) for o in objs]
        if max_chars is not None:  # each object is judged alone, so the prompt-wide cap bounds one object's text
            bodies = [b if len(b) <= max_chars else b[: max(0, max_chars - 3)].rstrip() + "..." for b in bodies]
        call = ModelCall.judge(question, bodies, refs=[(o.id,) for o in objs])
        return VerifyAsk(call, tuple(objs), tuple(names), judge_threshold)
    prompt = build_prompt(question, objs, names, connections, rows=rows, chars=chars, max_chars=max_chars)
    m = min(max_objects, len(objs))
    schema = {
        "type": "object",
        "properties": {"objects": {"type": "array", "items": {"enum": list(names)}, "minItems": 1, "maxItems": m}},
        "required": ["objects"],
    }
    return VerifyAsk(ModelCall.json("arm.verify", prompt, schema, max_tokens=24 * m + 16), tuple(objs), tuple(names))


def read_verification(ask: VerifyAsk, reply: Any, trace: Trace | None = None) -> Verdict:
    """The verdict from the reply to :meth:`ask_verification`'s call: the named objects (JSON) or those the judge
    kept; a failed call (the exception in the reply's slot) or a reply naming no candidate is a failed verdict.

    Examples:
        >>> from retrievekit.core.llm.protocol import JsonResult
        >>> from retrievekit.core.types import Passage
        >>> ask = ask_verification(object(), "Q?", [Passage(id="a", text="x")], ["A"], [])
        >>> read_verification(ask, JsonResult({"objects": ["A"]}, "")).chosen
        {'a': 0.0}
        >>> read_verification(ask, ValueError("no JSON")).message
        'JSON verification failed (ValueError: no JSON)'
    """
    judged = ask.judge_threshold is not None
    error = failure_of(reply)
    if error is not None:
        if not falls_back(error):
            raise error
        how = "judge" if judged else "JSON"
        return Verdict({}, False, f"{how} verification failed ({type(error).__name__}: {str(error)[:120]})")
    if ask.judge_threshold is not None:
        return _judge_verdict(ask.objs, [float(p) for p in reply], ask.judge_threshold, trace)
    chosen = reply.value.get("objects") if isinstance(reply.value, dict) else None
    by_name = {n: o.id for n, o in zip(ask.names, ask.objs, strict=True)}
    ids = [by_name[n] for n in (chosen or []) if isinstance(n, str) and n in by_name]
    if not ids:
        return Verdict({}, False, "the verifier named no candidate object")
    return Verdict(dict.fromkeys(ids, 0.0))


def verify_draft(
    llm: Any,
    question: str,
    objs: Sequence[DataObject],
    names: Sequence[str],
    connections: Sequence[str],
    *,
    scoring: bool,
    beams: int = 3,
    max_objects: int = 4,
    rows: int = 5,
    chars: int = 300,
    max_chars: int | None = None,
    judge_threshold: float = 0.5,
    trace: Trace | None = None,
) -> Verdict:
    """Verify one draft with a scoring LM (constrained to names), a chat LLM (JSON enum over names) or a relevance
    judge (objects with ``P(relevant) >= judge_threshold``; see the module docstring). The chat and judge paths are
    :func:`ask_verification`, the call sent now, and :func:`read_verification`.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> class Judge:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.9 if "Suspect" in c else 0.1 for c in candidates]
        >>> objs = [Passage(id="a", text="Prime Suspect is a drama."), Passage(id="b", text="Rome is old.")]
        >>> v = verify_draft(Judge(), "Who made Prime Suspect?", objs, ["A", "B"], [], scoring=False)
        >>> {k: round(x, 3) for k, x in v.chosen.items()}
        {'a': -0.105}
    """
    if not objs:
        return Verdict({}, True, "empty draft")
    if scoring and not isinstance(llm, RelevanceJudge):
        return _verify_constrained(
            llm,
            question,
            objs,
            names,
            connections,
            beams=beams,
            max_objects=max_objects,
            rows=rows,
            chars=chars,
            max_chars=max_chars,
            trace=trace,
        )
    ask = ask_verification(
        llm,
        question,
        objs,
        names,
        connections,
        max_objects=max_objects,
        rows=rows,
        chars=chars,
        max_chars=max_chars,
        judge_threshold=judge_threshold,
    )
    return read_verification(ask, send_call(ask.call, recovering(llm), trace), trace)


def _verify_constrained(
    llm: Any,
    question: str,
    objs: Sequence[DataObject],
    names: Sequence[str],
    connections: Sequence[str],
    *,
    beams: int,
    max_objects: int,
    rows: int,
    chars: int,
    max_chars: int | None,
    trace: Trace | None,
) -> Verdict:
    """The scoring LM's verification: in-process decoding under a grammar over the candidate names."""
    prompt = build_prompt(question, objs, names, connections, rows=rows, chars=chars, max_chars=max_chars)
    m = min(max_objects, len(objs))
    enc = llm.encode
    name_ids = [[t for t in enc(" " + n) if t != llm.eos_token_id] for n in names]
    keep = [i for i, ids in enumerate(name_ids) if ids]
    grammar = NameGrammar([name_ids[i] for i in keep], enc(SEP), llm.eos_token_id, m)
    longest = sorted((len(grammar.items[j]) for j in range(len(keep))), reverse=True)[:m]
    try:
        found = llm.constrained_beam_search(
            prompt,
            grammar.allowed,
            num_beams=beams,
            num_return_sequences=1,
            max_new_tokens=sum(longest) + 1,
            trace=trace,
        )
    except (ConstraintError, RetrieveKitError) as e:
        return Verdict({}, False, f"constrained verification failed ({type(e).__name__}: {str(e)[:120]})")
    if not found:
        return Verdict({}, False, "constrained verification returned no beam")
    best = found[0]
    picked = grammar.parse(best.token_ids, best.token_logprobs)
    if not picked:
        return Verdict({}, False, "the verifier named no complete object")
    return Verdict({objs[keep[i]].id: lp for i, lp in picked})


def _judge_verdict(objs: Sequence[DataObject], ps: Sequence[float], threshold: float, trace: Trace | None) -> Verdict:
    best = min(range(len(objs)), key=lambda i: (-ps[i], i))
    keep = [i for i in range(len(objs)) if ps[i] >= threshold]
    message = f"judge kept {len(keep)}/{len(objs)} objects with P(relevant) >= {threshold}"
    if not keep:
        keep = [best]
        message = f"no object reached P(relevant) >= {threshold}; the judge's best ({ps[best]:.3f}) is kept"
    if trace is not None:
        trace.count("arm.verify_judge")
        trace.note(
            "arm.judge",
            message,
            scores={o.id: round(p, 4) for o, p in zip(objs, ps, strict=True)},
            kept=[objs[i].id for i in keep],
        )
    return Verdict({objs[i].id: math.log(max(ps[i], JUDGE_LOGPROB_FLOOR)) for i in keep}, True, message)
