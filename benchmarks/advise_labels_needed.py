"""How many labelled questions give advise's AUC a 95 % interval of +-0.1? (issue #64, "how many labels".)

Reads the labelled runs of ``benchmarks/advise_validation.py`` (their records: per question, the judge's scores on the
positive and its BM25 hard negatives) and, for ``n`` questions drawn from each run (10 draws per ``n``), computes
advise's 95 % bootstrap interval over questions (1000 resamples, as ``advise`` does). The half-width times
``sqrt(n)`` is about constant; its largest value over the runs is ``HALF_WIDTH_AT_ONE`` in
``retrievekit.core.eval.labels``, and ``(that / 0.1)^2`` the labels for +-0.1. Nothing is sent to any model: the
records hold the scores.

    python benchmarks/advise_labels_needed.py --records benchmarks/records/advise_validation
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from retrievekit.core.eval.judge_accuracy import roc_auc


def _half_width(rows: list[dict], kind: str, rng: np.random.Generator) -> float:
    def pooled(chosen: list[dict]) -> float | None:
        return roc_auc(
            [s for r in chosen for s in r[f"{kind}_scores"]], [y for r in chosen for y in r[f"{kind}_labels"]]
        )

    boots = sorted(
        b
        for b in (pooled([rows[i] for i in rng.integers(0, len(rows), len(rows))]) for _ in range(1000))
        if b is not None
    )
    return (boots[int(0.975 * len(boots)) - 1] - boots[int(0.025 * len(boots))]) / 2


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", default="benchmarks/records/advise_validation")
    p.add_argument("--sizes", type=int, nargs="+", default=[10, 15, 20, 25])
    args = p.parse_args()
    rng = np.random.default_rng(0)
    worst = {"doc": 0.0, "summary": 0.0}
    print("| run | kind | " + " | ".join(f"half-width at {n} (x sqrt n)" for n in args.sizes) + " |")
    print("|---|---|" + "---|" * len(args.sizes))
    for path in sorted(Path(args.records).glob("*-labelled.jsonl")):
        rows = [json.loads(line)["extra"] for line in path.read_text().splitlines()[1:] if line.strip()]
        for kind in ("doc", "summary"):
            cells = []
            for n in args.sizes:
                if n > len(rows):
                    cells.append("n/a")
                    continue
                hws = [
                    _half_width([rows[i] for i in rng.choice(len(rows), n, replace=False)], kind, rng)
                    for _ in range(10)
                ]
                c = float(np.mean(hws)) * math.sqrt(n)
                worst[kind] = max(worst[kind], c)
                cells.append(f"{np.mean(hws):.3f} ({c:.2f})")
            print(f"| {path.stem.removesuffix('-labelled')} | {kind} | " + " | ".join(cells) + " |")
    for kind, c in worst.items():
        print(
            f"{kind}: largest half-width x sqrt(n) = {c:.2f}; +-0.1 needs {math.ceil((c / 0.1) ** 2)} labelled questions"
        )


if __name__ == "__main__":
    main()
