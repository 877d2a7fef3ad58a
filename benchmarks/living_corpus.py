"""A living corpus: quality and cost of indexes changed in place (``LiveIndex``) against a fresh build.

Quality (``--part quality``), SciFact dev: the index is built on half the corpus (a seeded half), the other half is
inserted in 10 batches, then 10 % of the final corpus is deleted; every dev claim is then searched in the updated
index and in an index built fresh on the final corpus, and nDCG@10 of both is printed with their largest per-claim
difference. Methods: ``bm25`` (the bm25s engine, and the tantivy engine, the default: ``bm25-tantivy``, as left by the
deletions and after ``LiveIndex.compact()``), ``dense``
(all-MiniLM-L6-v2 in Chroma) and ``hybrid`` (RRF; its BM25 part on bm25s, and on tantivy as ``hybrid-tantivy``).

LATTICE and ARM (``lattice-oracle``, ``lattice-cosine``, ``arm``, ``arm-oracle``) go through the same rounds with one more before the
deletions: a fiftieth of the documents left are edited (their sentences in reverse order; :func:`_plan`). LATTICE
uses extractive summaries (no LLM call; the row's ``summary_calls`` counts them) and its tree is kept in memory; the
updated tree and one built fresh on the live documents are searched with the exact oracle judge (the gold labels)
and with the cosine judge (all-MiniLM-L6-v2). ARM runs with ``llm="none"`` (its BM25 + dense candidate logic; as
``arm-tantivy`` with its BM25 part on the tantivy engine), and
as ``arm-oracle`` with its LLM stages answered from the gold labels: verification by the exact oracle judge
(``OracleJudge``, as LATTICE's oracle row; each draft object scored 1 when it is a gold document of the claim) and
the keyword decomposition by a scripted chat model given to the judge as its base (:class:`OracleKeywords`: the
titles of the claim's gold documents as its keywords; no model runs). Rows
give R@10 over the claims' live relevant documents, nDCG@10 over every claim (as the other rows) and the per-claim
difference's mean with a paired-bootstrap 95 % interval. SciFact's MiniLM vectors are kept in ``--work-dir``.

Cost (``--part cost``): on ``benchmarks/scale.py``'s corpus at ``--sizes`` documents (dense with its hashed-words
embedder, so the model's time is not what is measured), the ms per added document (100 added in one call) and per
deleted document (100 deleted in one call), beside a full build's seconds. ``lattice`` (extractive summaries) and
``arm`` the same (``arm-tantivy``: its BM25 part on the tantivy engine, changed in place); ``lattice-llm`` writes LLM summaries with a scripted model (:class:`EchoSummaries`, no model runs)
and counts its calls per added and per deleted document beside the bound (the tree's height per changed document).
``mindref``: the title trie of MindRef over the default local model's tokenizer (no text is encoded: MindRef
encodes a document's text when a query first recalls it).

    python benchmarks/living_corpus.py --data-dir "$RETRIEVEKIT_DATA_DIR" --part quality cost --sizes 10000 100000 \\
        --records benchmarks/records/living_corpus/rows.jsonl

Each finished row is a line of ``--records``; a rerun skips the rows recorded there and prints them all.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _records import keep_row, recorded_rows  # noqa: E402

from retrievekit.core.llm.base import ChatLLMBase  # noqa: E402
from retrievekit.core.llm.protocol import ChatMessage, Completion  # noqa: E402

METHODS = {
    "bm25": ("bm25", {"bm25_engine": "bm25s"}),  # the rows recorded before tantivy was the default
    "bm25-tantivy": ("bm25", {"bm25_engine": "tantivy"}),
    "bm25-tantivy-compacted": ("bm25", {"bm25_engine": "tantivy"}),  # quality only: LiveIndex.compact() at the end
    "dense": ("dense", {}),
    "hybrid": ("hybrid", {"bm25_engine": "bm25s"}),
    "hybrid-tantivy": ("hybrid", {"bm25_engine": "tantivy"}),  # the default engine, named
    "lattice-oracle": ("lattice", {"summaries": "extractive"}),  # quality only: searched with the exact oracle judge
    "lattice-cosine": ("lattice", {"summaries": "extractive"}),  # quality only: searched with the cosine judge
    "lattice": ("lattice", {"summaries": "extractive"}),  # cost only
    "lattice-llm": ("lattice", {}),  # cost only: LLM summaries written by a scripted model, its calls counted
    "arm": ("arm", {"bm25_engine": "bm25s"}),  # llm="none": ARM's BM25 + dense candidate logic, no LLM stage
    "arm-tantivy": ("arm", {"bm25_engine": "tantivy"}),  # the same, its BM25 part tantivy's (changed in place)
    "arm-oracle": (
        "arm",
        {"bm25_engine": "bm25s"},
    ),  # quality only: keywords and verification answered from the gold labels
    "mindref": ("mindref", {}),  # cost only: the default local model's tokenizer makes the title paths
}
QUALITY_ONLY = ("bm25-tantivy-compacted", "lattice-oracle", "lattice-cosine", "arm-oracle")
COST_ONLY = ("lattice", "lattice-llm", "mindref")


def _ndcg(index: Any, queries: list[Any], qrels: dict[str, dict[str, int]]) -> list[float]:
    from retrievekit.core.eval.metrics import ndcg_at_k

    return [ndcg_at_k([h.id for h in index.search(q.text, k=10)], qrels.get(q.id, {}), 10) for q in queries]


def _quality(name: str, data_dir: str, folder: Path) -> dict[str, Any]:
    import retrievekit.core.arm.index  # noqa: F401  (registers LiveIndex.create("arm"))
    import retrievekit.core.lattice.index  # noqa: F401  (registers LiveIndex.create("lattice"))
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.index.live import LiveIndex

    ds = load_dataset("scifact", data_dir, split="dev")
    corpus = list(ds.corpus)
    rng = np.random.default_rng(0)
    order = [corpus[i] for i in rng.permutation(len(corpus))]
    half, rest = order[: len(order) // 2], order[len(order) // 2 :]
    gone = sorted(order[i].id for i in rng.choice(len(order), size=len(order) // 10, replace=False))
    method, options = METHODS[name]
    start = time.perf_counter()
    with LiveIndex.create(method, path=folder / "updated", options=options) as updated:
        updated.upsert(half)
        for batch in np.array_split(np.arange(len(rest)), 10):
            updated.upsert([rest[i] for i in batch])
        updated.delete(gone)
        if name.endswith("-compacted"):
            updated.compact()
        changed_s = time.perf_counter() - start
        live = set(updated.ids())
        final = [o for o in corpus if o.id in live]
        with LiveIndex.create(method, path=folder / "fresh", options=options) as fresh:
            fresh.upsert(final)
            a, b = _ndcg(updated, ds.queries, ds.qrels), _ndcg(fresh, ds.queries, ds.qrels)
    return {
        "part": "quality",
        "method": name,
        "claims": len(a),
        "documents": len(final),
        "ndcg_updated": round(float(np.mean(a)), 4),
        "ndcg_fresh": round(float(np.mean(b)), 4),
        "largest_claim_difference": round(float(np.max(np.abs(np.array(a) - np.array(b)))), 4),
        "seconds_for_the_changes": round(changed_s, 1),
    }


def _plan(corpus: list[Any]) -> tuple[list[Any], list[Any], list[str], list[Any]]:
    """The changes of a quality run: a seeded half built, the other half inserted, the ids deleted (a tenth), and
    the edits (a fiftieth of the documents left, their sentences in reverse order): :func:`_quality`'s draws, one
    more after them."""
    rng = np.random.default_rng(0)
    order = [corpus[i] for i in rng.permutation(len(corpus))]
    half, rest = order[: len(order) // 2], order[len(order) // 2 :]
    gone = sorted(order[i].id for i in rng.choice(len(order), size=len(order) // 10, replace=False))
    kept = [o for o in corpus if o.id not in set(gone)]
    picked = sorted(int(i) for i in rng.choice(len(kept), size=max(1, len(kept) // 50), replace=False))
    edits = [replace(kept[i], text=_reversed_sentences(kept[i].text)) for i in picked]
    return half, rest, gone, edits


def _reversed_sentences(text: str) -> str:
    """An edit that keeps an abstract's content and changes its text: its sentences in reverse order.

    Examples:
        >>> _reversed_sentences("A b. C d! E?")
        'E? C d! A b.'
    """
    parts = re.split(r"(?<=[.!?])\s+", " ".join(text.split()))
    return " ".join(reversed(parts)) if len(parts) > 1 else f"Revised: {text}"


def _scifact_memo(data_dir: str, work_dir: Path | None, embedder: Any) -> None:
    """Hand ``embedder`` (all-MiniLM-L6-v2) the vectors of every SciFact abstract as LATTICE's leaves and the dense
    parts embed them (``index_text()`` cut to ``LEAF_EMBED_CHARS``, and whole), computed once and kept in
    ``work_dir/scifact-minilm-memo.npz``: the same texts and model, so the same vectors, not encoded again."""
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.lattice.build import LEAF_EMBED_CHARS

    path = work_dir / "scifact-minilm-memo.npz" if work_dir is not None else None
    if path is not None and path.is_file():
        saved = np.load(path)  # numpy drops a digest's trailing zero bytes: put them back
        embedder.remember([bytes(d).ljust(16, b"\0") for d in saved["digests"]], saved["vectors"])
        return
    corpus = load_dataset("scifact", data_dir).corpus
    texts = sorted({t for o in corpus for t in (o.index_text(), o.index_text()[:LEAF_EMBED_CHARS])})
    vectors = embedder.embed_documents(texts)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, digests=np.array([embedder.digest(t) for t in texts], dtype="S16"), vectors=vectors)
        os.replace(tmp, path)  # whole or absent


_CHANGED: dict[tuple[str, str], Any] = {}
"""The updated and the fresh index of a method per (method, data dir), kept for the other judge's row."""


