"""ARM's MIP solve time against the candidate pool size (pulp + HiGHS), printed as a table.

Not a timed test: it prints numbers and asserts nothing. Two compatibility regimes per pool size: ``dense``
(every pair has C_ij > 1e-6, the worst case: n(n-1) pair variables) and ``sparse`` (10% of pairs compatible,
closer to real table/passage pools). Each cell is the median of ``--repeats`` seeded instances.

    python benchmarks/mip_scaling.py                      # sizes 10 25 50 100, k = 10
    python benchmarks/mip_scaling.py --sizes 10 25 --k 5 --time-limit 10
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from retrievekit.core.arm.mip import solve_mip


def instance(n: int, density: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded relevance in [0, 1] and symmetric compatibility with the given share of non-zero pairs."""
    rng = np.random.default_rng(seed)
    R = rng.uniform(size=n)
    C = rng.uniform(size=(n, n))
    C = (C + C.T) / 2
    mask = rng.uniform(size=(n, n)) < density
    C = np.where(mask | mask.T, C, 0.0)
    np.fill_diagonal(C, 0.0)
    return R, C


def main() -> None:
    """Run the sweep (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 100])
    ap.add_argument("--k", type=int, default=10, help="ilp_k (default 10, the reference's)")
    ap.add_argument("--time-limit", type=float, default=60.0)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print(f"{'pool':>5} {'C':>7} {'pair vars':>10} {'median s':>9} {'max s':>7}  status")
    for n in args.sizes:
        for label, density in (("dense", 1.0), ("sparse", 0.1)):
            secs, statuses, pairs = [], [], 0
            for seed in range(args.repeats):
                R, C = instance(n, density, seed)
                res = solve_mip(R, C, args.k, time_limit=args.time_limit)
                secs.append(res.seconds)
                statuses.append(res.status)
                pairs = res.n_pair_vars
            status = ",".join(sorted(set(statuses)))
            print(
                f"{n:>5} {label:>7} {pairs:>10} {statistics.median(secs):>9.3f} {max(secs):>7.3f}  {status}", flush=True
            )


if __name__ == "__main__":
    main()
