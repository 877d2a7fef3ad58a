"""LATTICE's bottom-up build from a stream of documents straight into a tree folder, the corpus never held.

:func:`build_bottom_up_into` writes the tree :func:`~retrievekit.core.lattice.bottom_up.build_bottom_up` builds from
the same corpus (the same nodes, ids, summaries and vectors, in the folder :meth:`SemanticTree.save
<retrievekit.core.lattice.tree.SemanticTree.save>` writes: format version 4), from an iterable it reads once. Per
document it holds only its id, its short text (``child_chars``) and where its JSON line starts; vectors and objects
wait in scratch files beside the tree, so ten million documents build in a few GB:

1. **Read the stream.** Each object is checked, its JSON line appended to a scratch file, its leaf vector (embedded
   ``batch_size`` at a time) appended to a :class:`~retrievekit.core.index.row_file.RowFile`, its short text packed,
   and the corpus record tallied.
2. **Order the ids.** Sorted once, in byte order (Python's ``str`` order): a duplicate id is an error, and an
   internal node's id is a hash of its leaves' ids in that order (:func:`~retrievekit.core.lattice.tree.internal_id`).
3. **Grow the levels.** As the in-memory build: the level's vectors grouped by
   :func:`~retrievekit.core.lattice.clustering.balanced_groups` (read from the row file as a split asks), each
   group's summary written (:func:`~retrievekit.core.lattice.bottom_up.level_texts`: the LLM, journaled in
   ``build_dir``, or the children nearest the centroid), :data:`CHUNK_GROUPS` groups at a time, and embedded.
4. **Write the folder.** The nodes as arrays in id order, the vectors row by row in that order, the objects sorted by
   id, the manifest last; the scratch files removed; the folder replaced in one rename
   (:func:`~retrievekit.core.index.store.atomic_folder`).

Examples:
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from retrievekit.core.lattice.config import TreeBuildConfig
    >>> from retrievekit.core.lattice.tree import SemanticTree
    >>> from retrievekit.core.types import Passage
    >>> class Emb:
    ...     def embed_documents(self, texts): return np.array([[float(len(t)), 1.0] for t in texts])
    ...     def embed_query(self, text): return np.array([float(len(text)), 1.0])
    >>> docs = (Passage(id=f"d{i}", text="x" * (i % 3 + 1)) for i in range(7))
    >>> cfg = TreeBuildConfig(max_children=3, summaries="extractive")
    >>> folder = build_bottom_up_into(pathlib.Path(tempfile.mkdtemp()) / "tree", docs, None, Emb(), cfg)
    >>> tree = SemanticTree.load(folder)
    >>> tree.num_leaves, tree.max_branching <= 3
    (7, True)
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from retrievekit.core.checks import check_object, empty_corpus_error
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.index.corpus_record import RECORD_KEY, CorpusTally
from retrievekit.core.index.embeddings import Embedder, MiniLMEmbedder
from retrievekit.core.index.mapped import save_arrays
from retrievekit.core.index.row_file import RowFile
from retrievekit.core.index.store import atomic_folder, object_json, write_manifest
from retrievekit.core.lattice.bottom_up import label_groups, level_texts, metadata_label
from retrievekit.core.lattice.build import LEAF_BATCH, BuildRun, embed_leaves, embed_texts, open_journal
from retrievekit.core.lattice.clustering import balanced_groups
from retrievekit.core.lattice.config import TreeBuildConfig
from retrievekit.core.lattice.node_arrays import VECTOR_ROWS, write_node_rows
from retrievekit.core.lattice.node_vectors import VECTORS
from retrievekit.core.lattice.stored_objects import copy_sorted_objects
from retrievekit.core.lattice.summarize import SUMMARY_PROMPT, object_short_text, short_text
from retrievekit.core.lattice.tree import FORMAT, FORMAT_VERSION, ROOT, check_object_ids
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = ["CHUNK_GROUPS", "build_bottom_up_into"]

CHUNK_GROUPS = 65_536
"""Groups summarised and embedded at a time: their children's texts and vectors are held, not a whole level's."""
_SCRATCH = "scratch"
_BLOCK = 65_536  # vector rows copied at a time into the folder's vectors.npy


class _Packed:
    """Texts appended as UTF-8 to one buffer, read back by number: ``packed[i]``."""

    def __init__(self) -> None:
        self._buf, self._starts = bytearray(), array("q", [0])

    def append(self, text: str) -> None:
        self._buf += text.encode("utf-8", "surrogatepass")
        self._starts.append(len(self._buf))

    def __getitem__(self, i: int) -> str:
        return self._buf[self._starts[i] : self._starts[i + 1]].decode("utf-8", "surrogatepass")


@dataclass
class _Leaves:
    """What reading the stream keeps: each document's id (UTF-8, corpus order), short text, line start in the
    scratch objects file and group label (``first_layer="metadata"``), and the corpus record's tally."""

    raw: list[bytes] = field(default_factory=list)
    short: _Packed = field(default_factory=_Packed)
    lines: array = field(default_factory=lambda: array("q", [0]))
    labels: list[tuple[str, str]] | None = None
    tally: CorpusTally = field(default_factory=CorpusTally)


