"""ARM over a living corpus: :class:`LiveArm`, a :class:`~retrievekit.core.index.live.LiveIndex` whose parts are
ARM's own index, its BM25 index and its dense index.

ARM's index is what it searches besides its model: the objects by id, a BM25 index and a dense index over them
(:class:`~retrievekit.core.arm.retriever.Arm` keeps nothing else that depends on the corpus; its vector caches are per
searcher). :class:`LiveArm` changes both parts in place, as ``hybrid``'s living index does (the dense part embeds only
what changed), and searches with an :class:`~retrievekit.core.arm.retriever.Arm` over the held objects and those parts,
made afresh after each change: its answers, scores included, are a fresh build's over the held objects. On the default
engine (``bm25_engine="tantivy"``) the BM25 part is tantivy's, changed in place (a bm25s part, ``bm25_engine="bm25s"``,
is built again at each change); tantivy's own statistics count deleted documents until a compaction (``compact()``, and
on its own past a tenth), and meanwhile its scores are taken over the live documents, so they stay a fresh build's. A
folder index keeps ``live/``, ``bm25/`` and ``dense/`` like ``hybrid``'s.

Examples:
    >>> from retrievekit.core.fakes import OnesEmbedder
    >>> from retrievekit.core.types import Passage
    >>> idx = LiveIndex.create("arm", embedder=OnesEmbedder(), llm="none", options={"base_k": 2})
    >>> idx.upsert([Passage(id="p", text="Prime Suspect was created by Lynda La Plante."),
    ...             Passage(id="q", text="Tea is grown in Assam.")])
    ['p', 'q']
    >>> _ = idx.delete(["q"]); [h.id for h in idx.search("Who created Prime Suspect?")]
    ['p']
"""

from __future__ import annotations

from typing import Any

from retrievekit.core.arm.config import ArmConfig
from retrievekit.core.arm.retriever import Arm
from retrievekit.core.checks import check_k, check_query
from retrievekit.core.index.live import LiveIndex
from retrievekit.core.index.live_options import ENGINE_KEY, bm25_config
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit

__all__ = ["LiveArm"]


class LiveArm(LiveIndex):
    """ARM as a living index (``LiveIndex.create("arm", ...)``): ``options`` are
    :class:`~retrievekit.core.arm.config.ArmConfig` fields and ``bm25_engine`` (``"tantivy"``, the default: the BM25
    part changes in place in its folder; ``"bm25s"``: built again at each change), ``llm`` ARM's model (a model's name,
    a served LLM or a model object; default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`, loaded at the first
    search; ``"none"``: no LLM stages), ``embedder`` the dense part's model (default all-MiniLM-L6-v2).

    Examples:
        >>> from retrievekit.core.fakes import OnesEmbedder
        >>> LiveIndex.create("arm", embedder=OnesEmbedder(), options={"base_k": 3}).config.base_k
        3
        >>> LiveIndex.create("arm", embedder=OnesEmbedder(), options={"fusion": "rrf"})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown ARM option(s): fusion...
    """

    METHODS = ("arm",)

    def _configure(self, options: dict[str, Any], llm: Any) -> None:
        self.config = ArmConfig.from_options({k: v for k, v in options.items() if k != ENGINE_KEY})
        self.bm25_config = bm25_config(self.method, options)  # ``bm25_engine="tantivy"``: changed in place
        self._llm_arg = llm
        self._llm: Any = None
        self._arm: tuple[int, Arm] | None = None
        self._changes = 0

    @property
    def _uses_bm25(self) -> bool:
        return True

    @property
    def _uses_dense(self) -> bool:
        return True

    def _forget_parts(self) -> None:
        super()._forget_parts()
        self._changes += 1  # the parts are opened again: the next search makes its Arm over them

    def _change_parts(self, removed: list[str], added: list[Any], trace: Trace) -> None:
        super()._change_parts(removed, added, trace)
        self._changes += 1  # the next search makes its Arm over the changed parts

    def _searcher(self) -> Arm | None:
        """ARM over the held objects and the current parts (made once per change)."""
        changes, cached = self._changes, self._arm
        if cached is not None and cached[0] == changes:
            return cached[1]
        held = list(self._objects.values())
        if not held:
            return None
        if self._llm is None:
            from retrievekit.core.llm.models import DEFAULT_MODEL
            from retrievekit.core.llm.resolve import resolve_llm

            self._llm = (resolve_llm(DEFAULT_MODEL if self._llm_arg is None else self._llm_arg, default=None),)
        arm = Arm(held, self._llm[0], self.config, dense=self._dense, bm25=self._bm25, embedder=self._embedder)
        self._arm = (changes, arm)
        return arm

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """ARM's object set for ``query`` over the held objects; an empty index answers ``[]`` (an ``empty_index``
        event)."""
        trace = trace if trace is not None else Trace()
        with self._readers.reading():  # the parts stay as they are until it is done (a change waits)
            arm = self._checked_searcher(query, k, trace)
            return [] if arm is None else arm.search(query, k, trace=trace)

    async def asearch(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """:meth:`search` awaited (ARM's async driver on the caller's loop)."""
        trace = trace if trace is not None else Trace()
        async with self._readers.areading():  # a change under way is awaited without blocking the loop
            arm = self._checked_searcher(query, k, trace)
            return [] if arm is None else await arm.asearch(query, k, trace=trace)

    def _checked_searcher(self, query: str, k: int, trace: Trace) -> Arm | None:
        """The query and ``k`` checked, the index open: the ``Arm`` over the held objects, or None (noted) when the
        index holds none."""
        check_query(query)
        check_k(k)
        self._check_open()
        arm = self._searcher()
        if arm is None:
            trace.note("empty_index", "the index holds no objects; returning no hits")
        return arm

    @property
    def returns_set(self) -> bool:
        """Whether hits are ARM's selected set (not padded to ``k``), as :attr:`Arm.returns_set`."""
        return not self.config.fill_to_k
