"""A three-claim SciFact folder (BEIR layout: corpus, queries, dev qrels) for CLI and loader tests."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path


def write_mini_scifact(root: Path, docs: Sequence[tuple[str, str]], claims: Sequence[str]) -> Path:
    """``root/data/scifact`` with documents ``100, 101, ...`` (title, text) and dev claims ``1, 2, ...``, claim ``i``
    relevant to document ``99 + i``; returns ``root/data`` (the ``--data-dir``)."""
    d = root / "data" / "scifact"
    (d / "qrels").mkdir(parents=True)
    with gzip.open(d / "corpus.jsonl.gz", "wt", encoding="utf-8") as f:
        for i, (title, text) in enumerate(docs):
            f.write(json.dumps({"_id": str(100 + i), "title": title, "text": text, "metadata": {}}) + "\n")
    with open(d / "queries.jsonl", "w", encoding="utf-8") as f:
        for i, text in enumerate(claims, 1):
            f.write(json.dumps({"_id": str(i), "text": text, "metadata": {"scifact_split": "dev"}}) + "\n")
    qrels = "".join(f"{i}\t{99 + i}\t1\n" for i in range(1, len(claims) + 1))
    (d / "qrels" / "dev.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels)
    return root / "data"


FEVER_DOCS = [("Aspirin", "aspirin reduces fever"), ("Statins", "statins lower cholesterol and fever")]
FEVER_DOCS += [("Sun", "vitamin d from sunlight and fever")]
FEVER_CLAIMS = ["fever aspirin", "fever cholesterol", "fever sunlight"]  # claim i is relevant to FEVER_DOCS[i - 1]
