"""Issue #62 item 5 and issue #64 item 4: advise gives no advice on nothing, keys its records by the labels, and says
"no better than chance" first."""

from __future__ import annotations

import json
import math

import pytest
from _advise import CORPUS, WORDS, KeywordQuestions, KnownAUC

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.eval.advise import advise, render_advice

QUESTIONS = {f"q{i}": f"What is {w}?" for i, w in enumerate(WORDS)}
QRELS = {f"q{i}": {f"d{i}": 1} for i in range(30)}


def quiet(**kw):
    return {"progress": False, "say": lambda line: None, **kw}


class NaNFor(KnownAUC):
    """A judge of known AUC that scores NaN every text of the questions holding one of ``words`` (a broken readout:
    the scripted NaN is the point)."""

    def __init__(self, auc: float, words: set[str]) -> None:
        super().__init__(auc)
        self.words = words

    def score_relevance(self, query, candidates, *, trace=None):
        scores = super().score_relevance(query, candidates, trace=trace)
        return [math.nan] * len(scores) if any(w in query for w in self.words) else scores


def test_a_judge_scoring_every_pair_nan_gets_no_advice(tmp_path):
    """Before: 'AUC 0.500 (0.500-0.500)' and 'oneshot: pays off'."""
    records = tmp_path / "r.jsonl"
    judge = NaNFor(0.9, set(WORDS))
    with pytest.raises(InvalidInputError, match=r"no usable pairs .* 20 questions were scored NaN or infinite"):
        advise(CORPUS, judge, questions=QUESTIONS, qrels=QRELS, max_calls=160, records=records, **quiet())
    assert not records.exists() or len(records.read_text().splitlines()) <= 1  # nothing NaN recorded
    with pytest.raises(InvalidInputError, match="no usable pairs"):  # label-free too
        advise(CORPUS, NaNFor(0.9, set(WORDS)), question_llm=KeywordQuestions(), max_calls=45, **quiet())


def test_questions_scored_nan_are_left_out_and_asked_again_on_the_rerun(tmp_path):
    records = tmp_path / "r.jsonl"
    broken = set(WORDS[:10])
    r = advise(CORPUS, NaNFor(0.9, broken), questions=QUESTIONS, qrels=QRELS, max_calls=160, records=records, **quiet())
    left = r["left_out"]
    assert left > 0 and r["questions"] == 20 - left and "left out (the judge scored them NaN" in render_advice(r)
    assert all(
        math.isfinite(s)
        for line in records.read_text().splitlines()[1:]
        for s in json.loads(line)["extra"]["doc_scores"]
    )
    fixed = KnownAUC(0.9)
    again = advise(CORPUS, fixed, questions=QUESTIONS, qrels=QRELS, max_calls=160, records=records, **quiet())
    assert again["questions"] == 20 and again["left_out"] == 0 and fixed.pairs == left * 8  # only those asked again


def test_labels_naming_ids_missing_from_the_corpus_are_refused():
    """Before: '0 questions' and four advice lines, exit 0."""
    elsewhere = {q: {f"x{d[1:]}": 1 for d in g} for q, g in QRELS.items()}
    with pytest.raises(
        InvalidInputError, match=r"got 0 with a text .*30 relevant ids are not in the corpus \(e.g. 'x0'\)"
    ):
        advise(CORPUS, KnownAUC(0.9), questions=QUESTIONS, qrels=elsewhere, **quiet())
    unknown = {f"z{i}": {f"d{i}": 1} for i in range(30)}
    with pytest.raises(InvalidInputError, match=r"30 of them are not among the questions \(e.g. 'z0'\)"):
        advise(CORPUS, KnownAUC(0.9), questions=QUESTIONS, qrels=unknown, **quiet())


def test_the_records_follow_the_labels(tmp_path):
    """Before: every label moved to another document, and the rerun reused the old records silently."""
    moved = {q: {f"d{(int(q[1:]) + 1) % 80}": 1} for q in QRELS}
    path = tmp_path / "r.jsonl"
    advise(CORPUS, KnownAUC(0.9), questions=QUESTIONS, qrels=QRELS, max_calls=80, records=path, **quiet())
    with pytest.raises(InvalidInputError, match="other settings .*labels"):
        advise(CORPUS, KnownAUC(0.9), questions=QUESTIONS, qrels=moved, max_calls=80, records=path, **quiet())
    said: list[str] = []
    first = advise(
        CORPUS,
        KnownAUC(0.9),
        questions=QUESTIONS,
        qrels=QRELS,
        max_calls=80,
        records_dir=tmp_path,
        **quiet(say=said.append),
    )
    judge = KnownAUC(0.9)
    second = advise(CORPUS, judge, questions=QUESTIONS, qrels=moved, max_calls=80, records_dir=tmp_path, **quiet())
    assert judge.pairs == 80 and first["records"] != second["records"]  # other labels: judged anew, own file
    assert any(line.startswith(f"records: {first['records']}") for line in said)
    again = KnownAUC(0.9)
    third = advise(CORPUS, again, questions=QUESTIONS, qrels=moved, max_calls=80, records_dir=tmp_path, **quiet())
    assert again.pairs == 0 and third["auc"] == second["auc"]  # same labels: resumed without a flag