@dataclass
class _Nodes:
    """The internal nodes made so far, numbered after the ``n`` leaves in the order they were made (each level's in
    its groups' order; the root last): ids, texts, and children (their numbers) one node after another."""

    n: int
    ids: list[bytes] = field(default_factory=list)
    texts: list[bytes] = field(default_factory=list)
    kid_counts: array = field(default_factory=lambda: array("q"))
    kids: array = field(default_factory=lambda: array("q"))

    def add(self, nid: bytes, text: bytes, children: Iterable[int]) -> None:
        before = len(self.kids)
        self.kids.extend(children)
        self.ids.append(nid)
        self.texts.append(text)
        self.kid_counts.append(len(self.kids) - before)


def _batches(corpus: Iterable[DataObject], size: int) -> Iterator[list[DataObject]]:
    it = iter(corpus)
    while batch := list(itertools.islice(it, size)):
        yield batch


def _read_stream(
    corpus: Iterable[DataObject], embedder: Embedder, run: BuildRun, scratch: Path, batch_size: int
) -> tuple[_Leaves, RowFile]:
    """Step 1: every object checked, written and embedded once (a batch kept in the build folder is read back:
    :func:`~retrievekit.core.lattice.build.embed_leaves`); its id and short text kept."""
    cfg = run.config
    leaves = _Leaves(labels=[] if cfg.first_layer == "metadata" else None)
    vectors = RowFile(scratch / "vectors.f32")
    any_text = False
    with open(scratch / "objects.jsonl", "wb") as out:
        for batch in _batches(corpus, batch_size):
            for o in batch:
                check_object(o)
                check_object_ids([o.id])
                line = (object_json(o) + "\n").encode("utf-8")
                out.write(line)
                leaves.lines.append(leaves.lines[-1] + len(line))
                leaves.raw.append(o.id.encode("utf-8", "surrogatepass"))
                leaves.short.append(object_short_text(o, cfg.child_chars))
                if leaves.labels is not None:
                    leaves.labels.append(metadata_label(o, cfg.group_key))
                any_text = any_text or bool(o.index_text().strip())
            vectors.append(embed_leaves(run, embedder, batch))
            leaves.tally = leaves.tally.changed(removed=(), added=batch)
    if not any_text:
        raise empty_corpus_error(len(leaves.raw))
    return leaves, vectors


def _id_order(raw: list[bytes]) -> tuple[list[int], np.ndarray]:
    """Step 2: the documents in id order, and each one's place in it; an :class:`InvalidInputError` for a
    duplicate id."""
    order = sorted(range(len(raw)), key=raw.__getitem__)
    for a, b in itertools.pairwise(order):
        if raw[a] == raw[b]:
            oid = raw[a].decode("utf-8", "surrogatepass")
            raise InvalidInputError(f"duplicate object id {oid!r} in the corpus (ids must be unique)")
    rank = np.empty(len(raw), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(raw))
    return order, rank


def _parent_leaves(leaves: tuple[np.ndarray, np.ndarray], groups: list[list[int]]) -> tuple[np.ndarray, np.ndarray]:
    """Each group's leaves (their places in id order, ascending) from its members' (``(starts, places)`` by member):
    the leaves of a level's new nodes, in CSR form."""
    starts, places = leaves
    members = np.fromiter(itertools.chain.from_iterable(groups), dtype=np.int64)
    sizes = np.diff(starts)[members]
    firsts = np.zeros(len(members) + 1, dtype=np.int64)
    np.cumsum(sizes, out=firsts[1:])
    src = np.repeat(starts[members] - firsts[:-1], sizes) + np.arange(int(firsts[-1]))
    owner = np.repeat(np.repeat(np.arange(len(groups)), [len(g) for g in groups]), sizes)
    picked = places[src]
    picked = picked[np.lexsort((picked, owner))]
    counts = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(groups)), out=counts[1:])
    return counts, picked


def _internal_ids(level: int, leaves: tuple[np.ndarray, np.ndarray], raw_sorted: list[bytes]) -> list[bytes]:
    """:func:`~retrievekit.core.lattice.tree.internal_id` of each new node, from its leaves' places in id order."""
    starts, places = leaves
    out = []
    for a, b in itertools.pairwise(starts.tolist()):
        digest = hashlib.sha1(b"\x1f".join([raw_sorted[p] for p in places[a:b].tolist()])).hexdigest()[:12]
        out.append(f"n{level}-{digest}".encode("ascii"))
    return out


