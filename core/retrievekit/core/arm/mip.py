"""Structure alignment as a mixed-integer program (pulp modelling, HiGHS solver through ``highspy``).

Given relevance ``R_i`` and compatibility ``C_ij`` of ``n`` candidates, choose binary ``o_i`` (object kept) and
``c_ij`` (ordered pair i != j kept as a connection) to (REFERENCE.md §2.1.4)::

    maximise   w_R * sum_i R_i o_i  +  w_C * sum_{i != j} C_ij c_ij
    subject to sum_i o_i <= k,   sum_{i != j} c_ij <= 2 (k - 1),   2 c_ij <= o_i + o_j

with ``w_R = 3`` and ``w_C = 0.5``. ``c_ij`` exists only where ``C_ij > 1e-6`` (REFERENCE.md §2.3) to keep the
model small. The model is built with ``LpProblem.add_variable`` and solved with ``pulp.HiGHS(msg=False,
timeLimit=...)``, which runs warning-free on pulp 3.3 and 4.x (ECOSYSTEM.md §4).

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

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from retrievekit.core.errors import InvalidInputError

__all__ = ["MipResult", "relevance_top_k", "solve_mip", "solver_available"]


@dataclass(frozen=True)
class MipResult:
    """The selection of one MIP solve.

    Attributes:
        selected: indices of the chosen candidates, sorted by relevance (best first, ties by index).
        edges: unordered pairs ``(i, j)``, ``i < j``, whose ``c_ij`` or ``c_ji`` is 1 (connections kept).
        status: ``"optimal"``, ``"time_limit"`` (incumbent kept) or ``"fallback"`` (relevance top-k).
        message: why a fallback happened (``""`` otherwise).
        seconds: wall time of building and solving.
        objective: the objective value of ``selected``/``edges``.
        n_pair_vars: ``c_ij`` variables in the model.

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


def solver_available() -> bool:
    """Whether pulp and the HiGHS (highspy) solver can be used.

    Examples:
        >>> isinstance(solver_available(), bool)
        True
    """
    try:
        import pulp

        return bool(pulp.HiGHS(msg=False).available())
    except Exception:
        return False


def _order(selected: Sequence[int], R: np.ndarray) -> list[int]:
    return sorted({int(i) for i in selected}, key=lambda i: (-float(R[i]), i))


def _objective(
    R: np.ndarray, C: np.ndarray, sel: Sequence[int], edges: Sequence[tuple[int, int]], wr: float, wc: float
) -> float:
    return wr * float(sum(R[i] for i in sel)) + wc * float(sum(C[i, j] + C[j, i] for i, j in edges))


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
    edges: list[tuple[int, int]] = []
    if C is not None:
        for a in range(len(sel)):
            for b in range(a + 1, len(sel)):
                i, j = sorted((sel[a], sel[b]))
                if max(C[i, j], C[j, i]) > min_compatibility:
                    edges.append((i, j))
    return sel, sorted(edges)


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

    try:
        prob = pulp.LpProblem("arm_structure", pulp.LpMaximize)
        o = [prob.add_variable(f"o_{i}", 0, 1, cat="Binary") for i in range(n)]
        pairs = [(i, j) for i in range(n) for j in range(n) if i != j and c[i, j] > min_compatibility]
        cv = {p: prob.add_variable(f"c_{p[0]}_{p[1]}", 0, 1, cat="Binary") for p in pairs}
        prob += pulp.lpSum(relevance_weight * float(r[i]) * o[i] for i in range(n)) + pulp.lpSum(
            compatibility_weight * float(c[i, j]) * v for (i, j), v in cv.items()
        )
        prob += pulp.lpSum(o) <= k, "max_objects"
        if cv:
            prob += pulp.lpSum(cv.values()) <= 2 * (k - 1), "max_connections"
            for (i, j), v in cv.items():
                prob += 2 * v <= o[i] + o[j], f"link_{i}_{j}"
        prob.solve(pulp.HiGHS(msg=False, timeLimit=float(time_limit)))
    except Exception as e:  # solver crash, license/binary problems, pulp API errors
        return fallback(f"the MIP solver failed ({type(e).__name__}: {str(e)[:160]})")
    status, sol = int(prob.status), int(getattr(prob, "sol_status", 0))
    if status != pulp.LpStatusOptimal or sol not in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible):
        return fallback(
            f"the MIP solver returned {pulp.LpStatus.get(status, status)} / {pulp.LpSolution.get(sol, sol)}"
        )
    sel = [i for i in range(n) if (o[i].varValue or 0.0) > 0.5]
    chosen = {i for i in sel}
    edges = sorted(
        {tuple(sorted(p)) for p, v in cv.items() if (v.varValue or 0.0) > 0.5 and p[0] in chosen and p[1] in chosen}
    )
    kind = "optimal" if sol == pulp.LpSolutionOptimal else "time_limit"
    msg = "" if kind == "optimal" else f"time limit of {time_limit} s reached; the incumbent is kept"
    ordered = _order(sel, r)
    e2 = [(int(a), int(b)) for a, b in edges]
    obj = _objective(r, c, ordered, e2, relevance_weight, compatibility_weight)
    return MipResult(ordered, e2, kind, msg, time.perf_counter() - t0, obj, len(cv))