class OracleKeywords(ChatLLMBase):
    """The scripted base model of the ``arm-oracle`` row's :class:`~retrievekit.core.judge.oracle.OracleJudge`: it
    answers ARM's keyword prompt (``Question: ...``, JSON ``{"keywords": [{"keyword", "similar"}]}``) with the
    titles of the claim's gold documents (at most 4), read from the qrels; ``calls`` counts the requests. A prompt
    naming no known claim gets no keywords (ARM then falls back to the claim's words, and says so in its trace).

    Examples:
        >>> llm = OracleKeywords({"Tea helps?": ["Tea and sleep", "Green tea"]})
        >>> json.loads(llm.complete("Split it...\\nQuestion: Tea  helps?").text)["keywords"][1]
        {'keyword': 'Green tea', 'similar': []}
        >>> llm.complete("Question: other").text, llm.calls
        ('{"keywords": []}', 2)
    """

    def __init__(self, titles: dict[str, list[str]]) -> None:
        self.titles = {" ".join(q.split()): list(t) for q, t in titles.items()}
        self.calls = 0

    @classmethod
    def from_dataset(cls, ds: Any) -> OracleKeywords:
        """Each claim's gold titles (documents graded above 0 in ``ds.qrels``, in the order of the qrels)."""
        title = {o.id: o.title or o.text[:80] for o in ds.corpus}
        gold = {
            q.text: [title[d] for d, g in ds.qrels.get(q.id, {}).items() if g > 0 and d in title] for q in ds.queries
        }
        return cls(gold)

    def complete(self, prompt: str | Sequence[ChatMessage], **limits: Any) -> Completion:
        """The JSON keywords of the claim the prompt names on its last ``Question:`` line (the limits are accepted)."""
        self.calls += 1
        texts = [prompt] if isinstance(prompt, str) else [m.content for m in prompt]
        asked = [line[len("Question:") :] for t in texts for line in t.splitlines() if line.startswith("Question:")]
        titles = self.titles.get(" ".join(asked[-1].split()), []) if asked else []
        return Completion(json.dumps({"keywords": [{"keyword": t, "similar": []} for t in titles[:4]]}))


