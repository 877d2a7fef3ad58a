"""Structure alignment as a mixed-integer program (pulp modelling, HiGHS solver through ``highspy``).

Given relevance ``R_i`` and compatibility ``C_ij`` of ``n`` candidates, choose binary ``o_i`` (object kept) and
``e_ij`` (unordered pair ``i < j`` kept as a connection) to::

    maximise   w_R * sum_i R_i o_i  +  w_C * sum_{i < j} (C_ij + C_ji) e_ij
    subject to sum_i o_i <= k,   sum_{i < j} e_ij <= k - 1,   2 e_ij <= o_i + o_j

with ``w_R = 3`` and ``w_C = 0.5`` (ARM paper §3.3; reference code ``align_structure_filter.py``).

**The connection budget.** The reference code has one variable per *ordered* pair and caps their sum at
``2 (k - 1)``: "a tree's worth of edges, each counted in both directions". Here each unordered pair is one
variable worth ``C_ij + C_ji`` and the cap is ``k - 1`` connections. For a symmetric ``C`` (ARM's compatibility is
symmetric) both models have the same optimum, because the ``2 (k - 1)`` best ordered pairs are the ``k - 1`` best
unordered pairs taken in both directions; the unordered model has half the variables and no optimum in which a
pair is "half" connected. Connected-ness of the selection is not required, as in the reference.

**Canonical result.** Several edge sets can tie (three fully compatible objects, ``k = 3``: any two of the three
pairs). The reported ``edges`` and ``objective`` therefore do not come from the solver's choice among ties: for
the selected objects, the ``k - 1`` heaviest pairs are taken (ties by index), which is optimal for that selection,
and the objective is computed from them. The solver runs with a zero relative gap, so "optimal" means optimal.
``e_ij`` exists only where ``C_ij`` or ``C_ji`` exceeds ``1e-6`` to keep the model small.
The model is built with ``LpProblem.add_variable`` and solved with ``pulp.HiGHS(msg=False, timeLimit=...)``, which
runs warning-free on pulp 3.3 and 4.x; HiGHS's one-time start-up banner is kept off standard output.

Outcomes (``MipResult.status``): ``"optimal"``; ``"time_limit"`` (the solver stopped at the limit with an integer
incumbent, which is kept); ``"fallback"`` (solver unavailable, infeasible, error, or no incumbent: the relevance
top-``k`` is returned instead and ``message`` says why). Callers record non-optimal outcomes in the trace.

Examples:
    >>> import numpy as np
    >>> R = [0.9, 0.5, 0.4, 0.4]
    >>> C = np.zeros((4, 4)); C[0, 3] = C[3, 0] = 1.0
    >>> res = solve_mip(R, C, k=2)
    >>> res.status, res.selected, res.edges
    ('optimal', [0, 3], [(0, 3)])
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["MipResult", "heaviest_pairs", "relevance_top_k", "solve_mip", "solver_available"]


@dataclass(frozen=True)
class MipResult:
    """The selection of one MIP solve.

    Attributes:
        selected: indices of the chosen candidates, sorted by relevance (best first, ties by index).
        edges: unordered pairs ``(i, j)``, ``i < j``, kept as connections: at most ``k - 1``, the heaviest pairs
            among ``selected`` (canonical, see the module docstring).
        status: ``"optimal"``, ``"time_limit"`` (incumbent kept) or ``"fallback"`` (relevance top-k).
        message: why a fallback happened (``""`` otherwise).
        seconds: wall time of building and solving.
        objective: the objective value of ``selected``/``edges``.
        n_pair_vars: ``e_ij`` (pair) variables in the model.
        extra: ``solver_objective``, the objective the solver reported (equal to ``objective`` when optimal).

    Examples:
        >>> MipResult(selected=[0], edges=[], status="optimal").status
        'optimal'
    """

    selected: list[int]
    edges: list[tuple[int, int]]
    status: str
    message: str = ""
    seconds: float = 0.0
    objective: float = 0.0
    n_pair_vars: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


_BANNER_DONE = False
_BANNER_LOCK = threading.Lock()


def _swallow_highs_banner() -> None:
    """Create the process's first ``highspy.Highs`` with file descriptor 1 pointed at /dev/null.

    HiGHS prints its copyright banner from C++ the first time a solver object is made in a process, whatever
    ``output_flag`` says; later objects print nothing.
    """
    global _BANNER_DONE
    with _BANNER_LOCK:
        if _BANNER_DONE:
            return
        _BANNER_DONE = True
        try:
            import highspy
        except ImportError:
            return
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "w") as null:
                os.dup2(null.fileno(), 1)
                highspy.Highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def solver_available() -> bool:
    """Whether pulp and the HiGHS (highspy) solver can be used.

    Examples:
        >>> isinstance(solver_available(), bool)
        True
    """
    try:
        import pulp

        available = bool(pulp.HiGHS(msg=False).available())
    except Exception:
        return False
    if available:
        try:
            _swallow_highs_banner()
        except OSError:  # no usable file descriptor 1 (e.g. a closed stdout): the banner is harmless
            pass
    return available


def _order(selected: Sequence[int], R: np.ndarray) -> list[int]:
    return sorted({int(i) for i in selected}, key=lambda i: (-float(R[i]), i))


def _objective(
    R: np.ndarray, C: np.ndarray, sel: Sequence[int], edges: Sequence[tuple[int, int]], wr: float, wc: float
) -> float:
    return wr * float(sum(R[i] for i in sel)) + wc * float(sum(C[i, j] + C[j, i] for i, j in edges))


def heaviest_pairs(
    selected: Sequence[int],
    weight: np.ndarray,
    budget: int,
    *,
    min_compatibility: float = 1e-6,
    compatibility: np.ndarray | None = None,
) -> list[tuple[int, int]]:
    """The ``budget`` heaviest compatible pairs among ``selected``, as sorted ``(i, j)``, ``i < j``.

    ``weight[i, j]`` ranks the pairs (heaviest first, ties by ``(i, j)``); a pair is compatible when
    ``compatibility`` (default: ``weight``) exceeds ``min_compatibility`` in either direction. For a fixed
    selection this is the MIP's optimal choice of connections, so the result does not depend on how the solver
    breaks ties.

    Examples:
        >>> w = np.array([[0, 2, 2], [2, 0, 2], [2, 2, 0]], dtype=float)
        >>> heaviest_pairs([0, 1, 2], w, 2)
        [(0, 1), (0, 2)]
    """
    comp = weight if compatibility is None else compatibility
    ids = sorted({int(i) for i in selected})
    cands = [(i, j) for a, i in enumerate(ids) for j in ids[a + 1 :] if max(comp[i, j], comp[j, i]) > min_compatibility]
    cands.sort(key=lambda p: (-float(weight[p[0], p[1]]), p))
    return sorted(cands[: max(budget, 0)])


def relevance_top_k(
    R: Sequence[float] | np.ndarray, C: np.ndarray | None, k: int, *, min_compatibility: float = 1e-6
) -> tuple[list[int], list[tuple[int, int]]]:
    """The ``k`` most relevant candidates and the compatible pairs among them (the MIP's fallback).

    Examples:
        >>> relevance_top_k([0.1, 0.9, 0.5], None, 2)
        ([1, 2], [])
    """
    r = np.asarray(R, dtype=float)
    sel = _order(np.argsort(-r, kind="stable")[: max(k, 0)].tolist(), r)
    if C is None:
        return sel, []
    c = np.asarray(C, dtype=float)
    return sel, heaviest_pairs(sel, c + c.T, len(sel) ** 2, min_compatibility=min_compatibility, compatibility=c)


def solve_mip(
    R: Sequence[float] | np.ndarray,
    C: np.ndarray,
    k: int,
    *,
    relevance_weight: float = 3.0,
    compatibility_weight: float = 0.5,
    time_limit: float = 60.0,
    min_compatibility: float = 1e-6,
) -> MipResult:
    """Select at most ``k`` candidates maximising weighted relevance + compatibility (module docstring).

    Raises:
        InvalidInputError: ``C`` is not ``n x n``, ``k < 1``, or a non-finite score.

    Examples:
        >>> solve_mip([], np.zeros((0, 0)), k=3).selected
        []
    """
    t0 = time.perf_counter()
    r = np.asarray(R, dtype=float)
    n = int(r.size)
    c = np.asarray(C, dtype=float)
    if c.shape != (n, n):
        raise InvalidInputError(f"compatibility must be {n}x{n}, got {c.shape}")
    if k < 1:
        raise InvalidInputError(f"k must be >= 1, got {k}")
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(c))):
        raise InvalidInputError("relevance and compatibility must be finite numbers")
    if n == 0:
        return MipResult([], [], "optimal", seconds=time.perf_counter() - t0)

    def fallback(why: str) -> MipResult:
        sel, edges = relevance_top_k(r, c, k, min_compatibility=min_compatibility)
        obj = _objective(r, c, sel, edges, relevance_weight, compatibility_weight)
        return MipResult(sel, edges, "fallback", why, time.perf_counter() - t0, obj)

    if not solver_available():
        return fallback("the HiGHS solver (pulp + highspy) is not available")
    import pulp

    weight = c + c.T
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n) if max(c[i, j], c[j, i]) > min_compatibility]
    try:
        prob = pulp.LpProblem("arm_structure", pulp.LpMaximize)
        o = [prob.add_variable(f"o_{i}", 0, 1, cat="Binary") for i in range(n)]
        ev = {p: prob.add_variable(f"e_{p[0]}_{p[1]}", 0, 1, cat="Binary") for p in pairs}
        prob += pulp.lpSum(relevance_weight * float(r[i]) * o[i] for i in range(n)) + pulp.lpSum(
            compatibility_weight * float(weight[i, j]) * v for (i, j), v in ev.items()
        )
        prob += pulp.lpSum(o) <= k, "max_objects"
        if ev:
            prob += pulp.lpSum(ev.values()) <= k - 1, "max_connections"
            for (i, j), v in ev.items():
                prob += 2 * v <= o[i] + o[j], f"link_{i}_{j}"
        prob.solve(pulp.HiGHS(msg=False, timeLimit=float(time_limit), gapRel=0.0))
    except Exception as e:  # solver crash, license/binary problems, pulp API errors
        return fallback(f"the MIP solver failed ({type(e).__name__}: {str(e)[:160]})")
    status, sol = int(prob.status), int(getattr(prob, "sol_status", 0))
    if status != pulp.LpStatusOptimal or sol not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return fallback(
            f"the MIP solver returned {pulp.LpStatus.get(status, status)} / {pulp.LpSolution.get(sol, sol)}"
        )
    ordered = _order([i for i in range(n) if (o[i].varValue or 0.0) > 0.5], r)
    edges = heaviest_pairs(ordered, weight, k - 1, min_compatibility=min_compatibility, compatibility=c)
    kind = "optimal" if sol == pulp.LpSolutionOptimal else "time_limit"
    msg = "" if kind == "optimal" else f"time limit of {time_limit} s reached; the incumbent is kept"
    obj = _objective(r, c, ordered, edges, relevance_weight, compatibility_weight)
    solver_obj = float(pulp.value(prob.objective) or 0.0)
    return MipResult(
        ordered, edges, kind, msg, time.perf_counter() - t0, obj, len(ev), {"solver_objective": solver_obj}
    )
