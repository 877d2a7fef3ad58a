"""A third-party dataset as an installed package would declare it: ``TOY``, a :class:`DatasetSpec` over
``toy/docs.jsonl`` and ``toy/<split>.jsonl`` (questions with their gold ids), and ``write_toy(root)``."""

from __future__ import annotations

import json
from pathlib import Path

from retrievekit.core.errors import DatasetNotFoundError
from retrievekit.core.eval.datasets import Dataset, DatasetSpec, Query
from retrievekit.core.types import Passage

DOCS = {"d1": "aspirin reduces fever", "d2": "statins lower cholesterol", "d3": "sunlight makes vitamin d"}
QUESTIONS = [("q1", "what reduces fever", "d1"), ("q2", "what lowers cholesterol", "d2")]


def write_toy(root: Path, questions: list[tuple[str, str, str]] = QUESTIONS) -> Path:
    """``root/toy/docs.jsonl`` and ``root/toy/dev.jsonl``; returns ``root`` (the data folder)."""
    (root / "toy").mkdir(parents=True, exist_ok=True)
    (root / "toy" / "docs.jsonl").write_text("".join(json.dumps({"id": k, "text": v}) + "\n" for k, v in DOCS.items()))
    lines = [json.dumps({"id": q, "text": t, "gold": g}) + "\n" for q, t, g in questions]
    (root / "toy" / "dev.jsonl").write_text("".join(lines))
    return root


def _load_toy(root: Path, split: str, limit: int | None) -> Dataset:
    docs, questions = root / "toy" / "docs.jsonl", root / "toy" / f"{split}.jsonl"
    for path in (docs, questions):
        if not path.is_file():
            raise DatasetNotFoundError(f"toy: missing file {path} (toy expects {TOY.layout})", path=path)
    corpus = [Passage(id=r["id"], text=r["text"]) for r in map(json.loads, docs.read_text().splitlines())]
    rows = [json.loads(line) for line in questions.read_text().splitlines()][:limit]
    queries = [Query(id=r["id"], text=r["text"]) for r in rows]
    return Dataset("toy", split, corpus, queries, {r["id"]: {r["gold"]: 1} for r in rows}, {"files": ["toy"]})


TOY = DatasetSpec(
    name="toy",
    load=_load_toy,
    layout="toy/docs.jsonl and toy/<split>.jsonl",
    splits=lambda root: sorted(p.stem for p in (root / "toy").glob("*.jsonl") if p.stem != "docs"),
)
