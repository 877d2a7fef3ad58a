"""LATTICE's bottom-up grouping before and after, side by side in one run, one thread: seconds, peak memory, groups.

``before`` is ``balanced_groups`` as landed at ``--old-commit`` (one k-means with ``k = n / M`` over all points);
``after`` is this checkout's (top-down splits with ``k <= M``). Every (version, size) runs in its own child process
with one BLAS / OpenMP thread, on seeded clustered unit vectors of 384 dimensions (``n / 100`` centres, noise 0.08
per dimension). The child reports the grouping's CPU and wall seconds (CPU time is what a shared machine cannot
inflate much; the exponent is fitted on it), its peak RSS beyond the interpreter and the vectors, the
number of groups and their mean within-group cosine. A size ``before`` cannot finish within ``--old-timeout``
seconds is reported as such, never extrapolated. The fitted exponent is the least-squares slope of log CPU seconds
on log n over the sizes that finished.

With ``--data-dir``, both versions also group the whole SciFact corpus (5,183 abstracts, all-MiniLM-L6-v2 vectors
of the text the tree build embeds, cached in ``--work-dir``), as the build's first level does (seed 1).
``--branching B`` sets the new version's most centres per split (``SPLIT_BRANCHING``), to compare choices of B:

    python benchmarks/lattice_grouping.py --sizes --old-sizes --data-dir "$RETRIEVEKIT_DATA_DIR" --branching 10

    python benchmarks/lattice_grouping.py --sizes 8000 32000 100000 1000000 --old-sizes 8000 32000 \\
        --data-dir "$RETRIEVEKIT_DATA_DIR" --work-dir runs/cache --out runs/lattice-grouping.json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _package_at import export_package  # noqa: E402

OLD_COMMIT = "11719cd"
DIM = 384
M = 10
_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def clustered_vectors(n: int, seed: int = 0, dim: int = DIM) -> np.ndarray:
    """``n`` seeded unit vectors (float32) around ``max(10, n // 100)`` random unit centres, built in blocks."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(10, n // 100), dim), dtype=np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    x = np.empty((n, dim), dtype=np.float32)
    for start in range(0, n, 65_536):
        rows = min(65_536, n - start)
        block = centres[rng.integers(len(centres), size=rows)]
        block += 0.08 * rng.standard_normal((rows, dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        x[start : start + rows] = block
    return x


def within_group_cosine(x: np.ndarray, groups: list[list[int]]) -> float:
    """Mean pairwise cosine of each group's members (unit rows), over the groups of two or more, weighted by size."""
    total, weight = 0.0, 0
    for g in groups:
        if len(g) < 2:
            continue
        s = x[g].astype(np.float64).sum(0)
        pairs = (float(s @ s) - len(g)) / (len(g) * (len(g) - 1))
        total += pairs * len(g)
        weight += len(g)
    return total / max(weight, 1)


def _rss_kb() -> int:
    """The current resident set, in KiB (Linux ``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def child(source: str, seed: int, branching: int | None = None) -> dict[str, Any]:
    """Group one set of vectors with the importable ``balanced_groups``; ``source`` is a size or a ``.npy`` path;
    ``branching`` overrides the version's ``SPLIT_BRANCHING`` where it has one."""
    from retrievekit.core.lattice import clustering
    from retrievekit.core.lattice.clustering import balanced_groups

    if branching is not None and hasattr(clustering, "SPLIT_BRANCHING"):
        clustering.SPLIT_BRANCHING = branching

    before_kb = _rss_kb()
    x = np.load(source) if source.endswith(".npy") else clustered_vectors(int(source))
    started, cpu_started = time.perf_counter(), time.process_time()
    groups = balanced_groups(x, M, seed=seed)
    seconds, cpu_seconds = time.perf_counter() - started, time.process_time() - cpu_started
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sizes = [len(g) for g in groups]
    return {
        "n": int(x.shape[0]),
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu_seconds, 3),
        "peak_rss_mb": round(peak_kb / 1024, 1),
        "beyond_vectors_mb": round((peak_kb - before_kb) / 1024 - x.nbytes / 2**20, 1),
        "groups": len(groups),
        "largest": max(sizes),
        "singletons": sizes.count(1),
        "within_cosine": round(within_group_cosine(x, groups), 4),
    }


def _run_child(
    pythonpath: str, source: str, seed: int, timeout: float, branching: int | None = None
) -> dict[str, Any] | None:
    """One child run (one thread); None when it ran past ``timeout`` seconds."""
    env = {**os.environ, "PYTHONPATH": pythonpath, **dict.fromkeys(_THREADS, "1")}
    cmd = [sys.executable, __file__, "--child", source, "--seed", str(seed)]
    cmd += ["--branching", str(branching)] if branching is not None else []
    try:
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def scifact_vectors(data_dir: str, work_dir: Path) -> Path:
    """MiniLM vectors of every SciFact abstract as the tree build embeds them (cached as ``.npy``)."""
    from retrievekit.core.eval.datasets import load_dataset
    from retrievekit.core.index.embeddings import MiniLMEmbedder
    from retrievekit.core.lattice.build import LEAF_EMBED_CHARS, embed_texts

    path = work_dir / "scifact-minilm-leaves.npy"
    if not path.is_file():
        corpus = load_dataset("scifact", data_dir).corpus
        x = embed_texts(MiniLMEmbedder.default(), [o.index_text()[:LEAF_EMBED_CHARS] for o in corpus])
        work_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npy")
        np.save(tmp, x)
        os.replace(tmp, path)  # whole or absent: a reader never sees half a file
    return path


def fitted_exponent(rows: list[dict[str, Any]]) -> float | None:
    """Least-squares slope of log CPU seconds on log n (None with fewer than two sizes)."""
    done = [r for r in rows if r is not None]
    if len(done) < 2:
        return None
    return float(np.polyfit([math.log(r["n"]) for r in done], [math.log(r["cpu_seconds"]) for r in done], 1)[0])


def _line(label: str, r: dict[str, Any] | None, n: int) -> str:
    if r is None:
        return f"| {n:,} | {label} | did not finish | | | | | |"
    return (
        f"| {n:,} | {label} | {r['cpu_seconds']:.1f} | {r['seconds']:.1f} | {r['peak_rss_mb']:,.0f} "
        f"| {r['beyond_vectors_mb']:,.0f} "
        f"| {r['groups']:,} | {r['within_cosine']:.4f} |"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the comparison (see the module docstring); print a markdown table and write ``--out``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[8000, 32000, 100000, 1000000])
    p.add_argument("--old-sizes", type=int, nargs="*", default=[8000, 32000])
    p.add_argument("--old-commit", default=OLD_COMMIT)
    p.add_argument("--old-timeout", type=float, default=1800.0)
    p.add_argument("--data-dir", default=None, help="folder holding scifact/ (whole-SciFact quality check)")
    p.add_argument("--work-dir", default="runs/cache")
    p.add_argument("--out", default=None)
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--branching", type=int, default=None, help="B of the new version's splits (default: its own)")
    args = p.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.child, args.seed, args.branching)))
        return 0
    new_path = os.pathsep.join(str(Path(__file__).resolve().parents[1] / d) for d in ("core", "integrations"))
    with tempfile.TemporaryDirectory() as tmp:
        old_path = export_package(args.old_commit, Path(tmp))
        result: dict[str, Any] = {"old_commit": args.old_commit, "m": M, "dim": DIM, "synthetic": [], "scifact": {}}
        print("| n | version | CPU s | wall s | peak RSS MB | beyond vectors MB | groups | within-group cosine |")
        print("|---|---|---|---|---|---|---|---|")
        for n in sorted(set(args.sizes) | set(args.old_sizes)):
            for label, path, run in (("before", old_path, n in args.old_sizes), ("after", new_path, n in args.sizes)):
                if run:
                    timeout = args.old_timeout if label == "before" else 3600.0
                    r = _run_child(path, str(n), args.seed, timeout, args.branching)
                    result["synthetic"].append({"version": label, "n": n, **(r or {"finished": False})})
                    print(_line(label, r, n), flush=True)
        for label in ("before", "after"):
            rows = [r for r in result["synthetic"] if r["version"] == label and "cpu_seconds" in r]
            result[f"exponent_{label}"] = fitted_exponent(rows)
            print(f"fitted exponent ({label}): {result[f'exponent_{label}']}")
        if args.data_dir:
            vectors = str(scifact_vectors(args.data_dir, Path(args.work_dir)))
            for label, path in (("before", old_path), ("after", new_path)):
                r = _run_child(path, vectors, args.seed, args.old_timeout, args.branching)
                result["scifact"][label] = r
                print(_line(f"{label} (SciFact)", r, r["n"] if r else 5183), flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
