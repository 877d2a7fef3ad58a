"""Issue #64 items 1 and 2: ``retrievekit label`` in a real headless Chromium: 20 questions labelled by keyboard, a
reload mid-way, the qrels file checked; then ``advise --questions`` on those labels gives the same report as on the
equivalent hand-written qrels."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
from _browser import chrome
from _mini_scifact import write_mini_scifact

from retrievekit.core import cli
from retrievekit.core.eval.labels import question_id, read_qrels

pytestmark = [pytest.mark.enable_socket, pytest.mark.allow_hosts(["127.0.0.1", "::1"])]

TOPICS = ["aspirin", "statins", "insulin", "vitamin", "malaria", "asthma", "measles", "anemia", "gout", "rickets"]
TOPICS += ["scurvy", "leprosy", "rabies", "cholera", "typhoid", "mumps", "tetanus", "polio", "smallpox", "zika"]
TOPICS += ["dengue", "ebola"]
DOCS = [(t.title(), f"{t.title()} is studied in clinical trials. Doctors treat {t} with care.") for t in TOPICS]
GOLD = {f"what treats {t}": str(100 + i) for i, t in enumerate(TOPICS)}  # write_mini_scifact's ids
SKIPPED_AT = 4  # this question's last passage is skipped


def _start_label(tmp_path, data, questions, labels):
    args = [sys.executable, "-m", "retrievekit.core.cli", "label", "--dataset", "scifact", "--data-dir", str(data)]
    args += ["--questions", str(questions), "--labels", str(labels), "--candidates", "3", "--half-width", "0.2"]
    proc = subprocess.Popen([*args, "--port", "0"], stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        found = re.search(r"open (http://127\.0\.0\.1:\d+/)", line)
        if found:
            return proc, found.group(1)
        if not line and proc.poll() is not None:
            break
    proc.kill()
    pytest.fail(f"retrievekit label did not start: {proc.stderr.read()}")


def _wait(driver, test, what, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if test():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}; page: {driver.find_element('tag name', 'body').text[:500]}")


def _idle_at(driver, index):
    body = lambda: driver.find_element("tag name", "body")  # noqa: E731
    _wait(
        driver,
        lambda: (
            body().get_attribute("data-ready") == "1"
            and body().get_attribute("data-index") == str(index)
            and not body().get_attribute("data-busy")
        ),
        f"question {index}",
    )


def _keys_for(driver, index):
    passages = driver.find_elements("css selector", ".passage")
    question = driver.find_element("id", "question").text
    keys = ["y" if p.get_attribute("data-id") == GOLD[question] else "n" for p in passages]
    if index == SKIPPED_AT:
        keys[-1] = "s"
    return keys


def _label_questions(driver, start, stop):
    for index in range(start, stop):
        _idle_at(driver, index)
        if index == stop - 1:  # the last question: not enough yet
            assert not driver.find_element("id", "enough").is_displayed()
        driver.find_element("tag name", "body").send_keys("".join(_keys_for(driver, index)))


def test_twenty_questions_labelled_by_keyboard_with_a_reload(tmp_path, monkeypatch):
    data = write_mini_scifact(tmp_path, DOCS, list(GOLD))
    questions = tmp_path / "my-questions.txt"
    questions.write_text("".join(f"{q}\n" for q in list(GOLD)[:21]))
    labels = tmp_path / "my-labels.tsv"
    proc, url = _start_label(tmp_path, data, questions, labels)
    try:
        with chrome(tmp_path) as driver:
            driver.get(url)
            _label_questions(driver, 0, 10)
            _idle_at(driver, 10)
            driver.find_element("tag name", "body").send_keys(_keys_for(driver, 10)[0])  # one passage of the 11th
            _wait(driver, lambda: len(read_qrels(labels).get(question_id(list(GOLD)[10]), {})) == 1, "the label")
            driver.refresh()  # resumes at the 11th question, its first passage labelled, the second selected
            _idle_at(driver, 10)
            shown = driver.find_elements("css selector", ".passage")
            assert [p.get_attribute("data-label") for p in shown][0] in ("relevant", "not")
            assert "selected" in shown[1].get_attribute("class")
            driver.find_element("tag name", "body").send_keys("".join(_keys_for(driver, 10)[1:]))
            _label_questions(driver, 11, 20)
            _idle_at(driver, 20)
            enough = driver.find_element("id", "enough")
            assert enough.is_displayed() and "Enough labelled" in enough.text
            assert "20 with a relevant passage (20 needed" in driver.find_element("id", "progress").text
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130  # Ctrl-C: "interrupted", the labels already saved
    got = read_qrels(labels)
    qs = list(GOLD)[:20]
    assert sorted(got) == sorted(question_id(q) for q in qs)
    for i, q in enumerate(qs):
        graded = got[question_id(q)]
        assert graded[GOLD[q]] == 1 and sum(graded.values()) == 1
        assert len(graded) == (2 if i == SKIPPED_AT else 3)
    skipped = (tmp_path / "my-labels.tsv.skipped").read_text().split()
    assert skipped[0] == question_id(qs[SKIPPED_AT]) and len(skipped) == 2
    _same_report_as_the_equivalent_qrels(tmp_path, data, questions, labels, monkeypatch)


class TopicJudge:
    """Scores a text by the share of the question's words in it (deterministic: the scripted scores are the point)."""

    def __repr__(self) -> str:
        return "TopicJudge()"

    def score_relevance(self, query, candidates, *, trace=None):
        words = set(query.lower().split())
        return [len(words & set(c.lower().replace(".", " ").split())) / len(words) for c in candidates]


def _same_report_as_the_equivalent_qrels(tmp_path, data, questions, labels, monkeypatch):
    """``advise --questions`` on the page's labels = on the same labels written by hand (another header, order)."""
    import retrievekit.core.llm.judge_hooks as hooks

    monkeypatch.setattr(hooks, "judge_from_options", lambda ctx: (TopicJudge(), None))
    by_hand = tmp_path / "by-hand.tsv"
    rows = [f"{q}\t{d}\t{g}" for q, graded in read_qrels(labels).items() for d, g in graded.items()]
    by_hand.write_text("qid\tdocid\trelevance\n" + "\n".join(reversed(rows)) + "\n")
    reports = []
    for name, qrels in (("page", labels), ("hand", by_hand)):
        out = tmp_path / name / "advice.json"
        out.parent.mkdir()
        args = ["advise", "--dataset", "scifact", "--data-dir", str(data), "--llm", "openai:m@http://127.0.0.1:9/v1"]
        args += ["--questions", str(questions), "--qrels", str(qrels), "--out", str(out), "--no-progress"]
        assert cli.main([*args, "--max-calls", "160"]) == 0
        report = json.loads(out.read_text())
        assert report["mode"] == "labelled" and report["questions"] == 20
        assert os.path.dirname(report.pop("records")) == str(out.parent)  # kept beside the output by default
        report.pop("cost_per_pair")  # measured seconds
        for m in report["methods"]:
            m.pop("seconds_per_query")
        reports.append(report)
    assert reports[0] == reports[1]
