"""HotpotQA (distractor, fullwiki, DPR and hard variants) and MuSiQue: multi-hop questions over their pools."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from retrievekit.core.eval.datasets.dataset import Dataset, Query, stable_id
from retrievekit.core.eval.datasets.files import _bad_split, _Files, _finish
from retrievekit.core.eval.datasets.spec import DatasetSpec
from retrievekit.core.types import DataObject, Passage

_HOTPOT_SPLITS: dict[str, str] = {
    "dev": "distractor",
    "train": "distractor",
    "distractor": "distractor",
    "fullwiki": "fullwiki",
    "dpr": "dpr",
    "hard": "hard",
}
_MUSIQUE_SPLITS: tuple[str, ...] = ("dev", "train")

__all__ = ["HOTPOTQA", "MUSIQUE"]

_HOTPOT_LAYOUT = (
    "multihop_qa/hotpotqa_train100_distractor_corpus.json.gz and "
    "multihop_qa/hotpotqa_train100_distractor_questions.json.gz (dev, train, distractor), "
    "multihop_qa/hotpotqa_dev_fullwiki500.json.gz (fullwiki), multihop_qa/hotpotqa_dev100_gold_dpr_passages.json.gz "
    "(dpr), multihop_qa/hotpotqa_dev_hard1000_gold_evidence.json.gz (hard)"
)
_MUSIQUE_LAYOUT = "multihop_qa/musique_train100_corpus.json.gz and multihop_qa/musique_train100_questions.json.gz"


def _hotpot_passage(title: str, sentences: Any) -> Passage:
    sents = [str(s) for s in sentences] if isinstance(sentences, list) else [str(sentences)]
    return Passage(id=title, title=title, text="".join(sents).strip(), metadata={"sentences": sents})


def _hotpot_query(q: dict[str, Any], qid: str, gold: list[str]) -> Query:
    meta: dict[str, Any] = {k: q[k] for k in ("answer", "type", "level", "supporting_facts") if k in q}
    meta["gold_titles"] = gold
    return Query(id=qid, text=str(q["question"]), metadata=meta)


def _ordered_unique(items: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(items))


_HOTPOT_FILES: dict[str, tuple[str, ...]] = {
    "distractor": ("hotpotqa_train100_distractor_corpus.json.gz", "hotpotqa_train100_distractor_questions.json.gz"),
    "fullwiki": ("hotpotqa_dev_fullwiki500.json.gz",),
    "dpr": ("hotpotqa_dev100_gold_dpr_passages.json.gz",),
    "hard": ("hotpotqa_dev_hard1000_gold_evidence.json.gz",),
}


_HotpotParts = tuple[list[DataObject], list[Query], dict[str, dict[str, int]]]
"""``(corpus, queries, qrels)`` of one HotpotQA variant."""


def _hotpot_gold_titles(q: dict[str, Any]) -> list[str]:
    return _ordered_unique([str(t) for t, _ in q.get("supporting_facts") or []])


def _hotpot_distractor(files: _Files, pool_path: Path, qpath: Path) -> _HotpotParts:
    """Pool = the distractor corpus file (title -> sentences); gold = the supporting-fact titles."""
    pool = files.json(pool_path)
    if not isinstance(pool, dict):
        raise files.bad(
            pool_path, f"expected a JSON object mapping title -> list of sentences, got {type(pool).__name__}"
        )
    corpus: list[DataObject] = [_hotpot_passage(str(t), s) for t, s in pool.items()]
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for item, q in files.json_list(qpath, ("_id", "question"), "question"):
        with files.record(qpath, item=item):
            gold = _hotpot_gold_titles(q)
            qid = files.query_id(qpath, str(q["_id"]), item=item)
            qrels[qid] = dict.fromkeys(gold, 1)
            queries.append(_hotpot_query(q, qid, gold))
    return corpus, queries, qrels


def _hotpot_fullwiki(files: _Files, path: Path) -> _HotpotParts:
    """Pool = the union of the questions' retrieved contexts; some gold titles are not in it.

    They are counted in ``metadata['qrels_missing_from_corpus']``: the recall ceiling is below 1.
    """
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for item, q in files.json_list(path, ("_id", "question"), "question"):
        with files.record(path, item=item):
            for title, sents in q.get("context") or []:
                if title not in seen:
                    seen.add(title)
                    corpus.append(_hotpot_passage(str(title), sents))
            gold = _hotpot_gold_titles(q)
            qid = files.query_id(path, str(q["_id"]), item=item)
            qrels[qid] = dict.fromkeys(gold, 1)
            queries.append(_hotpot_query(q, qid, gold))
    return corpus, queries, qrels


def _hotpot_dpr(files: _Files, path: Path) -> tuple[list[DataObject], list[Query], dict[str, dict[str, int]], int]:
    """Pool = the DPR Wikipedia passages the supporting facts were mapped to; gold = those passage ids.

    Also returns the number of supporting facts without a DPR passage.
    """
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    unmapped = 0
    for item, q in files.json_list(path, ("_id", "question"), "question"):
        with files.record(path, item=item):
            gold_ids: list[str] = []
            titles: list[str] = []
            for sf in q.get("supporting_facts") or []:
                titles.append(str(sf[0]))
                dpr = sf[3] if len(sf) > 3 else None
                if not isinstance(dpr, dict):
                    unmapped += 1
                    continue
                pid = str(dpr["id"])
                if pid not in seen:
                    seen.add(pid)
                    corpus.append(Passage(id=pid, title=dpr.get("title") or "", text=dpr.get("text") or ""))
                gold_ids.append(pid)
            qid = files.query_id(path, str(q["_id"]), item=item)
            qrels[qid] = dict.fromkeys(_ordered_unique(gold_ids), 1)
            query = _hotpot_query(q, qid, _ordered_unique(titles))
            queries.append(Query(query.id, query.text, {**query.metadata, "gold_dpr_ids": _ordered_unique(gold_ids)}))
    return corpus, queries, qrels, unmapped


def _hotpot_hard(files: _Files, path: Path) -> _HotpotParts:
    """Gold evidence sentences ``"Title | sentence"`` as the pool (no distractors); gold = their passages."""
    corpus: list[DataObject] = []
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    seen: set[str] = set()
    for item, q in files.json_list(path, ("question",), "question"):
        with files.record(path, item=item):
            gold_ids: list[str] = []
            titles: list[str] = []
            for ev in q.get("evidence") or []:
                title, sep, sentence = str(ev).partition(" | ")
                if not sep:
                    title, sentence = "", str(ev)
                pid = stable_id(title, sentence)
                if pid not in seen:
                    seen.add(pid)
                    corpus.append(Passage(id=pid, title=title, text=sentence))
                gold_ids.append(pid)
                titles.append(title)
            qid = files.query_id(path, str(q.get("_id", q.get("idx", item - 1))), item=item)
            qrels[qid] = dict.fromkeys(_ordered_unique(gold_ids), 1)
            query = _hotpot_query(q, qid, _ordered_unique(titles))
            queries.append(
                Query(query.id, query.text, {**query.metadata, "gold_evidence_ids": _ordered_unique(gold_ids)})
            )
    return corpus, queries, qrels


def _load_hotpotqa(root: Path, split: str, limit: int | None) -> Dataset:
    if split not in _HOTPOT_SPLITS:
        raise _bad_split("hotpotqa", split, list(_HOTPOT_SPLITS))
    variant = _HOTPOT_SPLITS[split]
    files = _Files("hotpotqa", root, _HOTPOT_LAYOUT)
    folder = files.folder("multihop_qa")
    paths = [files.need(folder / f, f"{variant} questions") for f in _HOTPOT_FILES[variant]]
    meta: dict[str, Any] = {"variant": variant}
    if variant == "distractor":
        pool_path, qpath = paths
        corpus, queries, qrels = _hotpot_distractor(files, pool_path, qpath)
    elif variant == "fullwiki":
        corpus, queries, qrels = _hotpot_fullwiki(files, paths[0])
    elif variant == "dpr":
        corpus, queries, qrels, unmapped = _hotpot_dpr(files, paths[0])
        meta["unmapped_supporting_facts"] = unmapped
    else:  # hard: gold evidence sentences "Title | sentence", no distractors
        corpus, queries, qrels = _hotpot_hard(files, paths[0])
    return _finish(files, split, corpus, queries, qrels, limit, meta)


def _load_musique(root: Path, split: str, limit: int | None) -> Dataset:
    if split not in _MUSIQUE_SPLITS:
        raise _bad_split("musique", split, list(_MUSIQUE_SPLITS))
    files = _Files("musique", root, _MUSIQUE_LAYOUT)
    folder = files.folder("multihop_qa")
    pool_path = files.need(folder / "musique_train100_corpus.json.gz", "paragraph pool: a JSON list of {title, text}")
    qpath = files.need(
        folder / "musique_train100_questions.json.gz", "questions: a JSON list with id, question, paragraphs"
    )
    pool = files.json_list(pool_path, ("text",), "paragraph")
    corpus: list[DataObject] = []
    by_content: dict[tuple[str, str], str] = {}
    for _, row in pool:
        title, text = str(row.get("title") or ""), str(row["text"])
        _musique_id(by_content, title, text, corpus)
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for item, q in files.json_list(qpath, ("id", "question"), "question"):
        with files.record(qpath, item=item):
            gold: list[str] = []
            titles: list[str] = []
            for p in q.get("paragraphs") or []:
                if p.get("is_supporting"):
                    title, text = str(p.get("title") or ""), str(p.get("paragraph_text") or "")
                    # a gold paragraph missing from the pool is added, so the gold stays retrievable and consistent
                    gold.append(_musique_id(by_content, title, text, corpus))
                    titles.append(title)
            qid = files.query_id(qpath, str(q["id"]), item=item)
            qrels[qid] = dict.fromkeys(_ordered_unique(gold), 1)
            meta: dict[str, Any] = {
                k: q[k] for k in ("answer", "answer_aliases", "answerable", "question_decomposition") if k in q
            }
            meta["gold_titles"] = _ordered_unique(titles)
            queries.append(Query(id=qid, text=str(q["question"]), metadata=meta))
    return _finish(files, split, corpus, queries, qrels, limit, {"n_pool_file": len(pool)})


def _musique_id(by_content: dict[tuple[str, str], str], title: str, text: str, corpus: list[DataObject]) -> str:
    key = (title, text)
    if key in by_content:
        return by_content[key]
    base = stable_id(title, text)
    used = set(by_content.values())
    pid, n = base, 1
    while pid in used:  # sha1 prefix collision between different contents: suffix deterministically
        pid = f"{base}-{n}"
        n += 1
    by_content[key] = pid
    corpus.append(Passage(id=pid, title=title, text=text))
    return pid


def _hotpot_found_splits(root: Path) -> list[str]:
    """One split per HotpotQA variant whose files are in ``multihop_qa/`` (what ``data check`` reads)."""
    prefixes = {
        "dev": "hotpotqa_train100_distractor_",
        "fullwiki": "hotpotqa_dev_fullwiki500",
        "dpr": "hotpotqa_dev100_gold_dpr",
        "hard": "hotpotqa_dev_hard1000",
    }
    return [split for split, prefix in prefixes.items() if any((root / "multihop_qa").glob(prefix + "*"))]


HOTPOTQA = DatasetSpec(
    name="hotpotqa",
    load=_load_hotpotqa,
    layout=_HOTPOT_LAYOUT,
    splits=lambda root: list(_HOTPOT_SPLITS),
    checked_splits=_hotpot_found_splits,
    present=lambda root: any((root / "multihop_qa").glob("hotpotqa_*")),
)
"""HotpotQA: ``dev`` (= ``train``, ``distractor``), ``fullwiki``, ``dpr`` and ``hard``, from ``multihop_qa/``."""

MUSIQUE = DatasetSpec(
    name="musique",
    load=_load_musique,
    layout=_MUSIQUE_LAYOUT,
    splits=lambda root: list(_MUSIQUE_SPLITS),
    checked_splits=lambda root: ["dev"],
    present=lambda root: any((root / "multihop_qa").glob("musique_*")),
)
"""MuSiQue: ``dev`` (= ``train``), from ``multihop_qa/``."""
