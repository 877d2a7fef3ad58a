"""The framework side of the living-index edge tests: LangChain's record manager and source documents, LlamaIndex's
documents and the three rounds of refreshes and deletions (:mod:`_living_corpus`'s rounds) every living method
goes through."""

from __future__ import annotations

from typing import Any

from _living_corpus import DELETED_2, DELETED_3, rounds

EXPECTED = {  # (num_added, num_updated, num_skipped, num_deleted) per round, the same for every method
    "incremental": [(8, 0, 0, 0), (4, 0, 5, 2), (1, 0, 6, 1)],
    "full": [(8, 0, 0, 0), (4, 0, 5, 3), (1, 0, 6, 3)],
}
"""What LangChain's ``index()`` reports for each of the three rounds, per cleanup mode."""


def held_after(cleanup: str) -> dict[str, str]:
    """What the index should hold after round 3: the final round; incremental cleanup never removes a source that
    left the source (LangChain's semantics), so those keep their last version."""
    one, two, three = rounds()
    if cleanup == "full":
        return dict(three)
    return three | {k: one[k] for k in DELETED_2} | {k: two[k] for k in DELETED_3}


def record_manager(tmp_path: Any, name: str, *, async_mode: bool = False) -> Any:
    """A real ``SQLRecordManager`` on a SQLite file in ``tmp_path`` (``aiosqlite`` when ``async_mode``)."""
    from langchain_classic.indexes import SQLRecordManager

    driver = "sqlite+aiosqlite" if async_mode else "sqlite"
    manager = SQLRecordManager(
        f"retrievekit/{name}", db_url=f"{driver}:///{tmp_path / 'r.sqlite'}", async_mode=async_mode
    )
    if not async_mode:
        manager.create_schema()
    return manager


def source_docs(round_: dict[str, str]) -> list[Any]:
    """A round as LangChain documents, each with its ``source`` (the key ``index()`` cleans up by)."""
    from langchain_core.documents import Document

    return [Document(page_content=t, metadata={"source": s}) for s, t in sorted(round_.items())]


def counts(got: dict[str, int]) -> tuple[int, int, int, int]:
    """``index()``'s result as (added, updated, skipped, deleted)."""
    return got["num_added"], got["num_updated"], got["num_skipped"], got["num_deleted"]


def li_docs(round_: dict[str, str]) -> list[Any]:
    """A round as LlamaIndex documents (the source as the ref doc id)."""
    from llama_index.core import Document

    return [Document(text=t, id_=s, metadata={"source": s}) for s, t in sorted(round_.items())]


def three_rounds(index: Any) -> None:
    """The three rounds through a LlamaIndex index's ``refresh_ref_docs`` and ``delete_ref_doc``, checking what each
    refresh reports changed."""
    one, two, three = rounds()
    assert index.refresh_ref_docs(li_docs(one)) == [True] * len(one)
    assert index.refresh_ref_docs(li_docs(two)) == [k not in one or one[k] != two[k] for k in sorted(two)]
    for key in DELETED_2:
        index.delete_ref_doc(key, delete_from_docstore=True)
    assert index.refresh_ref_docs(li_docs(three)) == [two[k] != three[k] for k in sorted(three)]
    for key in DELETED_3:
        index.delete_ref_doc(key, delete_from_docstore=True)
    assert sorted(index.ref_doc_info) == sorted(three)


def index_rounds(store: Any, manager: Any, cleanup: str) -> Any:
    """LangChain's ``index()`` over the three rounds into ``store``: each round's counts, as it is indexed."""
    from langchain_core.indexing import index

    for round_ in rounds():
        got = index(source_docs(round_), manager, store, cleanup=cleanup, source_id_key="source", key_encoder="sha256")
        yield counts(got)


def checked_rounds(store: Any, manager: Any, cleanup: str) -> Any:
    """:func:`index_rounds` with each round's counts checked against :data:`EXPECTED`; yields each round once it is
    indexed, for the test's own checks."""
    for round_, got, expected in zip(rounds(), index_rounds(store, manager, cleanup), EXPECTED[cleanup], strict=True):
        assert got == expected
        yield round_


async def aindex_rounds(store: Any, manager: Any) -> list[tuple[int, int, int, int]]:
    """LangChain's ``aindex()`` over the three rounds (full cleanup) into ``store``, on an async record manager."""
    from langchain_core.indexing import aindex

    await manager.acreate_schema()
    out = []
    for round_ in rounds():
        got = await aindex(
            source_docs(round_), manager, store, cleanup="full", source_id_key="source", key_encoder="sha256"
        )
        out.append(counts(got))
    return out