@dataclass
class _Build:
    """What the levels share: the run, the models, the vectors (every node's row its number) and the ids in order."""

    run: BuildRun
    llm: ChatLLM | None
    embedder: Embedder
    vectors: RowFile
    raw_sorted: list[bytes]
    seen: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _summarise(b: _Build, level: int, first: int, short: _Packed, part: list[list[int]], into: _Packed) -> list[str]:
    """A chunk of a level's groups (members numbered from ``first``): their texts, embedded and appended to the
    vectors, and their short texts appended to ``into``."""
    kid_texts = [[short[i] for i in g] for g in part]
    texts = level_texts(b.run, b.llm, kid_texts, lambda i: b.vectors[first + np.asarray(part[i])], level, b.seen)
    for t in texts:
        into.append(short_text(t, b.run.config.child_chars))
    b.vectors.append(embed_texts(b.embedder, texts))
    return texts


def _grow(b: _Build, leaves: _Leaves, rank: np.ndarray) -> _Nodes:
    """Step 3: levels of parents until at most M nodes remain, then the root over them (its vector their mean)."""
    cfg, n = b.run.config, len(rank)
    nodes = _Nodes(n=n)
    first, stop, short = 0, n, leaves.short
    leaf_places = (np.arange(n + 1, dtype=np.int64), rank)
    level = 0
    while stop - first > cfg.max_children:
        level += 1
        if level == 1 and leaves.labels is not None:
            groups = label_groups(leaves.labels, cfg.max_children)
        else:
            groups = balanced_groups(b.vectors.view(first, stop), cfg.max_children, seed=cfg.seed + level)
        if len(groups) >= stop - first:  # cannot happen with M >= 2; guards an endless loop
            break
        leaf_places = _parent_leaves(leaf_places, groups)
        ids, next_short = _internal_ids(level, leaf_places, b.raw_sorted), _Packed()
        for at in range(0, len(groups), CHUNK_GROUPS):
            part = groups[at : at + CHUNK_GROUPS]
            texts = _summarise(b, level, first, short, part, next_short)
            for nid, text, g in zip(ids[at : at + CHUNK_GROUPS], texts, part, strict=True):
                nodes.add(nid, text.encode("utf-8", "surrogatepass"), (first + i for i in g))
        first, stop, short = stop, stop + len(groups), next_short
    nodes.add(ROOT.encode("ascii"), b"root", range(first, stop))
    b.vectors.append(np.mean(b.vectors[first:stop], axis=0, keepdims=True))
    return nodes


@dataclass(frozen=True)
class _Rows:
    """The tree in id order: each row's node number, leaf flag and children (CSR)."""

    number: np.ndarray
    leaves: np.ndarray
    children: tuple[np.ndarray, np.ndarray]


def _tree_rows(nodes: _Nodes, order: list[int], raw: list[bytes]) -> _Rows:
    """Step 4's arrays from the nodes by number (``order``: the leaves' numbers in id order; ``raw``: each node's id
    by number)."""
    n, total = nodes.n, nodes.n + len(nodes.ids)
    internal = sorted(range(len(nodes.ids)), key=nodes.ids.__getitem__)
    candidates = order + [n + i for i in internal]  # two sorted runs: merged by one sort
    number = np.asarray(sorted(candidates, key=raw.__getitem__), dtype=np.int64)
    row = np.empty(total, dtype=np.int64)
    row[number] = np.arange(total)
    counts = np.zeros(total, dtype=np.int64)
    counts[n:] = nodes.kid_counts
    starts = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    kids = np.frombuffer(nodes.kids, dtype=np.int64)
    row_counts = counts[number]
    row_starts = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(row_counts, out=row_starts[1:])
    children = row[kids[np.repeat(starts[number] - row_starts[:-1], row_counts) + np.arange(int(row_starts[-1]))]]
    return _Rows(number, number < n, (row_starts, children))


def _write_vectors(folder: Path, vectors: RowFile, number: np.ndarray) -> None:
    """``vectors.npy`` (row ``r``: the vector of the node at row ``r``) written block by block, and
    ``vector_rows.npy`` (every node has one)."""
    total, width = len(number), vectors.shape[1]
    with open(folder / f"{VECTORS}.npy", "wb") as f:
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)), "fortran_order": False}
        np.lib.format.write_array_header_1_0(f, {**header, "shape": (total, width)})
        for at in range(0, total, _BLOCK):
            f.write(vectors[number[at : at + _BLOCK]].tobytes())
        f.flush()
        os.fsync(f.fileno())
    save_arrays(folder, {VECTOR_ROWS: np.arange(total, dtype=np.int32)})


