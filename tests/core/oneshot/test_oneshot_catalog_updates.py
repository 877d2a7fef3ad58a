"""One-SHOT's document catalog changes in place: add / delete / update answer as a fresh build over the documents
held, bad input is a typed error naming it, and a saved catalog reads back the same."""

from __future__ import annotations

import json
import random

import pytest

from retrievekit.core.errors import IndexFormatError, InvalidInputError
from retrievekit.core.oneshot import DocumentCatalog, DocumentInfo

WORDS = ["Fund", "Market", "Conduct", "Business", "Islamic", "Finance", "Prudential", "Insurance", "Rules", "Code"]


def _record(i: int, rng: random.Random) -> dict[str, object]:
    title = " ".join(rng.sample(WORDS, 3)) + f" {i}"
    abbr = "".join(w[0] for w in title.split()[:3]) + chr(65 + i % 26)
    return {"DocumentID": i, "title": f"{title} ({abbr})", "aliases": [f"R{i}"], "version_date": f"20{10 + i % 14}"}


def _queries(records: list[dict[str, object]]) -> list[str]:
    out = []
    for r in records:
        title = str(r["title"])
        out += [
            f"Under {title.split('(')[1].rstrip(')')} 2.1, who approves?",
            f"see {title.lower()}",
            f"R{r['DocumentID']}",
        ]
    return [*out, "nothing named here", " and ".join(f"R{r['DocumentID']}" for r in records[::3])]


def _finds(cat: DocumentCatalog, queries: list[str]) -> list[list[tuple[object, str]]]:
    return [cat.find(q) for q in queries]


def test_changes_answer_as_a_fresh_build_over_the_live_documents(tmp_path):
    rng = random.Random(7)
    records = [_record(i, rng) for i in range(40)]
    queries = _queries(records)
    cat = DocumentCatalog.from_records(records[:30])
    _finds(cat, queries)  # names compiled before the changes: a change must not leave stale ones behind
    live = list(records[:30])

    added = [DocumentCatalog.from_records([r]).documents[r["DocumentID"]] for r in records[30:]]
    assert cat.add(added) == list(range(30, 40))
    live += records[30:]
    assert cat.delete([3, 17, 3, 31]) == [3, 17, 31]
    live = [r for r in live if r["DocumentID"] not in {3, 17, 31}]
    edited = {**records[5], "title": "Wholly Renamed Rulebook (WRR)", "aliases": ["NEWALIAS"]}
    assert cat.update(DocumentCatalog.from_records([edited]).documents[5]) == [5]
    live = [r for r in live if r["DocumentID"] != 5] + [edited]  # an update is delete + add: it moves to the end

    fresh = DocumentCatalog.from_records(live)
    assert [d.doc_id for d in cat.documents.values()] == [r["DocumentID"] for r in live]
    assert _finds(cat, queries + _queries([edited])) == _finds(fresh, queries + _queries([edited]))
    assert cat.find("Under WRR 1.1") == [(5, "WRR")] and cat.find(str(records[5]["title"])) == []
    assert cat.find("R3 and R17 and R31") == []

    back = DocumentCatalog.load(cat.save(tmp_path / "catalog"))
    assert list(back.documents.values()) == list(cat.documents.values())
    assert _finds(back, queries) == _finds(fresh, queries)


def test_bad_changes_are_typed_errors_and_change_nothing():
    cat = DocumentCatalog([DocumentInfo(doc_id=1, title="Fund Rules"), DocumentInfo(doc_id="gen", aliases=("GEN",))])
    before = dict(cat.documents)
    with pytest.raises(InvalidInputError, match=r"delete: document id 99 is not in the catalog"):
        cat.delete([1, 99])
    with pytest.raises(InvalidInputError, match=r"add: document id 'gen' is already in the catalog"):
        cat.add([DocumentInfo(doc_id=2, title="Two"), DocumentInfo(doc_id="gen", title="Again")])
    with pytest.raises(InvalidInputError, match=r"documents\[1\]: id 3 appears twice"):
        cat.add([DocumentInfo(doc_id=3), DocumentInfo(doc_id=3)])
    with pytest.raises(InvalidInputError, match=r"update: document id 4 is not in the catalog"):
        cat.update([DocumentInfo(doc_id=1, title="One"), DocumentInfo(doc_id=4, title="Four")])
    with pytest.raises(InvalidInputError, match=r"documents\[0\] must be a DocumentInfo, got dict"):
        cat.add([{"doc_id": 5}])
    with pytest.raises(InvalidInputError, match=r"no usable doc_id"):
        cat.add([DocumentInfo(doc_id=None, title="x")])
    with pytest.raises(InvalidInputError, match=r"ids must be a list of document ids, got str"):
        cat.delete("gen")
    assert cat.documents == before and cat.find("GEN and the Fund Rules") == [(1, "Fund Rules"), ("gen", "GEN")]


def test_saved_catalog_is_sealed_and_refuses_unsavable_ids(tmp_path):
    folder = DocumentCatalog([DocumentInfo(doc_id=1, title="Fund Rules", version_date="2019")]).save(tmp_path / "c")
    assert DocumentCatalog.load(folder).documents[1] == DocumentInfo(1, "Fund Rules", (), "2019")
    (folder / "documents.json").write_text(json.dumps([{"doc_id": 1, "title": "Other", "aliases": []}]))
    with pytest.raises(IndexFormatError):  # changed behind the manifest's checksums
        DocumentCatalog.load(folder)
    with pytest.raises(InvalidInputError, match=r"save: document id \(1, 2\) is not a str or int"):
        DocumentCatalog([DocumentInfo(doc_id=(1, 2), title="T")]).save(tmp_path / "d")
    assert not (tmp_path / "d").exists()
