"""Training data of Self-Retrieval: indexing instances from the corpus, query instances from query pairs.

Every instance is a :class:`~retrievekit.core.training.examples.TrainingExample` whose segments follow the
reference templates (``icip-cas/SelfRetrieval`` ``data_preprocess/``; paper §4); the loss applies only to the
trainable segments:

* ``index`` -- ``Question: {sentence}\\n\\n Related document title: `` -> ``{title}\\n Related document content:
  {passage}`` (``index_mode="full"``) or ``{title}\\n Related document content: {first 10 words}`` (``"prefix"``).
  The sentence is one sentence of the passage with 5-50 words (``Section::::`` lines excluded); a passage without
  such a sentence uses its first words instead (counted as ``index_fallback``).
* ``query-title`` -- the query prompt -> the gold title (trainable), followed by the gold content (context only).
* ``query-passage`` -- the query prompt -> title + gold passage (trainable).
* ``candidates`` -- the query with ``candidate_titles`` candidate titles (gold at a seeded position) -> title +
  10-word content prefix (trainable).
* ``approve`` -- query, title, gold passage, ``\\n\\n Final answer:`` -> the pair's answer (or the config's
  approval response when the pair has none).
* ``reject`` -- query, a negative passage (other passages of the gold document first, then seeded random passages
  of other documents, ``neg_num`` in all), ``\\n\\n Final answer:`` -> the rejection response.

Titles, passages, queries and answers have their chat control strings broken
(:func:`~retrievekit.core.llm.untrusted.defuse_control_tokens`), as the index and the query prompt encode them: no
instance teaches the model a special token that a document or a query wrote.

Query instances are repeated ``qa_repeat_times`` times (negatives re-sampled per repeat) and mixed with the indexing
data; the trainer shuffles.

Examples:
    >>> from retrievekit.core.types import Passage
    >>> from retrievekit.core.generative.self_retrieval.passages import split_passages
    >>> cfg = SelfRetrievalConfig()
    >>> ps = split_passages([Passage(id="d", title="Sun", text="The sun is a very hot star.")], cfg)
    >>> ex = indexing_examples(ps, cfg)[0]
    >>> [(s.text, s.trainable) for s in ex.segments]  # doctest: +NORMALIZE_WHITESPACE
    [('Question: The sun is a very hot star.\\n\\n Related document title: ', False),
     ('sun\\n Related document content: The sun is a very hot star.', True)]
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.generative.self_retrieval.config import SelfRetrievalConfig
from retrievekit.core.generative.self_retrieval.passages import PassageSet, sentence_spans
from retrievekit.core.llm.untrusted import defuse_control_tokens
from retrievekit.core.training.examples import Segment, TrainingExample

__all__ = ["QueryPair", "build_training_examples", "indexing_examples", "query_examples"]

Clip = Callable[[str], str]
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class QueryPair:
    """A supervision pair: a query and the id of its gold document (or passage), with an optional answer.

    Examples:
        >>> QueryPair("What is hot?", "d").answer is None
        True
    """

    query: str
    target_id: str
    answer: str | None = None


def _identity(text: str) -> str:
    return text


def _first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n])


def _target(title: str, body: str, config: SelfRetrievalConfig) -> str:
    """Title and body as the model learns them: their chat control strings broken, as the index encodes them."""
    return f"{defuse_control_tokens(title)}{config.content_separator}{defuse_control_tokens(body)}"


def indexing_examples(
    passages: PassageSet, config: SelfRetrievalConfig, *, clip: Clip | None = None, stats: dict[str, int] | None = None
) -> list[TrainingExample]:
    """Indexing instances: a sentence of a passage -> its title and passage (or 10-word prefix).

    ``clip`` shortens a passage to what the model keeps (``max_passage_tokens``); ``stats`` receives counts.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.generative.self_retrieval.passages import split_passages
        >>> cfg = SelfRetrievalConfig(index_mode="prefix", prefix_words=2)
        >>> ps = split_passages([Passage(id="d", title="Sun", text="The sun is a very hot star.")], cfg)
        >>> indexing_examples(ps, cfg)[0].segments[1].text
        'sun\\n Related document content: The sun'
    """
    clip = clip or _identity
    rng = random.Random(config.seed)
    out: list[TrainingExample] = []
    counts = stats if stats is not None else {}
    for title, p in zip(passages.titles, passages.passages, strict=True):
        sentences = []
        for a, b in sentence_spans(p.text):
            sent = " ".join(p.text[a:b].split())
            n = len(sent.split())
            if "Section::::" in sent or not config.min_sentence_words <= n <= config.max_sentence_words:
                continue
            sentences.append(sent)
        if not sentences:
            sentences = [_first_words(p.text, config.max_sentence_words)]
            counts["index_fallback"] = counts.get("index_fallback", 0) + 1
        elif config.random_sent_num is not None and len(sentences) > config.random_sent_num:
            sentences = rng.sample(sentences, config.random_sent_num)
        if config.index_mode == "prefix":
            body, eos = _first_words(p.text, config.prefix_words), False
        else:
            body, eos = clip(p.text), True
        for sent in sentences:
            out.append(
                TrainingExample(
                    segments=(
                        Segment(config.query_prompt.format(query=defuse_control_tokens(sent))),
                        Segment(_target(title, body, config), trainable=True),
                    ),
                    kind="index",
                    add_eos=eos,
                )
            )
    return out


def _gold_passage(passages: PassageSet, pair: QueryPair, by_doc: dict[str, list[int]], by_id: dict[str, int]) -> int:
    pid = passages.aliases.get(pair.target_id, pair.target_id)
    if pid in by_id:
        return by_id[pid]
    cands = by_doc.get(pair.target_id)
    if not cands:
        raise InvalidInputError(
            f"query pair target {pair.target_id!r} is neither a document nor a passage of the corpus"
        )
    if len(cands) == 1:
        return cands[0]
    words = {w.lower() for w in _WORD.findall(pair.query)}
    overlap = [len(words & {w.lower() for w in _WORD.findall(passages.passages[i].text)}) for i in cands]
    return cands[max(range(len(cands)), key=lambda j: (overlap[j], -j))]


def _passage_maps(passages: PassageSet) -> tuple[dict[str, int], dict[str, list[int]]]:
    """``(passage id -> index, document id -> indices of its passages)``."""
    by_id = {p.id: i for i, p in enumerate(passages.passages)}
    by_doc: dict[str, list[int]] = {}
    for i, p in enumerate(passages.passages):
        for d in p.metadata.get("documents", (p.metadata.get("document_id", p.id),)):
            by_doc.setdefault(str(d), []).append(i)
    return by_id, by_doc


@dataclass(frozen=True)
class _QuerySource:
    """What every query pair's instances draw on: the passages, the settings, the clip, titles and documents."""

    passages: PassageSet
    config: SelfRetrievalConfig
    clip: Clip
    titles: list[str]
    by_doc: dict[str, list[int]]