def _write_folder(folder: Path, b: _Build, leaves: _Leaves, nodes: _Nodes, order: list[int], rank: np.ndarray) -> None:
    """Step 4: nodes, vectors, objects and the manifest (its counts as :meth:`SemanticTree.stats` gives them)."""
    n = nodes.n
    by_number = [b.raw_sorted[r] for r in rank.tolist()] + nodes.ids  # each node's id by its number
    rows = _tree_rows(nodes, order, by_number)
    number = rows.number.tolist()
    raw = [by_number[c] for c in number]
    del by_number
    texts = [b"" if c < n else nodes.texts[c - n] for c in number]  # a leaf's text is its object's
    depths = write_node_rows(folder, raw, rows.leaves, rows.children, texts)
    del raw, texts
    _write_vectors(folder, b.vectors, rows.number)
    b.vectors.remove()  # closed and deleted before the objects are copied: one scratch file beside the tree at most
    copy_sorted_objects(folder, b.vectors.path.parent / "objects.jsonl", leaves.lines, order)
    shutil.rmtree(b.vectors.path.parent)
    total = len(number)
    fields = {
        "root": ROOT,
        "nodes": total,
        "leaves": n,
        "internal": total - n,
        "height": int(depths[rows.leaves].max()),
        "max_branching": int(np.diff(rows.children[0]).max()),
        "meta": b.run.meta("bottom_up"),
        RECORD_KEY: leaves.tally.record(),
    }
    write_manifest(folder, FORMAT, FORMAT_VERSION, fields)


def build_bottom_up_into(
    folder: str | os.PathLike[str],
    corpus: Iterable[DataObject],
    llm: Any = None,
    embedder: Any = None,
    config: TreeBuildConfig | None = None,
    *,
    build_dir: str | os.PathLike[str] | None = None,
    trace: Trace | None = None,
    batch_size: int = LEAF_BATCH,
) -> Path:
    """Build the bottom-up tree of ``corpus`` (an iterable, read once) into ``folder`` without holding the corpus;
    returns the folder, which :meth:`SemanticTree.load <retrievekit.core.lattice.tree.SemanticTree.load>` opens.

    The tree is :func:`~retrievekit.core.lattice.bottom_up.build_bottom_up`'s for the same corpus, config and models
    (see the module docstring). ``folder`` is replaced only when the build succeeds; its scratch files (the vectors
    and objects, in the order they came) live in the temporary folder beside it until then, so the disk needs about
    1.5 times the finished folder's size at the peak (the vectors twice while they are written in id order, the
    objects once in scratch); a full disk is a :class:`~retrievekit.core.errors.StorageWriteError` and ``folder``
    keeps what it held.

    Args:
        folder: where the tree goes (replaced in one rename).
        corpus: the leaves (unique ids; duplicate texts are fine); a generator is read once.
        llm: writes the summaries: what :func:`~retrievekit.core.lattice.method.create_lattice` takes (a model's
            name, a served LLM, a framework's model; None: the default model); unused with
            ``summaries="extractive"``.
        embedder: embeds leaves (``batch_size`` at a time) and summaries: what ``embedder=`` takes everywhere
            (:func:`~retrievekit.core.index.as_embedder.as_embedder`; None: all-MiniLM-L6-v2).
        config: :class:`~retrievekit.core.lattice.config.TreeBuildConfig`.
        build_dir: folder of the resumable journal: summaries and embedded leaf batches (None: no journal).
        trace: receives LLM calls and tokens of the build.
        batch_size: documents embedded at a time.

    Examples:
        >>> import pathlib, tempfile
        >>> build_bottom_up_into(pathlib.Path(tempfile.mkdtemp()) / "t", iter([]), embedder="openai:e@http://127.0.0.1:9/v1")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.EmptyCorpusError: the corpus is empty: nothing to index
    """
    cfg = config or TreeBuildConfig()
    embedder = as_embedder(embedder, where="build_bottom_up_into") or MiniLMEmbedder.default()
    llm = resolve_llm(llm) if cfg.summaries == "llm" else llm
    run = BuildRun(
        objects=[],
        config=cfg,
        trace=trace if trace is not None else Trace(),
        journal=open_journal(cfg, build_dir, llm, [SUMMARY_PROMPT], embedder),
    )
    with atomic_folder(folder) as tmp:
        scratch = tmp / _SCRATCH
        scratch.mkdir()
        leaves, vectors = _read_stream(corpus, embedder, run, scratch, max(1, int(batch_size)))
        order, rank = _id_order(leaves.raw)
        build = _Build(run, llm, embedder, vectors, [leaves.raw[i] for i in order])
        leaves.raw = []
        nodes = _grow(build, leaves, rank)
        _write_folder(tmp, build, leaves, nodes, order, rank)
    return Path(folder)
