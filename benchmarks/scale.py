"""Builds and searches from 10k to 1M documents: build seconds, peak RSS, ms per query, the fitted exponent.

Issue #53, part 4. The corpus of size n is SciFact's 5,183 abstracts followed by generated documents of the same
length (each: the sentences of one seeded abstract, shuffled, plus two sentences of another, and a numbered title),
so a million documents read like SciFact. Vectors come from :class:`HashedWords`, a bag-of-words
feature-hashing embedder (384 dimensions, unit rows, numpy only): a real text embedding a CPU can afford for a
million documents (MiniLM here embeds about 13 abstracts a second; see docs/benchmarks.md), so the sizes are
compared on the same footing; its retrieval quality is not what is measured.

Methods (rows; each (method, n) runs in its own child process with one BLAS / OpenMP thread):

* ``bm25``: :class:`BM25Index` build, then its search (k = 10).
* ``bm25_stream``: :class:`BM25Index` on the tantivy engine, built from the corpus as a stream (generated one
  document at a time, never listed) straight into a folder; then a fresh process opens the folder and searches
  (``open_ms``, ``open_peak_rss_mb``: what opening the index costs), and ``disk_mb``. At 10M only this row and the
  streamed ones fit this machine.
* ``dense``: :class:`DenseIndex` in a Chroma folder (HNSW, in a temporary directory) over the hashed vectors, then
  its search (k = 10). Chroma loads the graph from the folder on the first query after opening: that query is
  recorded apart (``first_query_ms``) and not in the per-query time (the same for ``hybrid`` and ``arm``).
* ``hybrid``: the BM25 and dense builds of the same child (build seconds are their sum), then
  :class:`HybridRetriever`'s reciprocal-rank fusion search (k = 10).
* ``arm``: ARM's index (:class:`Arm` with no LLM: its BM25 and dense indexes over the corpus), then its search with
  no LLM stages (base objects, drafts and links; LLM time excluded).
* ``arm_stream``: ARM's index, its two parts each built from the corpus as a stream into a folder by a fresh process
  of its own: BM25 on tantivy straight into its folder (``bm25_*`` figures), and the dense part in a faiss store
  (``open_store("faiss", dtype="float16")``, HNSW with the store's defaults, its vectors in memory while open) fed
  1,024 objects at a time (``dense_*``; its graph built on ``--arm-dense-threads`` OpenMP threads, 1 by default).
  Build seconds and disk are the two parts' sums, the build's peak RSS the larger part's; with ``--keep-dir`` a part
  an earlier run finished is reused (a 10M row spans sessions). Then a fresh process opens both and searches with
  ``Arm.from_indexes`` (no LLM stages; each search reads the objects it needs from the BM25 index's store):
  ``open_ms``, ``first_query_ms`` apart, ``open_peak_rss_mb`` (own memory and file pages apart), ``answers_digest``.
* ``mindref_trie``: MindRef's title trie (:class:`TokenTrie` over every title's token ids), then allowed-next-token
  lookups along the first 8 tokens of seeded titles (what a title beam asks per step).
* ``mindref_trie_stream``: the same trie built from the corpus as a stream: each title's token ids are read once
  into the trie's packed arrays (``retrievekit.core.index.trie_build``), no title -> documents map is made, and the
  lookups are ``mindref_trie``'s (the same seeded titles, kept as the stream passes them).
* ``fm_index``: the corpus-wide :class:`ShardedTokenSuffixArray` (shards of 20M tokens) over every document's token
  ids, then allowed-next-token lookups for each 1-3 token window of each claim (what a passage beam asks). Token ids
  are words hashed into a 50,000-id vocabulary (crc32), so the index, not a tokenizer, is what is timed.
* ``fm_index_stream``: the same suffix array built from the corpus as a stream into a folder
  (``retrievekit.core.index.suffix_array_folder``: shards of :data:`STREAM_SHARD_TOKENS` tokens, each sorted,
  written and let go in turn), then a fresh process opens the folder (its text and suffix arrays read with
  ``pread``, the default) and makes ``fm_index``'s lookups (``open_ms``; ``open_peak_rss_mb``, with its own memory
  and the file pages mapped at the end apart), and ``disk_mb``; another fresh process does the same with
  ``open_suffix_array(folder, mapped=True)`` (the same figures prefixed ``mapped_``).
* ``lattice``: LATTICE's bottom-up build with LLM-free summaries (``summaries="extractive"``, M = 10), then its
  search (beam 2, 20 iterations) with a scripted judge (word overlap, :class:`OverlapJudge`) over the first
  ``--queries`` SciFact dev claims, and the slates it judged a query (``slates_per_query``). LLM time is excluded
  by construction: the judge is a few lines of Python.
* ``lattice_saved``: ``lattice``, then the tree saved (format version 4: its nodes, objects and vectors stay in
  their files) and a fresh process that opens it and runs the same searches (``open_ms``, ``open_ms_per_query``,
  ``open_peak_rss_mb`` with its own memory and the file pages apart; ``same_answers``: the opened tree's hits are
  the built tree's), ``save_seconds`` and ``disk_mb``.
* ``lattice_stream``: the same tree built from the corpus as a stream straight into a folder
  (``retrievekit.core.lattice.bottom_up_stream``: the corpus never listed, vectors and objects in scratch files,
  the nodes written as arrays; the folder ``lattice_saved`` writes, file for file), then ``lattice_saved``'s fresh
  process; ``answers_digest`` (a hash of every claim's hits) compares runs, ``build_peak_rss_mb`` is the build's.
  Then another fresh process opens the tree and makes its first change, in memory: :data:`CHANGED` generated
  documents deleted in one call, as many claims inserted in another (``change_delete_s``, ``change_insert_s``: CPU
  seconds; ``change_peak_rss_mb``, ``change_own_mb``).
  With ``--keep-dir DIR`` the tree is built in DIR and kept there with its build's figures; a later run given DIR
  (with another ``--out-dir``) opens that tree again instead of building it: how a change to the opened tree is
  measured at 10M without the 85-minute build.

Each finished (method, n) is a line of ``<out-dir>/records.jsonl``; a rerun skips what is recorded (the 1M rows
take long), then prints the table and each method's fitted exponent (least-squares slope of log build CPU seconds
on log n) and the ratio of its search time at the largest n to the smallest. Times are CPU seconds of the child
(``time.process_time``: what a busy shared machine inflates least), wall seconds beside the build's.

    python benchmarks/scale.py --data-dir "$RETRIEVEKIT_DATA_DIR" --sizes 10000 100000 1000000 --out-dir runs/scale
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import itertools
import json
import math
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384
_WORD = re.compile(r"[a-z0-9]+")
_SENT = re.compile(r"(?<=[.!?])\s+")
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


class HashedWords:
    """Bag-of-words feature hashing into ``dim`` signed buckets (crc32 of each word: the same in every process),
    unit rows."""

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.name = f"hashed-words-{dim}"
        self._vocab: dict[str, tuple[int, float]] = {}

    def _slot(self, word: str) -> tuple[int, float]:
        slot = self._vocab.get(word)
        if slot is None:  # a word's bucket and sign, from its crc32 (kept: the corpus repeats its words)
            h = zlib.crc32(word.encode("utf-8"))
            slot = self._vocab[word] = (h % self.dim, 1.0 if (h >> 16) & 1 else -1.0)
        return slot

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in _WORD.findall(text.lower()):
                j, sign = self._slot(word)
                out[i, j] += sign
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)  # in place: a million rows are 1.5 GB
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_documents([text])[0]


class OverlapJudge:
    """A scripted relevance judge: the share of the query's words in the candidate (no model)."""

    def score_relevance(self, query: str, candidates: Sequence[str], *, trace: Any = None) -> list[float]:
        q = set(_WORD.findall(query.lower()))
        return [len(q & set(_WORD.findall(c.lower()))) / max(len(q), 1) for c in candidates]