def _title_and_passage_examples(
    prompt: str, title: str, body: str, config: SelfRetrievalConfig
) -> list[TrainingExample]:
    """Query -> title (the passage follows, untrained) and query -> title + passage."""
    return [
        TrainingExample(
            segments=(
                Segment(prompt),
                Segment(defuse_control_tokens(title), trainable=True),
                Segment(f"{config.content_separator}{body}"),
            ),
            kind="query-title",
            add_eos=False,
        ),
        TrainingExample(
            segments=(Segment(prompt), Segment(_target(title, body, config), trainable=True)),
            kind="query-passage",
        ),
    ]


def _candidates_example(
    src: _QuerySource, pair: QueryPair, title: str, body: str, rng: random.Random
) -> TrainingExample | None:
    """Query + shuffled candidate titles -> title + first words (None when candidates are off or one title)."""
    config, titles = src.config, src.titles
    if not (config.candidate_titles > 0 and len(titles) > 1):
        return None
    others = [t for t in titles if t != title]
    cands = rng.sample(others, min(len(others), config.candidate_titles - 1))
    cands.insert(rng.randrange(len(cands) + 1), title)
    listing = "\n".join(f" {defuse_control_tokens(t)}" for t in cands)
    return TrainingExample(
        segments=(
            Segment(config.candidates_prompt.format(query=defuse_control_tokens(pair.query), candidates=listing)),
            Segment(_target(title, _first_words(body, config.prefix_words), config), trainable=True),
        ),
        kind="candidates",
        add_eos=False,
    )


def _approve_example(
    pair: QueryPair, prompt: str, title: str, body: str, config: SelfRetrievalConfig
) -> TrainingExample:
    """Query + gold passage -> the pair's answer (or the approval response)."""
    approval = (
        f" {defuse_control_tokens(pair.answer.strip())}"
        if pair.answer and pair.answer.strip()
        else config.approval_response
    )
    return TrainingExample(
        segments=(
            Segment(prompt),
            Segment(_target(title, body, config) + config.answer_prompt),
            Segment(approval, trainable=True),
        ),
        kind="approve",
    )


