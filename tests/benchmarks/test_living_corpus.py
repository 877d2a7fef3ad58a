"""benchmarks/living_corpus.py's LATTICE and ARM rows on a 40-abstract SciFact: the quality rows (the corpus added
in rounds, edited, a tenth deleted) compare the living index with one built fresh on what it holds: LATTICE with the
exact oracle finds every live relevant document in both trees, with no summary call (extractive); ARM's answers are
a fresh build's; the cost rows count LATTICE's summary calls per changed document within the tree's height (the
scripted model's own count agrees); and a rerun resumes from the records (runs nothing).

Real components: all-MiniLM-L6-v2, the bottom-up builder, LATTICE's search with the exact oracle and the cosine
judge, ARM over BM25 + Chroma. The scripted summariser is the point of the call-count row."""

from __future__ import annotations

import json
import sys

import pytest
from _mini_scifact import write_mini_scifact
from _paths import REPO

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from benchmarks import living_corpus  # noqa: E402

TOPICS = ["fever", "cholesterol", "sunlight", "insulin", "malaria", "asthma", "migraine", "anemia"]
DOCS = [
    (f"{w.title()} study {i}", f"Patients with {w} were followed for {i + 2} years. The {w} cohort improved. Dose {i}.")
    for i in range(40)
    for w in [TOPICS[i % len(TOPICS)]]
]
CLAIMS = [f"{TOPICS[i % len(TOPICS)]} cohort followed {i + 2} years" for i in range(12)]  # claim i: document i - 1


@pytest.mark.timeout(600)
def test_lattice_and_arm_rows_match_a_fresh_build_and_count_summary_calls(tmp_path, monkeypatch, capsys):
    data = write_mini_scifact(tmp_path, DOCS, CLAIMS)
    records = tmp_path / "rows.jsonl"
    argv = ["--data-dir", str(data), "--records", str(records), "--work-dir", str(tmp_path / "cache"), "--sizes", "60"]
    argv += ["--methods", "lattice-oracle", "lattice-cosine", "arm", "lattice", "lattice-llm"]
    assert living_corpus.main(argv) == 0
    rows = {(r["part"], r["method"]): r for r in map(json.loads, records.read_text().splitlines())}
    assert sorted(rows) == sorted(
        [("quality", m) for m in ("lattice-oracle", "lattice-cosine", "arm")]
        + [("cost", m) for m in ("arm", "lattice", "lattice-llm")]
    )
    oracle, cosine, arm = (rows["quality", m] for m in ("lattice-oracle", "lattice-cosine", "arm"))
    assert oracle["documents"] == 36 and oracle["edited"] == 1 and oracle["leaves_are_the_live_documents"]
    assert oracle["recall10_updated"] == oracle["recall10_fresh"] == 1.0 and oracle["summary_calls"] == 0
    assert oracle["claims_with_live_gold"] <= oracle["claims"] == 12
    assert cosine["judge"] == "cosine" and 0 < cosine["ndcg_updated"] <= 1 and 0 < cosine["ndcg_fresh"] <= 1
    assert arm["same_ranking_claims"] == 12 and arm["ndcg_updated"] == arm["ndcg_fresh"]
    assert arm["largest_claim_difference"] == 0 and arm["ndcg_difference"]["mean"] == 0
    extractive, llm = rows["cost", "lattice"], rows["cost", "lattice-llm"]
    assert extractive["summary_calls_per_added"] == 0 == extractive["model_calls_counted"]
    assert 0 < llm["summary_calls_per_added"] <= llm["summary_bound_per_added"]
    assert llm["summary_bound_per_added"] <= max(llm["height_built"], llm["height_added"])
    assert llm["model_calls_counted"] == llm["summary_calls_added"] + llm["summary_calls_deleted"]
    assert llm["summary_calls_build"] > 0 and llm["ms_per_added"] > 0 and llm["ms_per_deleted"] > 0
    first = capsys.readouterr().out

    def nothing_runs(*a, **kw):
        raise AssertionError("every row is recorded: nothing should run")

    monkeypatch.setattr(living_corpus, "_cost", nothing_runs)
    monkeypatch.setattr(living_corpus, "_method_quality", nothing_runs)
    assert living_corpus.main(argv) == 0
    assert capsys.readouterr().out.splitlines()[-6:] == first.splitlines()[-6:]


def test_the_changes_keep_the_bm25_rows_draws_and_edit_a_fiftieth_of_the_kept_documents():
    from retrievekit.core.types import Passage

    corpus = [Passage(id=str(i), text=f"First {i}. Second {i}.") for i in range(200)]
    half, rest, gone, edits = living_corpus._plan(corpus)
    assert len(half) == len(rest) == 100 and len(gone) == 20 and len(edits) == 3
    assert not {e.id for e in edits} & set(gone)
    assert all(e.text.startswith("Second") for e in edits)