def scale_corpus(data_dir: str, n: int, seed: int = 0) -> list[Any]:
    """SciFact's abstracts, then seeded generated documents of the same length, ``n`` in all."""
    return list(scale_stream(data_dir, n, seed))


def scale_stream(data_dir: str, n: int, seed: int = 0) -> Iterator[Any]:
    """:func:`scale_corpus`'s documents, the same ones in the same order, made one at a time (10M do not fit)."""
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.types import Passage

    real = list(load_dataset("scifact", data_dir).corpus)[:n]
    sentences = [_SENT.split(" ".join(o.text.split())) for o in real]
    rng = np.random.default_rng(seed)
    yield from real
    for j in range(n - len(real)):
        a, b = rng.integers(len(real), size=2)
        body = [sentences[a][i] for i in rng.permutation(len(sentences[a]))] + sentences[b][:2]
        yield Passage(id=f"gen{j}", text=" ".join(body), title=f"{real[a].title} ({j})")


def _run_lattice(corpus: list[Any], queries: list[str], keep: bool = False) -> Any:
    from retrievekit.core.lattice import Lattice
    from retrievekit.core.lattice.bottom_up import build_bottom_up
    from retrievekit.core.lattice.config import TreeBuildConfig

    started, cpu = time.perf_counter(), time.process_time()
    tree = build_bottom_up(corpus, None, HashedWords(), TreeBuildConfig(summaries="extractive"))
    build, build_cpu = time.perf_counter() - started, time.process_time() - cpu
    lattice = Lattice(tree, OverlapJudge())
    cpu, slates = time.process_time(), 0
    for q in queries:
        lattice.search(q, k=10)
        state = lattice.last_state  # its judge calls: the search runs until it reaches a leaf
        slates += len(state.slates) if state is not None else 0
    search = time.process_time() - cpu
    row = {
        "build_seconds": round(build_cpu, 2),
        "build_wall_seconds": round(build, 2),
        "ms_per_query": round(1000 * search / max(len(queries), 1), 1),
        "slates_per_query": round(slates / max(len(queries), 1), 1),
        "tree_nodes": len(tree.nodes),
        "tree_height": tree.height,
    }
    return (row, tree) if keep else row


