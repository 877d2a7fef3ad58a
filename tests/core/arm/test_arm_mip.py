"""ARM's MIP (real pulp + HiGHS): the planted connected set, time limits, solver failure and unavailability."""

from __future__ import annotations

import warnings

import numpy as np
import pulp
import pytest

from retrievekit.core.arm.mip import relevance_top_k, solve_mip
from retrievekit.core.errors import InvalidInputError


def _planted(n: int = 12, seed: int = 0) -> tuple[np.ndarray, np.ndarray, set[int]]:
    """Distractors are individually more relevant; the planted triple is strongly inter-connected."""
    rng = np.random.default_rng(seed)
    R = rng.uniform(0.45, 0.55, size=n)
    planted = {2, 5, 9}
    for i in planted:
        R[i] = 0.4
    C = rng.uniform(0.0, 0.05, size=(n, n))
    C = (C + C.T) / 2
    for i in planted:
        for j in planted:
            if i != j:
                C[i, j] = 1.0
    np.fill_diagonal(C, 0.0)
    return R, C, planted


def test_mip_picks_the_planted_connected_set():
    R, C, planted = _planted()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # portable pulp 3.3 / 4.x API: no deprecations
        res = solve_mip(R, C, k=3)
    assert res.status == "optimal"
    assert set(res.selected) == planted
    # k - 1 = 2 connections; the three planted pairs tie, so the canonical choice is the first two by index
    assert res.edges == [(2, 5), (2, 9)]
    # relevance alone picks the distractors: the structure term is what finds the set
    assert not set(relevance_top_k(R, C, 3)[0]) & planted
    assert res.objective == pytest.approx(3 * 1.2 + 0.5 * 2 * (1.0 + 1.0))
    assert res.extra["solver_objective"] == pytest.approx(res.objective, abs=1e-6)


def test_reported_edges_do_not_depend_on_the_solvers_tie_breaking(monkeypatch):
    """Whatever tied edge set the solver returns, the reported edges and objective are the canonical ones."""
    R, C, planted = _planted()
    reference = solve_mip(R, C, k=3)
    real = pulp.LpProblem.solve

    def all_edges_on(self, solver=None, **kw):  # a solver that reports every tied pair variable as chosen
        status = real(self, solver, **kw)
        for v in self.variables():
            if v.name.startswith("e_") and all(int(x) in planted for x in v.name.split("_")[1:]):
                v.varValue = 1.0
        return status

    monkeypatch.setattr(pulp.LpProblem, "solve", all_edges_on)
    res = solve_mip(R, C, k=3)
    assert (res.selected, res.edges, res.objective) == (reference.selected, reference.edges, reference.objective)


def test_the_connection_budget_matches_the_reference_on_symmetric_compatibility():
    """Reference: ordered pairs capped at 2(k-1). Here: unordered pairs worth C_ij + C_ji capped at k-1. Same optimum."""
    rng = np.random.default_rng(3)
    for _ in range(5):
        n, k = 9, 4
        R = rng.uniform(size=n)
        C = rng.uniform(size=(n, n))
        C = (C + C.T) / 2
        np.fill_diagonal(C, 0.0)
        res = solve_mip(R, C, k=k)
        prob = pulp.LpProblem("reference", pulp.LpMaximize)
        o = [prob.add_variable(f"o_{i}", 0, 1, cat="Binary") for i in range(n)]
        cv = {(i, j): prob.add_variable(f"c_{i}_{j}", 0, 1, cat="Binary") for i in range(n) for j in range(n) if i != j}
        prob += pulp.lpSum(3 * R[i] * o[i] for i in range(n)) + pulp.lpSum(
            0.5 * C[i, j] * v for (i, j), v in cv.items()
        )
        prob += pulp.lpSum(o) <= k
        prob += pulp.lpSum(cv.values()) <= 2 * (k - 1)
        for (i, j), v in cv.items():
            prob += 2 * v <= o[i] + o[j]
        prob.solve(pulp.HiGHS(msg=False, gapRel=0.0))
        assert res.objective == pytest.approx(pulp.value(prob.objective), abs=1e-6)
        assert len(res.edges) <= k - 1


