"""LATTICE over a living corpus: :class:`LiveLattice`, a :class:`~retrievekit.core.index.live.LiveIndex` whose part
is a semantic tree, changed in place by :func:`~retrievekit.core.lattice.insert.insert_documents` and
:func:`~retrievekit.core.lattice.delete.delete_documents` and searched by :class:`~retrievekit.core.lattice.search.Lattice`.

* **Empty, then the first documents.** An empty index holds no tree; its first ``upsert`` builds one over the held
  documents (``builder``: bottom-up by default), as does an ``upsert`` that replaces every document of the tree. An
  index whose documents are all deleted holds no tree again (searching it answers ``[]``).
* **Later changes** go in place: the replaced and deleted documents are deleted from the tree, then the new and
  replacing ones inserted. Each change is made on a draft of the tree
  (:mod:`~retrievekit.core.lattice.tree_draft`: it clones only the nodes the change reads), swapped in when it
  succeeded: a failing
  change (the LLM unreachable, a reserved id, a full disk) raises and leaves the index as it was, and a search
  running meanwhile reads one tree, the old or the new. Changes are made one at a time (threads and awaited
  changes wait for each other).
* **LLM calls.** The touched summaries are refreshed the way the tree was built: at most the tree's height calls per
  changed document, none with ``summaries="extractive"`` (then no LLM is loaded for a change).
  :attr:`LiveLattice.last_report` and the change's trace (``lattice.update.summary_calls`` /
  ``lattice.update.summary_bound``) count them; a build is noted as a ``lattice_built`` event.
* **On disk** (``path=``) the tree is kept inside ``live/`` (``live/tree/``). A change is one line of the change log
  (:mod:`~retrievekit.core.index.live_log`): the held objects' change and what it did to the tree
  (:mod:`~retrievekit.core.lattice.tree_delta`), applied to the saved tree on reopening; the line is the commit, so a
  process killed during a change leaves the old state or the new one. A build, and a log folded past its size, write
  ``live/`` whole in one rename.

Examples:
    >>> from retrievekit.core.fakes import LengthEmbedder, WordScoreLLM
    >>> from retrievekit.core.types import Passage
    >>> idx = LiveIndex.create("lattice", embedder=LengthEmbedder(), llm=WordScoreLLM("tea"),
    ...                        options={"summaries": "extractive", "max_children": 2})
    >>> idx.upsert([Passage(id="a", text="tea"), Passage(id="b", text="coffee beans")])
    ['a', 'b']
    >>> _ = idx.upsert([Passage(id="c", text="green tea leaves")])
    >>> idx.last_report["inserted"], idx.last_report["summary_calls"], sorted(idx.tree.leaf_ids())
    (1, 0, ['a', 'b', 'c'])
    >>> _ = idx.delete(["a"]); [h.id for h in idx.search("tea", k=1)]
    ['c']
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.index.corpus_record import check_same_corpus
from retrievekit.core.index.live import FOLD, LiveIndex
from retrievekit.core.index.live_undo import undone_on_failure
from retrievekit.core.lattice.config import LatticeConfig, TreeBuildConfig, split_options
from retrievekit.core.lattice.delete import delete_documents
from retrievekit.core.lattice.drift import record_baseline
from retrievekit.core.lattice.insert import insert_documents
from retrievekit.core.lattice.search import Lattice, SearchState
from retrievekit.core.lattice.tree import SemanticTree, check_object_ids
from retrievekit.core.lattice.tree_delta import apply_tree_delta, tree_delta
from retrievekit.core.lattice.tree_draft import draft, settle
from retrievekit.core.options import check_option_keys
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["LiveLattice"]

BUILDERS = ("bottom_up", "top_down")
TREE = "tree"  # the tree's folder inside live/


class LiveLattice(LiveIndex):
    """LATTICE as a living index (``LiveIndex.create("lattice", ...)``): ``options`` are flat
    :class:`~retrievekit.core.lattice.config.TreeBuildConfig` / :class:`~retrievekit.core.lattice.config.LatticeConfig`
    fields (``max_children``, ``summaries``, ``beam_size``, ...) and ``builder`` (``"bottom_up"`` or
    ``"top_down"``); ``llm`` the model that writes summaries and scores the search's slates (anything
    :func:`~retrievekit.core.llm.resolve.resolve_llm` takes; default its default model, loaded when first needed);
    ``embedder`` routes documents and embeds summaries (default all-MiniLM-L6-v2). See the module docstring.

    Examples:
        >>> from retrievekit.core.fakes import LengthEmbedder
        >>> LiveIndex.create("lattice", embedder=LengthEmbedder(), options={"summaries": "extractive"}).tree is None
        True
        >>> LiveIndex.create("lattice", options={"tree_dir": "t"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown LATTICE option(s): tree_dir; known: max_children, ...
    """

    METHODS = ("lattice",)

    def _configure(self, options: dict[str, Any], llm: Any) -> None:
        settings = {k: v for k, v in options.items() if k != "builder"}
        build, search, other = split_options(settings)
        known = [f.name for cfg in (TreeBuildConfig, LatticeConfig) for f in fields(cfg) if f.init]
        check_option_keys(other, [*known, "builder"], label="LATTICE")
        self.builder = str(options.get("builder", "bottom_up"))
        if self.builder not in BUILDERS:
            raise InvalidInputError(f"option builder must be one of {BUILDERS}, not {options['builder']!r}")
        self.build_config = TreeBuildConfig.from_options(build)
        self.search_config = LatticeConfig.from_options(search)
        self._llm_arg = llm
        self._llm: Any = None
        self._tree: SemanticTree | None = None
        self._lattice: Lattice | None = None
        self._part_change: Any = FOLD
        self.last_report: dict[str, Any] = {}
        """What the last change did: ``built`` (a fresh tree), ``inserted``, ``deleted``, ``summary_calls``,
        ``summary_bound`` (the tree's height x changed documents; 0 for a build)."""

    # ------------------------------------------------------------------ read
    @property
    def tree(self) -> SemanticTree | None:
        """The current tree (None while the index is empty); read it, change it only through the index.

        Examples:
            >>> from retrievekit.core.fakes import LengthEmbedder
            >>> LiveIndex.create("lattice", embedder=LengthEmbedder()).tree is None
            True
        """
        return self._tree

    @property
    def last_state(self) -> SearchState | None:
        """The search state of the latest query made from the current thread or task (None before one)."""
        return self._lattice.last_state if self._lattice is not None else None

    def _searcher(self, trace: Trace) -> Lattice | None:
        """The search over the current tree (one tree for the whole query, whatever a writer does meanwhile)."""
        tree, lat = self._tree, self._lattice
        if tree is None:
            trace.note("empty_index", "the index holds no objects; returning no hits")
            return None
        if lat is None or lat.tree is not tree:
            lat = Lattice(tree, self._model(), self.search_config, embedder=self._embedding_model())
            self._lattice = lat
        return lat

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """LATTICE's beam search over the current tree; an empty index answers ``[]`` (an ``empty_index`` event)."""
        check_query(query)
        check_k(k)
        self._check_open()
        trace = trace if trace is not None else Trace()
        lat = self._searcher(trace)
        return lat.search(query, k, trace=trace) if lat is not None else []

    async def asearch(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """:meth:`search` awaited on the caller's loop (the slates' requests await the model's async API)."""
        check_query(query)
        check_k(k)
        self._check_open()
        trace = trace if trace is not None else Trace()
        lat = self._searcher(trace)
        return await lat.asearch(query, k, trace=trace) if lat is not None else []

    # ------------------------------------------------------------------ change
    def upsert(self, objects: Sequence[DataObject], *, trace: Trace | None = None) -> list[str]:
        """:meth:`LiveIndex.upsert`; all or nothing (a failing change leaves the index as it was).

        Examples:
            >>> from retrievekit.core.fakes import LengthEmbedder
            >>> from retrievekit.core.types import Passage
            >>> idx = LiveIndex.create("lattice", embedder=LengthEmbedder(), options={"summaries": "extractive"})
            >>> idx.upsert([Passage(id="root", text="x")])
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.InvalidInputError: ... 'root' ...
            >>> idx.ids()
            []
        """
        check_object_ids(o.id for o in objects if isinstance(o, DataObject))
        with self._writer, undone_on_failure(self, "_tree"):  # the held objects and the tree as they were
            return super().upsert(objects, trace=trace)

    def delete(self, ids: Sequence[str], *, trace: Trace | None = None) -> list[str]:
        """:meth:`LiveIndex.delete`; all or nothing.

        Examples:
            >>> from retrievekit.core.fakes import LengthEmbedder
            >>> LiveIndex.create("lattice", embedder=LengthEmbedder()).delete(["a"])
            []
        """
        with self._writer, undone_on_failure(self, "_tree"):
            return super().delete(ids, trace=trace)

    def _change_parts(self, removed: list[str], added: list[DataObject], trace: Trace) -> None:
        held = list(self._objects.values())
        tree = self._tree
        report: dict[str, Any] = {"built": False, "inserted": 0, "deleted": 0, "summary_calls": 0, "summary_bound": 0}
        self._part_change = FOLD  # a tree built or emptied: live/ written whole
        if not held:
            new = None
            report["deleted"] = len(removed)
        elif tree is None or _removes_every_leaf(tree, removed):  # nothing to keep: a tree built afresh
            new = self._build(held, trace)
            report.update(built=True, inserted=len(held))
        else:
            record_baseline(tree)  # a tree opened from an older folder: read here, on a draft it would clone every node
            new = draft(tree)  # the change clones the nodes it reads, not the tree
            emb, llm = self._embedding_model(), self._summary_model()
            done = [delete_documents(new, removed, llm, emb, self.build_config, trace=trace)] if removed else []
            if added:
                done.append(insert_documents(new, added, llm, emb, self.build_config, trace=trace))
            for key in ("summary_calls", "summary_bound"):
                report[key] = sum(int(d[key]) for d in done)
            report.update(inserted=len(added), deleted=len(removed))
            touched, gone = settle(new)
            if self.path is not None:
                self._part_change = tree_delta(tree, new, touched, gone)  # the change's line in the folder's log
        self._tree = new  # the swap: a search reads the old tree or this one
        self.last_report = report

    def _build(self, held: list[DataObject], trace: Trace) -> SemanticTree:
        from retrievekit.core.lattice.method import build_tree

        tree = build_tree(
            held, self._summary_model(), self._embedding_model(), self.build_config, builder=self.builder, trace=trace
        )
        trace.note("lattice_built", "a LATTICE tree was built over the held documents", documents=len(held))
        record_baseline(tree)  # the build's values for drift(), read now rather than by the first change
        return tree

    # ------------------------------------------------------------------ models, folder
    def _embedding_model(self) -> Any:
        if self._embedder is None:
            from retrievekit.core.index.embeddings import MiniLMEmbedder

            self._embedder = MiniLMEmbedder.default()
        return self._embedder

    def _model(self) -> Any:
        if self._llm is None:
            from retrievekit.core.llm.resolve import resolve_llm

            self._llm = resolve_llm(self._llm_arg)
        return self._llm

    def _summary_model(self) -> Any:
        """The model that writes summaries: none with extractive summaries (nothing loaded)."""
        return None if self.build_config.summaries == "extractive" else self._model()

    def _forget_parts(self) -> None:
        """The tree is kept until :meth:`_open_parts` replaces it: a search during a reload reads the old tree (with
        its own objects), never an empty index."""
        super()._forget_parts()

    def _write_parts(self, folder: Path) -> None:
        if self._tree is not None:
            self._tree.save(folder / TREE)

    def _logged_part(self) -> Any:
        """What the change just made did to the tree (:func:`~retrievekit.core.lattice.tree_delta.tree_delta`), its
        log line's part; :data:`~retrievekit.core.index.live.FOLD` after a build or with no tree left."""
        return self._part_change

    def _open_parts(self) -> None:
        assert self.path is not None
        held = list(self._objects.values())
        folder = self.path / "live" / TREE
        if not held:
            self._tree = None
            return
        if not folder.is_dir():
            raise IndexFormatError(f"{self.path}: the tree (live/{TREE}/) is missing")
        tree = SemanticTree.load(folder)
        if self._log is not None and self._log.parts:  # the changes since the tree was written, in order
            for removed, added, part in self._log.parts:
                apply_tree_delta(tree, part, removed=removed, added=added, objects=self._objects)
            tree.reindex()  # the structure checked whole once
            self._log.parts = []
        check_same_corpus((tree.objects[i] for i in tree.leaf_ids()), held, where=f"the tree of {self.path}")
        self._tree = tree


def _removes_every_leaf(tree: SemanticTree, removed: Iterable[str]) -> bool:
    """Whether ``removed`` holds every leaf of ``tree`` (a lookup per removed id, not a set of the leaves)."""
    gone = {r for r in removed if r in tree.nodes and tree.is_leaf(r)}
    return len(gone) >= tree.num_leaves