def _row_llm(name: str, ds: Any) -> Any:
    """The model of a LATTICE / ARM quality row: none for LATTICE (extractive summaries; its rows judge the trees
    afterwards), ``"none"`` for ``arm``, the gold-label oracle with :class:`OracleKeywords` for ``arm-oracle``."""
    from retrievekit.core.judge.oracle import OracleJudge

    if name == "arm-oracle":
        return OracleJudge.from_qrels(ds.queries, ds.qrels, base=OracleKeywords.from_dataset(ds))
    return "none" if name in ("arm", "arm-tantivy") else None


def _changed_pair(name: str, data_dir: str, work_dir: Path | None, folder: Path) -> Any:
    """The row's index changed in rounds (:func:`_plan`: half built, the rest in 10 batches, the edits, the
    deletions) and one built fresh on the documents it holds, with what the changes cost; a LATTICE pair is made
    once per process (both judges' rows search its trees)."""
    from types import SimpleNamespace

    import retrievekit.core.arm.index  # noqa: F401  (registers LiveIndex.create("arm"))
    import retrievekit.core.lattice.index  # noqa: F401  (registers LiveIndex.create("lattice"))
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.index.live import LiveIndex
    from retrievekit.core.trace import Trace

    method, options = METHODS[name]
    if (method, data_dir) in _CHANGED:  # the tree in memory, kept for the other judge's row
        return _CHANGED[method, data_dir]
    ds = load_dataset("scifact", data_dir, split="dev")
    corpus = list(ds.corpus)
    half, rest, gone, edits = _plan(corpus)
    emb = MiniLMEmbedder.default()
    _scifact_memo(data_dir, work_dir, emb)
    llm = _row_llm(name, ds)
    path = folder / f"{method}-updated" if method == "arm" else None  # the tree is kept in memory (see the docs)
    trace, start = Trace(), time.perf_counter()
    updated = LiveIndex.create(method, path=path, options=options, embedder=emb, llm=llm)
    updated.upsert(half, trace=trace)
    for batch in np.array_split(np.arange(len(rest)), 10):
        updated.upsert([rest[i] for i in batch], trace=trace)
    updated.upsert(edits, trace=trace)
    updated.delete(gone, trace=trace)
    changed_s = time.perf_counter() - start
    by_id = {o.id: o for o in [*corpus, *edits]}
    final = [by_id[i] for i in updated.ids()]
    start = time.perf_counter()
    fresh = LiveIndex.create(
        method, path=folder / f"{method}-fresh" if path else None, options=options, embedder=emb, llm=llm
    )
    fresh.upsert(final)
    pair = SimpleNamespace(
        ds=ds,
        emb=emb,
        llm=llm,
        updated=updated,
        fresh=fresh,
        final=final,
        edits=len(edits),
        trace=trace,
        changed_s=changed_s,
        fresh_s=time.perf_counter() - start,
    )
    if path is None:
        _CHANGED[method, data_dir] = pair
    return pair