def test_mip_respects_the_constraints_and_weights():
    R, C, planted = _planted()
    res = solve_mip(R, C, k=5)
    assert len(res.selected) <= 5 and planted <= set(res.selected)
    assert len(res.edges) <= 5 - 1
    assert all(i in res.selected and j in res.selected for i, j in res.edges)
    # no compatibility weight: pure relevance
    res0 = solve_mip(R, C, k=3, compatibility_weight=0.0)
    assert set(res0.selected) == set(relevance_top_k(R, C, 3)[0])


def test_fewer_candidates_than_k_and_empty_pool():
    res = solve_mip([0.5, 0.2], np.zeros((2, 2)), k=10)
    assert res.selected == [0, 1] and res.edges == []
    assert solve_mip([], np.zeros((0, 0)), k=3).selected == []


def test_bad_input_is_a_typed_error():
    with pytest.raises(InvalidInputError):
        solve_mip([0.1, 0.2], np.zeros((3, 3)), k=2)
    with pytest.raises(InvalidInputError):
        solve_mip([0.1, float("nan")], np.zeros((2, 2)), k=2)
    with pytest.raises(InvalidInputError):
        solve_mip([0.1], np.zeros((1, 1)), k=0)


def test_solver_unavailable_falls_back_to_relevance(monkeypatch):
    R, C, _ = _planted()
    monkeypatch.setattr(pulp.HiGHS, "available", lambda self: False)
    res = solve_mip(R, C, k=3)
    assert res.status == "fallback" and "not available" in res.message
    assert res.selected == relevance_top_k(R, C, 3)[0]


def test_solver_error_falls_back(monkeypatch):
    R, C, _ = _planted()

    def boom(self, *a, **kw):
        raise pulp.PulpSolverError("solver crashed")

    monkeypatch.setattr(pulp.LpProblem, "solve", boom)
    res = solve_mip(R, C, k=3)
    assert res.status == "fallback" and "PulpSolverError" in res.message


def test_no_solution_status_falls_back(monkeypatch):
    R, C, _ = _planted()

    def not_solved(self, solver=None, **kw):
        self.status, self.sol_status = pulp.LpStatusNotSolved, pulp.LpSolutionNoSolutionFound
        return self.status

    monkeypatch.setattr(pulp.LpProblem, "solve", not_solved)
    res = solve_mip(R, C, k=3)
    assert res.status == "fallback" and "Not Solved" in res.message


def test_time_limit_incumbent_is_kept(monkeypatch):
    """HiGHS reports a time-out with an incumbent as (Optimal, IntegerFeasible): the incumbent is kept."""
    R, C, planted = _planted()
    real = pulp.LpProblem.solve

    def timed_out(self, solver=None, **kw):
        status = real(self, solver, **kw)
        self.sol_status = pulp.LpSolutionIntegerFeasible
        return status

    monkeypatch.setattr(pulp.LpProblem, "solve", timed_out)
    res = solve_mip(R, C, k=3, time_limit=0.5)
    assert res.status == "time_limit" and "incumbent" in res.message
    assert set(res.selected) == planted


def test_tiny_time_limit_still_returns_a_valid_selection():
    rng = np.random.default_rng(1)
    n = 60
    R = rng.uniform(size=n)
    C = rng.uniform(size=(n, n))
    res = solve_mip(R, C, k=10, time_limit=0.01)
    assert res.status in ("optimal", "time_limit", "fallback")
    assert 1 <= len(res.selected) <= 10


def test_a_solve_prints_nothing():
    """HiGHS prints a banner from C++ on the first solver object of a process; it must not reach stdout."""
    import subprocess
    import sys

    code = (
        "import numpy as np\n"
        "from retrievekit.core.arm.mip import solve_mip\n"
        "print(solve_mip([0.9, 0.5, 0.4], np.ones((3, 3)) - np.eye(3), k=2).status)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout == "optimal\n", out.stdout
    assert "HiGHS" not in out.stderr