@pytest.mark.parametrize(("auc", "chance"), [(0.5, True), (0.97, False)])
def test_a_judge_at_chance_is_called_one_before_anything_else(auc, chance):
    r = advise(CORPUS, KnownAUC(auc), questions=QUESTIONS, qrels=QRELS, max_calls=160, **quiet())
    first = render_advice(r).splitlines()[0]
    assert first.startswith("no better than chance") is chance
    assert ("documents" in r["no_better_than_chance"]) is chance


class Interrupted(KnownAUC):
    """Ctrl-C after ``calls`` judge calls (the interruption is the point)."""

    def __init__(self, auc: float, calls: int) -> None:
        super().__init__(auc)
        self.calls = calls

    def score_relevance(self, query, candidates, *, trace=None):
        self.calls -= 1
        if self.calls < 0:
            raise KeyboardInterrupt
        return super().score_relevance(query, candidates, trace=trace)


def test_an_interrupted_cli_run_resumes_without_a_flag(tmp_path, monkeypatch, capsys):
    """Issue #64 item 4. Before: the records were kept only with --records, which the documented commands omit."""
    from _mini_scifact import write_mini_scifact

    import retrievekit.core.llm.judge_hooks as hooks
    from retrievekit.core import cli

    docs = [(w, text.text) for w, text in zip(WORDS[:30], CORPUS[:30], strict=True)]
    data = write_mini_scifact(tmp_path, docs, [f"What is {w}?" for w in WORDS[:30]])
    monkeypatch.chdir(tmp_path)
    args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", "openai:m@http://127.0.0.1:9/v1"]
    args += ["--qrels", "--max-calls", "160", "--no-progress"]
    monkeypatch.setattr(hooks, "judge_from_options", lambda ctx: (Interrupted(0.9, 21), None))
    assert cli.main(args) == 130  # stopped in the 11th question
    kept = list((tmp_path / "advise-records").glob("advise-*.jsonl"))
    assert len(kept) == 1 and len(kept[0].read_text().splitlines()) == 1 + 10
    judge = KnownAUC(0.9)
    monkeypatch.setattr(hooks, "judge_from_options", lambda ctx: (judge, None))
    assert cli.main(args) == 0 and judge.pairs == 10 * 8  # only the 10 questions not recorded
    assert "no better than chance" not in capsys.readouterr().out


def test_the_first_stage_gives_the_negatives_and_names_the_records(tmp_path):
    """Issue #64 item 1: the hard negatives come from the first stage asked for (a hybrid retriever here)."""
    from retrievekit.core.index.bm25 import BM25Index
    from retrievekit.core.index.hybrid import HybridRetriever

    class Counting:
        """BM25, counting its searches."""

        searches = 0

        def __init__(self) -> None:
            self.bm25 = BM25Index.build(CORPUS)

        def search(self, query, k=10, *, trace=None):
            Counting.searches += 1
            return self.bm25.search(query, k, trace=trace)

    counting = Counting()
    hybrid = HybridRetriever([counting, BM25Index.build(CORPUS)], fusion="rrf")
    r = advise(
        CORPUS,
        KnownAUC(0.9),
        questions=QUESTIONS,
        qrels=QRELS,
        max_calls=160,
        first_stage=hybrid,
        records_dir=tmp_path,
        **quiet(),
    )
    assert Counting.searches > 0 and r["questions"] == 20
    assert json.loads(open(r["records"]).readline())["settings"]["first_stage"] == "HybridRetriever"
    with pytest.raises(InvalidInputError, match="first_stage must be 'bm25' or 'hybrid'"):
        advise(CORPUS, KnownAUC(0.9), questions=QUESTIONS, qrels=QRELS, first_stage="dense", **quiet())


def test_questions_without_a_hard_negative_are_counted_and_said():
    """Before: a labelled question whose gold document shares no word with any other was dropped silently (the
    report said 20 questions, not why fewer were judged)."""
    from retrievekit.core.types import Passage

    alone = [Passage(id=f"alone{i}", text=f"xq{i}zv uniquely{i}worded") for i in range(3)]
    questions = QUESTIONS | {f"a{i}": f"xq{i}zv?" for i in range(3)}
    qrels = {q: g for q, g in QRELS.items()} | {f"a{i}": {f"alone{i}": 1} for i in range(3)}
    r = advise([*CORPUS, *alone], KnownAUC(0.9), questions=questions, qrels=qrels, max_calls=264, **quiet())
    assert r["no_negatives"] == 3 and r["questions"] == 30
    assert "3 questions left out (the first stage found no hard negative" in render_advice(r)