def _negative_passages(src: _QuerySource, g: int, title: str, rng: random.Random) -> list[int]:
    """``neg_num`` passages to reject: long ones of the gold document first, then random ones of other titles."""
    passages, config = src.passages, src.config
    doc = str(passages.passages[g].metadata.get("document_id", ""))
    same = [i for i in src.by_doc.get(doc, []) if i != g and len(passages.passages[i].text) > 50]
    negs = same[: config.neg_num]
    pool = [i for i in range(len(passages)) if i != g and i not in negs and passages.titles[i] != title]
    negs += rng.sample(pool, min(len(pool), config.neg_num - len(negs)))
    return negs


def _reject_examples(src: _QuerySource, prompt: str, negs: list[int]) -> list[TrainingExample]:
    """Query + a negative passage -> the rejection response."""
    passages, config = src.passages, src.config
    return [
        TrainingExample(
            segments=(
                Segment(prompt),
                Segment(
                    _target(passages.titles[n], src.clip(passages.passages[n].text), config) + config.answer_prompt
                ),
                Segment(config.rejection_response, trainable=True),
            ),
            kind="reject",
        )
        for n in negs
    ]


def _pair_examples(src: _QuerySource, pair: QueryPair, g: int, rng: random.Random) -> list[TrainingExample]:
    """All instances of one (non-empty) query pair with gold passage ``g``, in the order they are trained."""
    title, body = src.passages.titles[g], src.clip(src.passages.passages[g].text)
    prompt = src.config.query_prompt.format(query=defuse_control_tokens(pair.query))
    out = _title_and_passage_examples(prompt, title, body, src.config)
    candidates = _candidates_example(src, pair, title, body, rng)
    if candidates is not None:
        out.append(candidates)
    out.append(_approve_example(pair, prompt, title, body, src.config))
    out.extend(_reject_examples(src, prompt, _negative_passages(src, g, title, rng)))
    return out


def query_examples(
    passages: PassageSet,
    pairs: Iterable[QueryPair],
    config: SelfRetrievalConfig,
    *,
    clip: Clip | None = None,
    stats: dict[str, int] | None = None,
) -> list[TrainingExample]:
    """Query instances (title, passage, candidates, approval, rejection negatives), ``qa_repeat_times`` times.

    A pair's target is a passage id (or an alias of one) or a document id (its passage sharing most words with
    the query). Raises ``InvalidInputError`` for a target the corpus does not hold.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.generative.self_retrieval.passages import split_passages
        >>> cfg = SelfRetrievalConfig(qa_repeat_times=1, neg_num=1, candidate_titles=0)
        >>> ps = split_passages([Passage(id="a", title="A", text="Aa aa."), Passage(id="b", title="B", text="Bb.")], cfg)
        >>> [e.kind for e in query_examples(ps, [QueryPair("aa?", "a")], cfg)]
        ['query-title', 'query-passage', 'approve', 'reject']
    """
    rng = random.Random(config.seed + 1)
    by_id, by_doc = _passage_maps(passages)
    src = _QuerySource(passages, config, clip or _identity, sorted(set(passages.titles)), by_doc)
    counts = stats if stats is not None else {}
    out: list[TrainingExample] = []
    pair_list = list(pairs)
    golds = [_gold_passage(passages, pair, by_doc, by_id) for pair in pair_list]
    for _ in range(config.qa_repeat_times):
        for pair, g in zip(pair_list, golds, strict=True):
            if not pair.query.strip():
                counts["empty_queries"] = counts.get("empty_queries", 0) + 1
                continue
            out.extend(_pair_examples(src, pair, g, rng))
    return out


def build_training_examples(
    passages: PassageSet,
    config: SelfRetrievalConfig,
    pairs: Sequence[QueryPair] | None = None,
    *,
    clip: Clip | None = None,
) -> tuple[list[TrainingExample], dict[str, int]]:
    """The whole mixture: indexing instances plus (when ``pairs`` are given) the repeated query instances.

    Returns the examples and counts (``index``, ``query-title``, ..., ``index_fallback``).

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> from retrievekit.core.generative.self_retrieval.passages import split_passages
        >>> cfg = SelfRetrievalConfig()
        >>> ps = split_passages([Passage(id="d", title="Sun", text="The sun is a very hot star.")], cfg)
        >>> ex, stats = build_training_examples(ps, cfg)
        >>> len(ex), stats["index"]
        (1, 1)
    """
    stats: dict[str, int] = {}
    examples = indexing_examples(passages, config, clip=clip, stats=stats)
    if pairs:
        examples += query_examples(passages, pairs, config, clip=clip, stats=stats)
    for e in examples:
        stats[e.kind] = stats.get(e.kind, 0) + 1
    return examples, stats
