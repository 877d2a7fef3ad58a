"""Build LATTICE's whole-SciFact tree with LLM-free summaries (``summaries="extractive"``) and print its cost.

The tree is bottom-up with the build defaults (M = 10, seed 0) over all 5,183 abstracts, all-MiniLM-L6-v2 vectors.
The leaves' vectors are the same for either summary option, so they are read from (or written to) the cache that
``benchmarks/lattice_grouping.py`` keeps in ``--work-dir``; the printed seconds are the rest of the build: grouping,
summaries and the summaries' vectors. The tree is saved in ``--tree-dir`` for the judged runs:

    python benchmarks/lattice_extractive.py --data-dir "$RETRIEVEKIT_DATA_DIR" --work-dir runs/cache \\
        --tree-dir runs/trees/scifact-bottom_up-extractive
    python benchmarks/judge_curves.py --dataset scifact --data-dir "$RETRIEVEKIT_DATA_DIR" --method lattice \\
        --label "LATTICE (extractive summaries)" --option tree_dir=runs/trees/scifact-bottom_up-extractive \\
        --noise 0 --judges cosine --no-flat --out-dir runs/curves/lattice-extractive
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lattice_grouping import scifact_vectors  # noqa: E402

from retrievekit.core.eval.datasets import load_dataset  # noqa: E402
from retrievekit.core.index.embeddings import MiniLMEmbedder  # noqa: E402
from retrievekit.core.lattice.bottom_up import build_bottom_up  # noqa: E402
from retrievekit.core.lattice.build import LEAF_EMBED_CHARS  # noqa: E402
from retrievekit.core.lattice.config import TreeBuildConfig  # noqa: E402
from retrievekit.core.lattice.tree import ROOT  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    """Build, save and describe the tree (see the module docstring)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-dir", required=True)
    p.add_argument("--work-dir", default="runs/cache")
    p.add_argument("--tree-dir", required=True)
    p.add_argument("--max-children", type=int, default=10)
    args = p.parse_args(argv)
    corpus = load_dataset("scifact", args.data_dir).corpus
    leaves = np.load(scifact_vectors(args.data_dir, Path(args.work_dir)))
    embedder = MiniLMEmbedder.default()
    texts = [o.index_text()[:LEAF_EMBED_CHARS] for o in corpus]
    embedder.remember([embedder.digest(t) for t in texts], leaves)  # the leaves are not encoded again
    config = TreeBuildConfig(max_children=args.max_children, summaries="extractive")
    tree = build_bottom_up(corpus, None, embedder, config)
    tree.save(args.tree_dir)
    inner = [n for n in tree.nodes.values() if not n.is_leaf and n.id != ROOT]
    row = {
        "documents": tree.num_leaves,
        "nodes": len(tree.nodes),
        "height": tree.height,
        "summaries": tree.meta["summaries"],
        "llm_calls": tree.meta["llm_calls"],
        "seconds": tree.meta["seconds"],
        "seconds_per_1000_documents": round(1000 * tree.meta["seconds"] / tree.num_leaves, 2),
        "mean_summary_chars": round(float(np.mean([len(n.text) for n in inner])), 1),
    }
    print(json.dumps(row, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
