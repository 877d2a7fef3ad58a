"""The ROC AUC and pairwise accuracy of a judge from the per-query records of a run that judged (``judged`` field).

Every record of a judged run keeps the scores its judge gave and the gold labels of those pairs, so a judge's
accuracy on documents is read back from the records without running a model again, e.g. from the GPU run's
``state.tar`` (``records/judge-eval-trained.jsonl``):

    tar -xf runs/gpu/last/state.tar -C runs/gpu/last-state
    python benchmarks/judged_records_auc.py runs/gpu/last-state/records/judge-eval-*.jsonl
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from retrievekit.core.eval.judge_accuracy import pairwise_accuracy, roc_auc


def accuracy(path: Path) -> dict[str, float | int | None]:
    """Queries, pairs, relevant pairs, ROC AUC and pairwise accuracy of the judged pairs in one records file."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    judged = [r["judged"] for r in rows if "qid" in r and r.get("judged")]
    scores = [s for j in judged for s in j["scores"]]
    labels = [label for j in judged for label in j["labels"]]
    pairwise, n_pairs = pairwise_accuracy((j["scores"], j["labels"]) for j in judged)
    return {"queries": len(judged), "pairs": len(scores), "relevant": sum(labels), "auc": roc_auc(scores, labels),
            "pairwise_accuracy": pairwise, "ordered_pairs": n_pairs}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    """Print one line per records file."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("records", nargs="+", type=Path)
    for path in ap.parse_args(argv).records:
        a = accuracy(path)
        auc, pw = a["auc"], a["pairwise_accuracy"]
        print(f"{path.name}: {a['queries']} queries, {a['pairs']} pairs ({a['relevant']} relevant), "
              f"ROC AUC {'-' if auc is None else f'{auc:.3f}'}, pairwise {'-' if pw is None else f'{pw:.3f}'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
