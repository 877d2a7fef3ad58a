"""MindRef over a living corpus: :class:`LiveMindRef`, a :class:`~retrievekit.core.index.live.LiveIndex` whose part
is a :class:`~retrievekit.core.generative.mindref.MindRef` (its keyed title trie and its documents' token arrays),
changed in place by :meth:`MindRef.delete <retrievekit.core.generative.mindref.MindRef.delete>` and
:meth:`MindRef.add <retrievekit.core.generative.mindref.MindRef.add>`.

* **Changes.** The replaced and deleted documents leave the title trie (a title path no other document holds is
  removed, so a deleted document is never generated again), then the new and replacing ones enter it; no title is
  re-encoded but theirs, and a document's text is encoded when a query first recalls it. After any sequence of
  changes, answers (ids, passages, scores) equal a ``MindRef`` built fresh over the held documents in the order of
  :meth:`~retrievekit.core.index.live.LiveIndex.ids`. An empty index holds no MindRef; the first upsert makes one
  (loading the LM), and an index whose documents are all deleted answers ``[]`` (an ``empty_index`` event).
* **All or nothing, one snapshot.** A change is made on a copy (``O(documents + trie nodes)``, no encoding) and
  swapped in when it succeeded: a failing change leaves the index as it was, and a search running meanwhile reads
  the old MindRef or the new one. Changes are made one at a time.
* **On disk** (``path=``) the title trie is kept inside ``live/`` with its keys (``live/titles/``, written by
  :meth:`~retrievekit.core.index.token_trie.TokenTrie.save`) beside ``live/mindref.json`` (each document's title
  and title path, and the tokenizer's fingerprint). A change is one line of the change log
  (:mod:`~retrievekit.core.index.live_log`): the held objects' change with the ids it took out of the trie and the
  added documents' titles and title paths, applied to the saved trie on reopening; the line is the commit, so a
  process killed during a change leaves the old state or the new one. Reopening reads the trie as saved (no
  title is encoded); an LM whose tokenizer differs from the one that wrote it re-encodes the saved titles, with a
  :class:`~retrievekit.core.errors.FallbackWarning`.

Examples:
    >>> from _tiny_lm import tiny_local_lm  # doctest: +SKIP
    >>> idx = LiveIndex.create("mindref", llm=tiny_local_lm(), options={"title_beams": 4})  # doctest: +SKIP
    >>> idx.upsert([Passage(id="a", title="Aspirin", text="Aspirin thins the blood.")])  # doctest: +SKIP
    ['a']
    >>> _ = idx.delete(["a"]); idx.search("blood")  # doctest: +SKIP
    []
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import FallbackWarning, IndexFormatError, InvalidInputError
from retrievekit.core.generative.mindref import MindRef, MindRefConfig, scoring_lm
from retrievekit.core.index.live import FOLD, LiveIndex
from retrievekit.core.index.live_undo import undone_on_failure
from retrievekit.core.index.token_trie import TokenTrie
from retrievekit.core.llm.protocol import ScoringLM
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject, ScoredHit

__all__ = ["LiveMindRef", "tokenizer_fingerprint"]

TRIE = "titles"  # the title trie's folder inside live/
META = "mindref.json"  # titles, title paths and the tokenizer's fingerprint, inside live/
PROBE = "MindRef tokenizer probe: Aspirin, 1984; Ünïcode — tea & café."


def tokenizer_fingerprint(lm: ScoringLM) -> str:
    """A digest of how ``lm`` tokenizes (its EOS id and the ids of a fixed probe text): two LMs with the same
    fingerprint give a saved title trie the same meaning.

    Examples:
        >>> class Chars:
        ...     eos_token_id = 0
        ...     def encode(self, text): return [ord(c) for c in text]
        >>> tokenizer_fingerprint(Chars()) == tokenizer_fingerprint(Chars()), len(tokenizer_fingerprint(Chars()))
        (True, 16)
    """
    probe = [int(t) for t in lm.encode(PROBE)]
    return hashlib.sha1(json.dumps([lm.eos_token_id, probe]).encode()).hexdigest()[:16]


class LiveMindRef(LiveIndex):
    """MindRef as a living index (``LiveIndex.create("mindref", llm=..., options=...)``): ``options`` are
    :class:`~retrievekit.core.generative.mindref.MindRefConfig` fields, ``llm`` its scoring LM (a local model's name,
    default :data:`~retrievekit.core.llm.models.DEFAULT_MODEL`, or a ``LocalLM``; loaded at the first change or
    search). It embeds nothing: ``embedder=`` is refused by name. See the module docstring.

    Examples:
        >>> LiveIndex.create("mindref", options={"title_beams": 4}).config.title_beams
        4
        >>> LiveIndex.create("mindref", options={"nope": 4})
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: unknown MindRef option(s): nope; known: ...
    """

    METHODS = ("mindref",)

    def __init__(
        self,
        method: str,
        *,
        path: Path | None,
        embedder: Any,
        options: Any,
        objects: Sequence[DataObject],
        llm: Any = None,
    ) -> None:
        if embedder is not None:
            raise InvalidInputError(
                "embedder= reaches no part of a mindref LiveIndex (it embeds nothing); leave it out"
            )
        super().__init__(method, path=path, embedder=None, options=options, objects=objects, llm=llm)

    def _configure(self, options: dict[str, Any], llm: Any) -> None:
        self.config = MindRefConfig.from_options(options)
        self._llm_arg = llm
        # a model object is checked now (a chat model refused where it is given); a name is loaded when first needed
        self._lm: ScoringLM | None = scoring_lm(llm) if llm is not None and not isinstance(llm, str) else None
        self._mindref: MindRef | None = None
        self._saved: tuple[TokenTrie, dict[str, Any]] | None = None  # read from the folder, bound at first use
        self._part_change: Any = FOLD
        self.last_report: dict[str, Any] = {}
        """What the last change did: ``built`` (a MindRef made), ``added``, ``deleted``, ``titles`` (distinct title
        paths held after it)."""

    # ------------------------------------------------------------------ read
    @property
    def mindref(self) -> MindRef | None:
        """The current MindRef (None while the index holds none); read it, change it only through the index.

        Examples:
            >>> LiveIndex.create("mindref").mindref is None
            True
        """
        if self._saved is not None:  # a (re)opened folder's MindRef, bound at first use; until then the old one
            with self._writer.thread:  # a read: the threads of this process only, no folder lock
                self._bind()
        return self._mindref

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """MindRef's titles, then passages, over the current snapshot; an empty index answers ``[]`` (an
        ``empty_index`` trace event)."""
        check_query(query)
        check_k(k)
        self._check_open()
        trace = trace if trace is not None else Trace()
        mr = self.mindref
        if mr is None or not len(mr):
            trace.note("empty_index", "the index holds no objects; returning no hits")
            return []
        return mr.search(query, k, trace=trace)

    # ------------------------------------------------------------------ change
    def upsert(self, objects: Sequence[DataObject], *, trace: Trace | None = None) -> list[str]:
        """:meth:`LiveIndex.upsert`; all or nothing (a failing change leaves the index as it was)."""
        with self._writer, self._one_change():
            return super().upsert(objects, trace=trace)

    def delete(self, ids: Sequence[str], *, trace: Trace | None = None) -> list[str]:
        """:meth:`LiveIndex.delete`; all or nothing."""
        with self._writer, self._one_change():
            return super().delete(ids, trace=trace)

    def _one_change(self) -> AbstractContextManager[None]:
        """A change's context, entered under the writer lock: the saved MindRef bound first, then the change undone
        (the held objects and the MindRef as they were) if it fails."""
        self._bind()
        return undone_on_failure(self, "_mindref")

    def _change_parts(self, removed: list[str], added: list[DataObject], trace: Trace) -> None:
        mr = self._mindref
        built = mr is None
        new = MindRef.empty(self._model(), self.config) if mr is None else mr.copy()
        gone = [i for i in removed if i in new]
        if gone:
            new.delete(gone)
        if added:
            new.add(added)
        titles = len(new.trie)  # the trie's arrays are made before the swap: searches only read them
        self._part_change = FOLD if built or self.path is None else _logged(new, gone, added)
        self._mindref = new  # the swap: a search reads the old MindRef or this one
        self.last_report = {"built": built, "added": len(added), "deleted": len(gone), "titles": titles}
        trace.count("mindref.update.added", len(added))
        trace.count("mindref.update.deleted", len(gone))

    # ------------------------------------------------------------------ model, folder
    def _model(self) -> ScoringLM:
        if self._lm is None:
            self._lm = scoring_lm(self._llm_arg)
        return self._lm

    def _bind(self) -> None:
        """Make the MindRef of a reopened folder (under the writer lock): the saved trie when the LM tokenizes as
        the one that wrote it, else the saved titles encoded again (a ``FallbackWarning``)."""
        if self._saved is None:
            return
        trie, meta = self._saved
        lm, held = self._model(), list(self._objects.values())
        titles: dict[str, str] = meta["titles"]
        if meta["tokenizer"] == tokenizer_fingerprint(lm):
            self._mindref = MindRef.restore(held, lm, self.config, titles=titles, paths=meta["paths"], trie=trie)
        else:
            warnings.warn(
                f"{self.path}: the title trie was written with another tokenizer than {lm!r}'s; its "
                f"{len(titles)} saved titles are encoded again",
                FallbackWarning,
                stacklevel=3,
            )
            mr = MindRef.empty(lm, self.config, title_fn=lambda o: titles[o.id])
            mr.add(held)
            self._mindref = mr
        self._saved = None

    def _forget_parts(self) -> None:
        """The MindRef is kept until the reopened folder's is bound: a search during a reload reads the old one, never
        an empty index."""
        super()._forget_parts()
        self._saved = None

    def _write_parts(self, folder: Path) -> None:
        mr = self._mindref
        if mr is None:
            return
        mr.trie.save(folder / TRIE)
        titles = dict(zip(mr.ids(), mr.titles, strict=True))
        meta = {"titles": titles, "paths": mr.title_paths(), "tokenizer": tokenizer_fingerprint(mr.lm)}
        (folder / META).write_text(json.dumps(meta, ensure_ascii=False), encoding="utf-8")

    def _logged_part(self) -> Any:
        """The change's titles (:func:`_logged`), its log line's part; :data:`~retrievekit.core.index.live.FOLD`
        after the MindRef was made."""
        return self._part_change

    def _open_parts(self) -> None:
        assert self.path is not None
        held = list(self._objects)
        live = self.path / "live"
        if not (live / TRIE).is_dir():
            if held:
                raise IndexFormatError(f"{self.path}: the title trie (live/{TRIE}/) is missing")
            self._mindref = None
            return
        trie = TokenTrie.load(live / TRIE)
        try:
            meta = json.loads((live / META).read_text(encoding="utf-8"))
            titles, paths, tokenizer = meta["titles"], meta["paths"], meta["tokenizer"]
            ok = isinstance(titles, dict) and isinstance(paths, dict) and isinstance(tokenizer, str)
            for _removed, _added, part in self._log.parts if self._log is not None else []:
                _replay(trie, meta, part)  # the changes since the trie was written, in order
        except (OSError, ValueError, KeyError, TypeError, InvalidInputError) as e:
            raise IndexFormatError(f"{live / META} or its changes are unreadable: {type(e).__name__}: {e}") from e
        if not ok or trie.ids() != held or list(titles) != held or list(paths) != held:
            raise IndexFormatError(
                f"{self.path}: the title trie holds {len(trie.ids())} documents and the held objects are "
                f"{len(held)}: they are not one corpus"
            )
        self._saved = (trie, meta)
        if self._log is not None:
            self._log.parts = []


def _logged(mr: MindRef, removed: list[str], added: Sequence[DataObject]) -> dict[str, Any]:
    """What a change did to the title trie, for its log line: the ids it removed, then each added document's title
    and title path, and the tokenizer that made the paths."""
    ids = [o.id for o in added]
    return {
        "removed": removed,
        "titles": mr.titles_of(ids),
        "paths": {i: list(p) for i, p in mr.title_paths(ids).items()},
        "tokenizer": tokenizer_fingerprint(mr.lm),
    }


def _replay(trie: TokenTrie, meta: dict[str, Any], part: dict[str, Any]) -> None:
    """Make a logged change (:func:`_logged`) on a reopened folder's ``trie`` and ``meta`` (in place). Paths made
    by another tokenizer than the saved trie's mark the tokenizer unknown: the titles are encoded again on binding."""
    gone = [i for i in part["removed"] if i in meta["titles"]]
    trie.delete(gone)
    for i in gone:
        del meta["titles"][i], meta["paths"][i]
    trie.add({i: p for i, p in part["paths"].items()})
    meta["titles"].update(part["titles"])
    meta["paths"].update(part["paths"])
    if part["tokenizer"] != meta["tokenizer"]:
        meta["tokenizer"] = "several"
