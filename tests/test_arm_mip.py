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
    assert {tuple(e) for e in res.edges} == {(2, 5), (2, 9), (5, 9)}
    # relevance alone picks the distractors: the structure term is what finds the set
    assert not set(relevance_top_k(R, C, 3)[0]) & planted
    assert res.objective == pytest.approx(3 * 1.2 + 0.5 * 6 * 1.0)


def test_mip_respects_the_constraints_and_weights():
    R, C, planted = _planted()
    res = solve_mip(R, C, k=5)
    assert len(res.selected) <= 5 and planted <= set(res.selected)
    assert len(res.edges) * 2 <= 2 * (5 - 1)
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