_OPEN_TREE_AND_SEARCH = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from scale import OverlapJudge
from retrievekit.core.lattice import Lattice, SemanticTree
folder, queries = sys.argv[1], json.loads(sys.argv[2])
started = time.perf_counter()
tree = SemanticTree.load(folder)
opened = time.perf_counter() - started
lattice, cpu = Lattice(tree, OverlapJudge()), time.process_time()
answers = [[h.id for h in lattice.search(q, k=10)] for q in queries]
status = open("/proc/self/status").read()  # VmHWM: peak RSS; RssAnon: this process's own memory, not file pages
kb = {k: int(status.split(k + ":")[1].split()[0]) for k in ("VmHWM", "RssAnon", "RssFile")}
print(json.dumps({"open_ms": round(1000 * opened, 1),
                  "open_ms_per_query": round(1000 * (time.process_time() - cpu) / max(len(queries), 1), 1),
                  "open_peak_rss_mb": round(kb["VmHWM"] / 1024, 1), "open_own_mb": round(kb["RssAnon"] / 1024, 1),
                  "open_file_pages_mb": round(kb["RssFile"] / 1024, 1), "answers": answers}))
"""


def _run_lattice_saved(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    """``lattice``'s build and search, then the tree saved (format version 4: nodes, objects and vectors left in
    their files) and opened and searched by a fresh process: its peak RSS, own memory and file pages apart, and
    whether it answers as the tree in memory did."""
    from retrievekit.core.lattice import Lattice

    with tempfile.TemporaryDirectory(prefix="scale-tree-") as tmp:
        row, tree = _run_lattice(corpus, queries, keep=True)
        in_memory = [[h.id for h in Lattice(tree, OverlapJudge()).search(q, k=10)] for q in queries]
        cpu = time.process_time()
        folder = tree.save(Path(tmp) / "tree")
        row["save_seconds"] = round(time.process_time() - cpu, 2)
        row["build_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        del tree
        row["disk_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)
        answers = _open_tree_and_search(folder, queries, into=row)
        row["same_answers"] = answers == in_memory
    return row


def _fresh_process(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` (``python -c``) with ``args`` in a fresh process; return the JSON object its last line prints."""
    out = subprocess.run([sys.executable, "-c", script, *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.splitlines()[-1])


def _digest(answers: list[list[str]]) -> str:
    """A short hash of every claim's hits, in order (``answers_digest``: runs compared across records)."""
    return hashlib.sha256(json.dumps(answers).encode("utf-8")).hexdigest()[:16]


def _open_tree_and_search(folder: Path, queries: list[str], *, into: dict[str, Any]) -> list[list[str]]:
    """A fresh process opens the tree in ``folder`` and runs ``queries``: its figures go ``into`` the row, with
    ``answers_digest`` (a short hash of every claim's hits, in order: runs compared across records); returns the
    hits."""
    here = str(Path(__file__).resolve().parent)
    opened = _fresh_process(_OPEN_TREE_AND_SEARCH, str(folder), json.dumps(queries), here)
    answers = opened.pop("answers")
    into.update(opened, answers_digest=_digest(answers))
    return answers


_CHANGE_OPENED_TREE = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from scale import HashedWords
from retrievekit.core.lattice import SemanticTree, delete_documents, insert_documents
from retrievekit.core.types import Passage
folder, plan = sys.argv[1], json.loads(sys.argv[2])
tree, cpu = SemanticTree.load(folder), time.process_time()
delete_documents(tree, plan["delete"], None, HashedWords())
deleted, cpu = time.process_time() - cpu, time.process_time()
insert_documents(tree, [Passage(id=f"added{k}", text=t) for k, t in enumerate(plan["insert"])], None, HashedWords())
inserted = time.process_time() - cpu
status = open("/proc/self/status").read()
kb = {k: int(status.split(k + ":")[1].split()[0]) for k in ("VmHWM", "RssAnon")}
print(json.dumps({"change_delete_s": round(deleted, 2), "change_insert_s": round(inserted, 2),
                  "change_peak_rss_mb": round(kb["VmHWM"] / 1024, 1), "change_own_mb": round(kb["RssAnon"] / 1024, 1)}))
"""
SCIFACT_DOCS = 5_183
"""SciFact's abstracts: the corpus's first documents; the generated ones after them are ``gen0``, ``gen1``, ..."""

CHANGED = 100
"""The opened tree's first change (``lattice_stream``): this many generated documents deleted in one call, then as
many claims inserted as documents in another."""


def _change_opened_tree(folder: Path, claims: list[str], *, into: dict[str, Any]) -> None:
    """A fresh process opens the tree in ``folder`` and makes its first change in memory (:data:`CHANGED` deletes,
    spread over the generated documents, then as many inserts): CPU seconds of each call, peak RSS and own memory
    go ``into`` the row (the folder is left as it was)."""
    generated = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["leaves"] - SCIFACT_DOCS
    plan = {
        "delete": [f"gen{generated * k // CHANGED}" for k in range(CHANGED)] if generated >= CHANGED else [],
        "insert": [claims[k % len(claims)] for k in range(CHANGED)],
    }
    here = str(Path(__file__).resolve().parent)
    into.update(_fresh_process(_CHANGE_OPENED_TREE, str(folder), json.dumps(plan), here))


KEEP_DIR: Path | None = None
"""``--keep-dir``: the folder ``lattice_stream`` builds its tree in and leaves, with the build's figures beside it
(``build.json``); a later run given the same folder opens that tree again instead of building it (a 10M build takes
about 85 minutes), its row marked ``build_reused``. One (method, n) per folder."""


@contextlib.contextmanager
def _work_dir(prefix: str) -> Iterator[Path]:
    """:data:`KEEP_DIR` when given, else a temporary directory removed afterwards."""
    if KEEP_DIR is not None:
        KEEP_DIR.mkdir(parents=True, exist_ok=True)
        yield KEEP_DIR
        return
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        yield Path(tmp)


def _run_lattice_stream(corpus: Iterator[Any], queries: list[str]) -> dict[str, Any]:
    """The tree built from the stream into a folder (the corpus never a list), then opened and searched by a fresh
    process (``lattice_saved``'s)."""
    from retrievekit.core.lattice.bottom_up_stream import build_bottom_up_into
    from retrievekit.core.lattice.config import TreeBuildConfig

    with _work_dir("scale-tree-") as work:
        folder, built = work / "tree", work / "build.json"
        if built.exists():  # kept by an earlier run (--keep-dir): its build's figures, the tree opened again
            row = {**json.loads(built.read_text(encoding="utf-8")), "build_reused": True}
        else:
            cfg = TreeBuildConfig(summaries="extractive")
            folder, row = _build(lambda: build_bottom_up_into(folder, corpus, None, HashedWords(), cfg))
            row["build_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
            row["peak_rss_mb"] = row["build_peak_rss_mb"]  # the searches run in another process
            row["disk_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
            row.update(tree_nodes=manifest["nodes"], tree_height=manifest["height"])
            if KEEP_DIR is not None:
                built.write_text(json.dumps(row), encoding="utf-8")
        _open_tree_and_search(folder, queries, into=row)
        row["ms_per_query"] = row["open_ms_per_query"]  # the table's column: the opened tree's search
        _change_opened_tree(folder, queries, into=row)
    return row


def _first_then_timed(search: Any, queries: Sequence[Any]) -> dict[str, float]:
    """A Chroma index loads its HNSW graph on its first query after opening: that query's CPU milliseconds
    (``first_query_ms``), then every query timed as :func:`_timed_search` does."""
    cpu = time.process_time()
    search(queries[0])
    first = round(1000 * (time.process_time() - cpu), 1)
    return {"first_query_ms": first, "ms_per_query": _timed_search(search, queries)}


def _timed_search(search: Any, queries: Sequence[Any]) -> float:
    """CPU milliseconds per query of ``search`` over ``queries``."""
    cpu = time.process_time()
    for q in queries:
        search(q)
    return round(1000 * (time.process_time() - cpu) / max(len(queries), 1), 2)


def _build(make: Any) -> tuple[Any, dict[str, float]]:
    started, cpu = time.perf_counter(), time.process_time()
    built = make()
    return built, {
        "build_seconds": round(time.process_time() - cpu, 2),
        "build_wall_seconds": round(time.perf_counter() - started, 2),
    }


def _run_bm25(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    from retrievekit.core.index.bm25 import BM25Config, BM25Index

    idx, row = _build(lambda: BM25Index.build(corpus, BM25Config(engine="bm25s")))
    return {**row, "ms_per_query": _timed_search(lambda q: idx.search(q, k=10), queries)}


_OPEN_AND_SEARCH = """
import json, sys, time
from retrievekit.core.index.bm25 import BM25Index
folder, queries = sys.argv[1], json.loads(sys.argv[2])
started = time.perf_counter()
idx = BM25Index.load(folder)
opened = time.perf_counter() - started
cpu = time.process_time()
for q in queries:
    idx.search(q, k=10)
status = open("/proc/self/status").read()  # VmHWM: this process's peak (ru_maxrss would keep the forking parent's)
kb = {k: int(status.split(k + ":")[1].split()[0]) for k in ("VmHWM", "RssAnon", "RssFile")}  # RssFile: mapped pages
print(json.dumps({"open_ms": round(1000 * opened, 1),
                  "ms_per_query": round(1000 * (time.process_time() - cpu) / max(len(queries), 1), 2),
                  "open_peak_rss_mb": round(kb["VmHWM"] / 1024, 1), "open_own_mb": round(kb["RssAnon"] / 1024, 1),
                  "open_file_pages_mb": round(kb["RssFile"] / 1024, 1)}))
"""


def _run_bm25_stream(corpus: Iterator[Any], queries: list[str]) -> dict[str, Any]:
    """The tantivy engine built from the stream straight into a folder (the corpus never listed), then opened and
    searched by a fresh process (its peak RSS apart: what opening the index costs)."""
    from retrievekit.core.index.bm25 import BM25Config, BM25Index

    with tempfile.TemporaryDirectory(prefix="scale-bm25-") as tmp:
        folder = Path(tmp) / "bm25"
        _, row = _build(lambda: BM25Index.build(corpus, BM25Config(engine="tantivy"), folder=folder))
        row["build_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        row["disk_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)
        row.update(_fresh_process(_OPEN_AND_SEARCH, str(folder), json.dumps(queries)))
    return row


def _dense(corpus: list[Any], folder: str, emb: Any = None) -> Any:
    """The dense index of ``corpus`` in a Chroma folder under ``folder`` (a million objects in memory would not fit)."""
    from retrievekit.core.index.dense import DenseIndex

    return DenseIndex.build(corpus, Path(folder) / "dense", embedder=emb or HashedWords(), batch_size=1024)


def _run_dense(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        idx, row = _build(lambda: _dense(corpus, folder))
        with idx:
            return {**row, **_first_then_timed(lambda q: idx.search(q, k=10), queries)}


def _run_hybrid(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    from retrievekit.core.index.bm25 import BM25Config, BM25Index
    from retrievekit.core.index.hybrid import HybridRetriever

    bm25, a = _build(lambda: BM25Index.build(corpus, BM25Config(engine="bm25s")))
    with tempfile.TemporaryDirectory() as folder:
        dense, b = _build(lambda: _dense(corpus, folder))
        row = {k: round(a[k] + b[k], 2) for k in a}
        with HybridRetriever([bm25, dense], fusion="rrf") as hybrid:
            return {**row, **_first_then_timed(lambda q: hybrid.search(q, k=10), queries)}


def _run_arm(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    from retrievekit.core.arm import Arm
    from retrievekit.core.index.bm25 import BM25Config, BM25Index

    emb = HashedWords()
    with tempfile.TemporaryDirectory() as folder:
        cfg = BM25Config(engine="bm25s")  # the engine the rows were recorded on
        arm, row = _build(
            lambda: Arm(
                corpus, None, dense=_dense(corpus, folder, emb), embedder=emb, bm25=BM25Index.build(corpus, cfg)
            )
        )
        with arm.dense:
            return {**row, **_first_then_timed(lambda q: arm.search(q, k=10), queries)}


_OPEN_ARM_AND_SEARCH = """
import json, sys, time
sys.path.insert(0, sys.argv[3])
from scale import opened_arm
folder, queries = sys.argv[1], json.loads(sys.argv[2])
started = time.perf_counter()
arm = opened_arm(folder)
opened = time.perf_counter() - started
cpu = time.process_time()
arm.search(queries[0], k=10)  # the first search (the stores' first reads)
first, cpu = time.process_time() - cpu, time.process_time()
answers = [[h.id for h in arm.search(q, k=10)] for q in queries]
spent = time.process_time() - cpu
status = open("/proc/self/status").read()
kb = {k: int(status.split(k + ":")[1].split()[0]) for k in ("VmHWM", "RssAnon", "RssFile")}
print(json.dumps({"open_ms": round(1000 * opened, 1), "first_query_ms": round(1000 * first, 1),
                  "ms_per_query": round(1000 * spent / max(len(queries), 1), 2),
                  "open_peak_rss_mb": round(kb["VmHWM"] / 1024, 1), "open_own_mb": round(kb["RssAnon"] / 1024, 1),
                  "open_file_pages_mb": round(kb["RssFile"] / 1024, 1), "answers": answers}))
"""
_BUILD_ARM_PART = """
import json, sys
sys.path.insert(0, sys.argv[5])
from scale import build_arm_part
print(json.dumps(build_arm_part(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[6]))))
"""
ARM_BATCH = 1024
"""Objects embedded and added to the dense store at once (``arm_stream``)."""
ARM_DENSE_THREADS = 1
"""``--arm-dense-threads``: OpenMP threads of the dense part's graph build (``arm_stream``; the other builds use one)."""


def build_arm_part(part: str, folder: str, data_dir: str, n: int, threads: int = 1) -> dict[str, Any]:
    """One of ARM's two indexes built from the corpus as a stream into ``folder/part`` (``bm25``: tantivy; ``dense``:
    a ``float16`` faiss store fed :data:`ARM_BATCH` objects at a time, its graph built on ``threads`` OpenMP
    threads), in this process: its CPU and wall seconds, peak RSS and bytes on disk."""
    from retrievekit.core.index.bm25 import BM25Config, BM25Index
    from retrievekit.core.index.store_kinds import open_store
    from retrievekit.core.index.store_retriever import StoreRetriever

    corpus, where = scale_stream(data_dir, n), Path(folder) / part
    if part == "bm25":
        _, row = _build(lambda: BM25Index.build(corpus, BM25Config(engine="tantivy"), folder=where))
    else:
        import faiss

        faiss.omp_set_num_threads(threads)
        dense = StoreRetriever(open_store("faiss", path=where, create=True, dtype="float16"), embedder=HashedWords())

        def fill() -> None:
            while batch := list(itertools.islice(corpus, ARM_BATCH)):
                dense.add(batch, batch_size=ARM_BATCH)
            dense.close()  # saves the store: its graph file and its rows' commit are part of the build

        _, row = _build(fill)
        row["threads"] = threads  # kept with the part's figures: a part reused later says how it was built
    row["build_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    row["disk_mb"] = round(sum(f.stat().st_size for f in where.rglob("*") if f.is_file()) / 2**20, 1)
    return row


def opened_arm(folder: str | Path) -> Any:
    """ARM over the indexes :func:`build_arm_part` wrote, opened from ``folder`` (``Arm.from_indexes``: objects read
    per search from the BM25 index's store; no LLM stages)."""
    from retrievekit.core.arm import Arm
    from retrievekit.core.index.bm25 import BM25Index
    from retrievekit.core.index.store_kinds import open_store
    from retrievekit.core.index.store_retriever import StoreRetriever

    dense = StoreRetriever(open_store("faiss", path=Path(folder) / "dense"), embedder=HashedWords())
    return Arm.from_indexes(BM25Index.load(Path(folder) / "bm25"), dense, None)


def _run_arm_stream(data_dir: str, n: int, queries: list[str]) -> dict[str, Any]:
    """ARM's two indexes, each built from the stream in a fresh process of its own (:func:`build_arm_part`; with
    ``--keep-dir`` a part built by an earlier run is reused), then opened and searched by another
    (:func:`opened_arm`)."""
    here = str(Path(__file__).resolve().parent)
    row: dict[str, Any] = {}
    with _work_dir("scale-arm-") as work:
        for part in ("bm25", "dense"):
            kept = work / f"{part}.json"
            if kept.exists():
                built = {**json.loads(kept.read_text(encoding="utf-8")), "reused": True}
            else:
                shutil.rmtree(work / part, ignore_errors=True)  # a part cut short by an earlier run
                args = (part, str(work), data_dir, str(n), here, str(ARM_DENSE_THREADS))
                built = _fresh_process(_BUILD_ARM_PART, *args)
                if KEEP_DIR is not None:
                    kept.write_text(json.dumps(built), encoding="utf-8")
            row.update({f"{part}_{k}": v for k, v in built.items()})
        for key in ("build_seconds", "build_wall_seconds", "disk_mb"):
            row[key] = round(row[f"bm25_{key}"] + row[f"dense_{key}"], 2)
        row["build_peak_rss_mb"] = row["peak_rss_mb"] = max(
            row["bm25_build_peak_rss_mb"], row["dense_build_peak_rss_mb"]
        )
        opened = _fresh_process(_OPEN_ARM_AND_SEARCH, str(work), json.dumps(queries), here)
        answers = opened.pop("answers")
        row.update(opened, answers_digest=_digest(answers))
    return row


def token_ids(text: str, vocab: int = 50_000) -> list[int]:
    """Words hashed into ``vocab`` token ids (crc32, the same in every process)."""
    return [zlib.crc32(w.encode("utf-8")) % vocab for w in _WORD.findall(text.lower())]


def _run_mindref_trie(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    from retrievekit.core.index.token_trie import TokenTrie

    def make() -> Any:
        by_ids: dict[tuple[int, ...], list[int]] = {}
        for i, o in enumerate(corpus):  # MindRef's title -> documents map, then the trie over its keys
            by_ids.setdefault(tuple(token_ids(o.title)) or (i,), []).append(i)
        trie = TokenTrie(by_ids, eos_token_id=None)
        trie.allowed([])  # the trie builds its arrays on first use: part of the build
        return trie

    trie, row = _build(make)
    rng = np.random.default_rng(1)
    titles = [token_ids(corpus[int(i)].title)[:8] for i in rng.integers(len(corpus), size=max(len(queries), 1) * 10)]
    steps = [t[:j] for t in titles for j in range(len(t) + 1)]
    ms = _timed_search(lambda prefixes: [trie.allowed(p) for p in prefixes], [steps])
    return {**row, "ms_per_query": round(ms / len(titles), 3), "lookups_per_query": round(len(steps) / len(titles), 1)}


def _run_mindref_trie_stream(corpus: Iterator[Any], queries: list[str], n: int) -> dict[str, Any]:
    from retrievekit.core.index.token_trie import TokenTrie

    draws = np.random.default_rng(1).integers(n, size=max(len(queries), 1) * 10)  # mindref_trie's titles
    wanted, kept = set(draws.tolist()), {}

    def titles() -> Iterator[tuple[int, ...]]:
        for i, o in enumerate(corpus):
            ids = token_ids(o.title)
            if i in wanted:
                kept[i] = ids
            yield tuple(ids) or (i,)

    trie, row = _build(lambda: TokenTrie(titles(), eos_token_id=None))
    picked = [kept[int(i)][:8] for i in draws]
    steps = [t[:j] for t in picked for j in range(len(t) + 1)]
    ms = _timed_search(lambda prefixes: [trie.allowed(p) for p in prefixes], [steps])
    return {**row, "ms_per_query": round(ms / len(picked), 3), "lookups_per_query": round(len(steps) / len(picked), 1)}


def _windows(ids: list[int]) -> list[list[int]]:
    """Every 1-3 token window of a claim's token ids (what a passage beam asks the FM-index)."""
    return [ids[j : j + w] for w in (1, 2, 3) for j in range(len(ids) - w + 1)]


def _run_fm_index(corpus: list[Any], queries: list[str]) -> dict[str, Any]:
    from retrievekit.core.index.suffix_array import ShardedTokenSuffixArray

    sa, row = _build(lambda: ShardedTokenSuffixArray([np.asarray(token_ids(o.text)) for o in corpus]))
    windows = [_windows(ids) for ids in map(token_ids, queries)]
    ms = _timed_search(lambda ws: [sa.allowed(p) for p in ws], windows)
    return {**row, "ms_per_query": ms, "shards": sa.num_shards}


_OPEN_AND_LOOK_UP = """
import json, sys, time
from retrievekit.core.index.suffix_array_folder import open_suffix_array
folder, windows, mapped = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3] == "mapped"
started = time.perf_counter()
sa = open_suffix_array(folder, mapped=mapped)
opened = time.perf_counter() - started
cpu = time.process_time()
for ws in windows:
    for w in ws:
        sa.allowed(w)
status = open("/proc/self/status").read()  # VmHWM: peak RSS; RssAnon: this process's own memory, not file pages
kb = {k: int(status.split(k + ":")[1].split()[0]) for k in ("VmHWM", "RssAnon", "RssFile")}
print(json.dumps({"open_ms": round(1000 * opened, 1),
                  "ms_per_query": round(1000 * (time.process_time() - cpu) / max(len(windows), 1), 2),
                  "open_peak_rss_mb": round(kb["VmHWM"] / 1024, 1), "open_own_mb": round(kb["RssAnon"] / 1024, 1),
                  "open_file_pages_mb": round(kb["RssFile"] / 1024, 1)}))
"""
STREAM_SHARD_TOKENS = 100_000_000
"""``fm_index_stream``'s shard size: 26 shards at 10M documents (a lookup asks each one), one held at a time."""


def _run_fm_index_stream(corpus: Iterator[Any], queries: list[str]) -> dict[str, Any]:
    """The suffix array built from the stream into a folder shard by shard, then opened and searched by a fresh
    process (its peak RSS, own memory and file pages apart)."""
    from retrievekit.core.index.suffix_array_folder import write_suffix_array

    with tempfile.TemporaryDirectory(prefix="scale-fm-") as tmp:
        docs = (token_ids(o.text) for o in corpus)
        folder, row = _build(lambda: write_suffix_array(Path(tmp) / "sa", docs, shard_tokens=STREAM_SHARD_TOKENS))
        row["build_peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        row["disk_mb"] = round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)
        row["shards"] = len(list(folder.glob("shard-*")))
        windows = [_windows(ids) for ids in map(token_ids, queries)]
        for how in ("pread", "mapped"):  # the default, then open_suffix_array(folder, mapped=True)
            opened = _fresh_process(_OPEN_AND_LOOK_UP, str(folder), json.dumps(windows), how)
            row.update(opened if how == "pread" else {f"mapped_{k}": v for k, v in opened.items()})
    return row


_RUNS = {
    "bm25": _run_bm25,
    "bm25_stream": _run_bm25_stream,
    "dense": _run_dense,
    "hybrid": _run_hybrid,
    "arm": _run_arm,
    "arm_stream": _run_arm_stream,
    "mindref_trie": _run_mindref_trie,
    "mindref_trie_stream": _run_mindref_trie_stream,
    "fm_index": _run_fm_index,
    "fm_index_stream": _run_fm_index_stream,
    "lattice": _run_lattice,
    "lattice_saved": _run_lattice_saved,
    "lattice_stream": _run_lattice_stream,
}


_STREAMED = {"bm25_stream", "mindref_trie_stream", "fm_index_stream", "lattice_stream"}
"""The methods whose build reads the corpus as a stream (the others take it as a list)."""
_SIZED = {"mindref_trie_stream"}
"""The methods told the corpus's size (they pick documents from a stream as it passes)."""
_SOURCED = {"arm_stream"}
"""The methods given the data folder and the size instead of a corpus (they stream it in processes of their own)."""


def child(method: str, data_dir: str, n: int, queries: int) -> dict[str, Any]:
    """One (method, n): build and search in this process; peak RSS measured after both."""
    from retrievekit.core.eval.datasets import load_dataset

    claims = [q.text for q in load_dataset("scifact", data_dir, split="dev", limit=queries).queries]
    row = {"method": method, "n": n, "queries": len(claims)}
    if method in _SOURCED:
        row.update(_RUNS[method](data_dir, n, claims))
        return row
    corpus = scale_stream(data_dir, n) if method in _STREAMED else scale_corpus(data_dir, n)
    row.update(_RUNS[method](corpus, claims, n) if method in _SIZED else _RUNS[method](corpus, claims))
    row.setdefault("peak_rss_mb", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1))
    return row


def fitted_exponent(rows: list[dict[str, Any]]) -> float | None:
    """Least-squares slope of log build seconds on log n (None with fewer than two sizes)."""
    if len(rows) < 2:
        return None
    xs = [math.log(r["n"]) for r in rows]
    return float(np.polyfit(xs, [math.log(max(r["build_seconds"], 0.01)) for r in rows], 1)[0])


def _recorded(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> int:
    """Run what is not recorded yet, then print the table (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000, 1_000_000])
    p.add_argument("--methods", nargs="*", default=list(_RUNS), choices=list(_RUNS))
    p.add_argument("--queries", type=int, default=20, help="SciFact dev claims searched per (method, n)")
    p.add_argument("--out-dir", default="runs/scale")
    p.add_argument(
        "--keep-dir", default=None, help="lattice_stream, arm_stream: build in this folder and keep it (see KEEP_DIR)"
    )
    p.add_argument("--arm-dense-threads", type=int, default=1, help="see ARM_DENSE_THREADS")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child is not None:
        global KEEP_DIR, ARM_DENSE_THREADS
        KEEP_DIR = None if args.keep_dir is None else Path(args.keep_dir)
        ARM_DENSE_THREADS = args.arm_dense_threads
        method, n = args.child.split(":")
        print(json.dumps(child(method, args.data_dir, int(n), args.queries)))
        return 0
    records = Path(args.out_dir) / "records.jsonl"
    records.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **dict.fromkeys(_THREADS, "1")}
    for method in args.methods:
        for n in sorted(args.sizes):
            if any(r["method"] == method and r["n"] == n for r in _recorded(records)):
                continue
            cmd = [sys.executable, __file__, "--child", f"{method}:{n}", "--data-dir", args.data_dir]
            cmd += [] if args.keep_dir is None else ["--keep-dir", args.keep_dir]
            cmd += ["--arm-dense-threads", str(args.arm_dense_threads)]
            out = subprocess.run([*cmd, "--queries", str(args.queries)], env=env, capture_output=True, text=True)
            if out.returncode != 0:
                print(f"{method} at {n:,} failed:\n{out.stderr[-2000:]}", file=sys.stderr)
                return 1
            with open(records, "a", encoding="utf-8") as f:
                f.write(out.stdout.strip().splitlines()[-1] + "\n")
    print("| method | n | build CPU s | build wall s | peak RSS MB | CPU ms per query |")
    print("|---|---|---|---|---|---|")
    rows = _recorded(records)
    for r in sorted(rows, key=lambda r: (r["method"], r["n"])):
        cells = f"{r['build_seconds']:,.1f} | {r['build_wall_seconds']:,.1f} | {r['peak_rss_mb']:,.0f} | {r['ms_per_query']}"
        print(f"| {r['method']} | {r['n']:,} | {cells} |")
    for method in sorted({r["method"] for r in rows}):
        mine = sorted((r for r in rows if r["method"] == method), key=lambda r: r["n"])
        ratio = mine[-1]["ms_per_query"] / mine[0]["ms_per_query"] if len(mine) > 1 else None
        print(f"{method}: build exponent {fitted_exponent(mine)}, search at the largest n / smallest n: {ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