def _paired(a: list[float], b: list[float]) -> dict[str, float]:
    """The mean of ``a - b`` per claim with a seeded paired-bootstrap 95 % interval (2,000 resamples).

    Examples:
        >>> _paired([1.0, 0.0], [1.0, 0.0])
        {'mean': 0.0, 'ci95_low': 0.0, 'ci95_high': 0.0}
    """
    d = np.array(a) - np.array(b)
    rng = np.random.default_rng(0)
    means = d[rng.integers(0, len(d), size=(2000, len(d)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return {"mean": round(float(d.mean()), 4), "ci95_low": round(float(low), 4), "ci95_high": round(float(high), 4)}


def _scores(search: Any, queries: list[Any], qrels: dict[str, dict[str, int]], live: set[str]) -> tuple[list, ...]:
    """Each claim's top 10 ids through ``search(text, k)``, its nDCG@10 (every claim, the dataset's labels, as the
    other rows) and R@10 of its live relevant documents (the claims that have one; a deleted one cannot be found)."""
    from retrievekit.core.eval.metrics import ndcg_at_k, recall_at_k

    ranked = [[h.id for h in search(q.text, 10)] for q in queries]
    ndcg = [ndcg_at_k(r, qrels.get(q.id, {}), 10) for r, q in zip(ranked, queries, strict=True)]
    gold = [{d: g for d, g in qrels.get(q.id, {}).items() if d in live and g > 0} for q in queries]
    rec = [recall_at_k(r, g, 10) for r, g in zip(ranked, gold, strict=True) if g]
    return ranked, rec, ndcg


def _method_quality(name: str, data_dir: str, folder: Path, work_dir: Path | None) -> dict[str, Any]:
    """A ``lattice-oracle`` / ``lattice-cosine`` / ``arm`` quality row (see the module docstring)."""
    from retrievekit.core.judge.cosine import CosineJudge
    from retrievekit.core.judge.oracle import OracleJudge
    from retrievekit.core.lattice import drift
    from retrievekit.core.lattice.search import Lattice

    method = METHODS[name][0]
    pair = _changed_pair(name, data_dir, work_dir, folder)
    ds, queries, live = pair.ds, list(pair.ds.queries), {o.id for o in pair.final}
    row: dict[str, Any] = {"part": "quality", "method": name, "claims": len(queries), "documents": len(pair.final)}
    if method == "lattice":
        judge = OracleJudge.from_qrels(queries, ds.qrels) if name.endswith("oracle") else CosineJudge(pair.emb)
        searches = [Lattice(i.tree, judge, i.search_config, embedder=pair.emb) for i in (pair.updated, pair.fresh)]
        found = [_scores(lambda q, k, s=s: s.search(q, k), queries, ds.qrels, live) for s in searches]
        report = drift(pair.updated.tree)
        row |= {
            "judge": judge.judge_name,
            "leaves_are_the_live_documents": sorted(pair.updated.tree.leaf_ids()) == sorted(o.id for o in pair.final),
            "height_updated": pair.updated.tree.height,
            "height_fresh": pair.fresh.tree.height,
            "rebuild_advised": list(report.reasons),
        }
        row["summary_calls"] = int(pair.trace.counters.get("lattice.update.summary_calls", 0))
    else:
        found = [_scores(i.search, queries, ds.qrels, live) for i in (pair.updated, pair.fresh)]
        row["same_ranking_claims"] = sum(a == b for a, b in zip(found[0][0], found[1][0], strict=True))
        if name == "arm-oracle":  # the scripted keyword model's requests: one per claim and index searched
            row |= {"judge": pair.llm.judge_name, "keyword_calls": pair.llm.base.calls}
        if METHODS[name][1].get("bm25_engine") == "tantivy":  # deleted documents its statistics still count
            row["bm25_pending_deletes"] = pair.updated._bm25.pending_deletes
    (_, rec_a, nd_a), (_, rec_b, nd_b) = found
    row |= {
        "edited": pair.edits,
        "claims_with_live_gold": len(rec_a),
        "recall10_updated": round(float(np.mean(rec_a)), 4),
        "recall10_fresh": round(float(np.mean(rec_b)), 4),
        "ndcg_updated": round(float(np.mean(nd_a)), 4),
        "ndcg_fresh": round(float(np.mean(nd_b)), 4),
        "ndcg_difference": _paired(nd_a, nd_b),
        "recall10_difference": _paired(rec_a, rec_b),
        "largest_claim_difference": round(float(np.max(np.abs(np.array(nd_a) - np.array(nd_b)))), 4),
        "seconds_for_the_changes": round(pair.changed_s, 1),
        "seconds_for_the_fresh_build": round(pair.fresh_s, 1),
    }
    return row


class EchoSummaries(ChatLLMBase):
    """The scripted LLM of the ``lattice-llm`` cost row: each summary is the first item of the prompt, cut to 12
    words (one fixed text would give every node the same vector and route every document alike); ``calls`` counts
    the requests, which is what the row measures (no model runs).

    Examples:
        >>> llm = EchoSummaries()
        >>> llm.complete("- Apples are red. More\\n- Bananas\\n\\nWhat topic?").text, llm.calls
        ('Apples are red. More', 1)
    """

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, prompt: str | Sequence[ChatMessage], **limits: Any) -> Completion:
        """The first item of the prompt's last message, cut to 12 words (the limits are accepted)."""
        self.calls += 1
        text = prompt if isinstance(prompt, str) else prompt[-1].content
        first = text.strip().splitlines()[0] if text.strip() else ""
        return Completion(" ".join(first.lstrip("- ").split()[:12]) or "nothing")


def _cost(name: str, data_dir: str, n: int, folder: Path) -> dict[str, Any]:
    from scale import HashedWords, scale_corpus

    import retrievekit.core.arm.index  # noqa: F401  (registers LiveIndex.create("arm"))
    import retrievekit.core.generative.mindref_index  # noqa: F401  (registers LiveIndex.create("mindref"))
    import retrievekit.core.lattice.index  # noqa: F401  (registers LiveIndex.create("lattice"))
    from retrievekit.core.index.live import LiveIndex

    corpus = scale_corpus(data_dir, n + 100)
    base, extra = corpus[:n], corpus[n:]
    method, options = METHODS[name]
    embedder = HashedWords() if method not in ("bm25", "mindref") else None
    llm = EchoSummaries() if name == "lattice-llm" else "none" if method == "arm" else None
    row: dict[str, Any] = {"part": "cost", "method": name, "documents": n}
    with LiveIndex.create(method, path=folder / "idx", options=options, embedder=embedder, llm=llm) as idx:
        start = time.perf_counter()
        idx.upsert(base)
        build_s = time.perf_counter() - start
        built_calls = getattr(llm, "calls", 0)
        h0 = idx.tree.height if method == "lattice" else None
        start = time.perf_counter()
        idx.upsert(extra)
        add_ms = 1000 * (time.perf_counter() - start) / len(extra)
        added = dict(getattr(idx, "last_report", {}))
        h1 = idx.tree.height if method == "lattice" else None
        start = time.perf_counter()
        idx.delete([o.id for o in extra])
        delete_ms = 1000 * (time.perf_counter() - start) / len(extra)
        if method == "lattice":
            row |= {"height_built": h0, "height_added": h1, **_tree_calls(idx, added, len(extra), built_calls, llm)}
    return row | {"build_s": round(build_s, 1), "ms_per_added": round(add_ms, 2), "ms_per_deleted": round(delete_ms, 2)}


def _tree_calls(idx: Any, added: dict[str, Any], n: int, built_calls: int, llm: Any) -> dict[str, Any]:
    """A LATTICE cost row's summary calls: the build's, and per added / deleted document with the bound (the tree's
    height per changed document); the scripted model's own count beside the index's report."""
    deleted = idx.last_report
    return {
        "height_deleted": idx.tree.height,
        "summary_calls_build": built_calls,
        "summary_calls_added": added["summary_calls"],
        "summary_calls_deleted": deleted["summary_calls"],
        "summary_calls_per_added": round(added["summary_calls"] / n, 2),
        "summary_bound_per_added": round(added["summary_bound"] / n, 2),
        "summary_calls_per_deleted": round(deleted["summary_calls"] / n, 2),
        "summary_bound_per_deleted": round(deleted["summary_bound"] / n, 2),
        "model_calls_counted": getattr(llm, "calls", 0) - built_calls,
    }


def _key(row: dict[str, Any]) -> tuple[Any, ...]:
    return row["part"], row["method"], row.get("documents") if row["part"] == "cost" else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", default=os.environ.get("RETRIEVEKIT_DATA_DIR"))
    parser.add_argument("--part", nargs="+", default=["quality", "cost"], choices=["quality", "cost"])
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--sizes", nargs="+", type=int, default=[10_000, 100_000])
    parser.add_argument("--records", type=Path)
    parser.add_argument("--work-dir", type=Path, default=Path("runs/cache"), help="SciFact's MiniLM vectors, kept")
    args = parser.parse_args(argv)
    rows = recorded_rows(args.records)
    done = {_key(r) for r in rows}
    jobs = [("quality", m, None) for m in args.methods if "quality" in args.part and m not in COST_ONLY]
    costed = [m for m in args.methods if m not in QUALITY_ONLY]
    jobs += [("cost", m, n) for n in args.sizes for m in costed if "cost" in args.part]
    for part, method, n in jobs:
        if (part, method, n) in done:
            continue
        with tempfile.TemporaryDirectory() as folder:
            if part == "cost":
                row = _cost(method, args.data_dir, n, Path(folder))
            elif METHODS[method][0] in ("lattice", "arm"):
                row = _method_quality(method, args.data_dir, Path(folder), args.work_dir)
            else:
                row = _quality(method, args.data_dir, Path(folder))
        rows.append(keep_row(row, args.records))
    for row in rows:
        print(json.dumps(row))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
