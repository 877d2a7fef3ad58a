"""``gmm_threshold`` (the anchor draw's EM, as two small matrix products a step) gives the plain numpy loop's
threshold to within 1e-8 of the scores' range, and separates the same scores.

The reference below is the textbook EM loop the search used before (and the reference code's): fresh arrays at each
step, ``np.percentile`` twice; the valley search after it is the module's own (``mixture_valley``). Inputs: uniform
scores, two clusters, ties and LLM-like quantised scores, a pinned 0/1 mass, scales from 1e-6 to 1e3, sizes 2 to 90,
then 200 larger sets of 55 to 400 scores; then the anchor draws of whole searches are the same.
"""

from __future__ import annotations

import numpy as np
from _lattice import KeywordLLM, planted_tree

from retrievekit.core.lattice.anchors import mixture_valley
from retrievekit.core.lattice.search import LatticeSearcher, gmm_threshold, sample_anchors


def _reference(values: list[float], iters: int = 50) -> float | None:
    x = np.asarray(values, dtype=np.float64)
    if x.size < 2 or float(x.std()) < 1e-9:
        return None
    mu = np.array([np.percentile(x, 25), np.percentile(x, 75)], dtype=np.float64)
    if mu[0] == mu[1]:
        mu = np.array([x.min(), x.max()])
    var = np.full(2, max(float(x.var()), 1e-6))
    pi = np.array([0.5, 0.5])
    for _ in range(iters):
        dens = pi / np.sqrt(2 * np.pi * var) * np.exp(-((x[:, None] - mu) ** 2) / (2 * var))
        resp = dens / np.maximum(dens.sum(1, keepdims=True), 1e-300)
        nk = resp.sum(0) + 1e-12
        mu = (resp * x[:, None]).sum(0) / nk
        var = np.maximum((resp * (x[:, None] - mu) ** 2).sum(0) / nk, 1e-6)
        pi = nk / nk.sum()
    return mixture_valley(mu, var, pi)  # the step after EM, which both share


def _cases(n: int) -> list[list[float]]:
    rng = np.random.default_rng(60)
    out = []
    for t in range(n):
        size = int(rng.integers(2, 60))
        kind = t % 6
        if kind == 0:
            v = rng.random(size)
        elif kind == 1:
            v = np.concatenate([rng.normal(0.2, 0.05, size), rng.normal(0.8, 0.05, int(rng.integers(1, 30)))])
        elif kind == 2:
            v = np.round(rng.random(size) * 10) / 10
        elif kind == 3:
            v = rng.integers(0, 101, size) / 100.0
        elif kind == 4:
            v = np.concatenate([rng.random(size), [0.0] * int(rng.integers(0, 5)), [1.0] * int(rng.integers(0, 5))])
        else:
            v = rng.normal(0, 1, size) * 10 ** rng.uniform(-6, 3)
        out.append(v.tolist())
    return out


def _larger(n: int) -> list[list[float]]:
    """Sets of 55 to 400 scores in [0, 1]: a broad mass of low scores and a smaller one of high scores."""
    rng = np.random.default_rng(61)
    return [
        np.clip(
            np.concatenate(
                [rng.normal(0.2, 0.1, int(rng.integers(50, 300))), rng.normal(0.7, 0.1, int(rng.integers(5, 100)))]
            ),
            0.0,
            1.0,
        ).tolist()
        for _ in range(n)
    ]


def _differences(cases: list[list[float]], iters: int = 50) -> list[tuple]:
    """The inputs whose threshold is not the reference's within 1e-8 of their range, or separates other scores."""
    out = []
    for v in cases:
        got, want = gmm_threshold(v, iters=iters), _reference(v, iters=iters)
        if got is None or want is None:
            if got is not want:
                out.append((v, got, want))
            continue
        x = np.asarray(v)
        if abs(got - want) > 1e-8 * float(x.max() - x.min()) or not np.array_equal(x > got, x > want):
            out.append((v, got, want))
    return out


def test_the_threshold_is_the_plain_loops_and_separates_the_same_scores():
    cases = _cases(1500) + _larger(200) + [[0.5, 0.5], [0.0, 1.0], [0.3] * 7 + [0.31], [1e-12, 2e-12, 3e-12]]
    assert sum(_reference(v) is None for v in cases) > 10  # degenerate inputs are covered too
    diff = _differences(cases)
    assert not diff, diff[:3]
    assert not _differences(cases[:50], iters=7)


def test_a_searchs_anchor_draws_are_unchanged(monkeypatch):
    """The leaf slates' anchors of whole searches, drawn with the reference EM and with ``gmm_threshold``: equal."""
    import retrievekit.core.lattice.anchors as anchors_module

    def anchors() -> list[dict[str, list[str]]]:
        searcher = LatticeSearcher(planted_tree(), KeywordLLM())
        out = []
        for q in ("volcano magma", "ocean tides", "magma chamber pressure"):
            searcher.search(q, k=5)
            out.append(dict(searcher.last_state.anchors))
        return out

    fast = anchors()
    monkeypatch.setattr(anchors_module, "gmm_threshold", _reference)
    assert anchors() == fast
    assert any(len(a) > 1 for state in fast for a in state.values())  # leaf slates drew anchors
    assert sample_anchors({"a": 0.9, "b": 0.1, "c": 0.5, "d": 0.2}, 2, rng=np.random.default_rng(1))


def test_an_iterations_leaf_slates_fit_the_mixture_once_and_draw_the_same_anchors(monkeypatch):
    """The leaf slates of one iteration draw their anchors from the same scores: the search fits the mixture once for
    them (the latest fit is kept per query), and the draws are those of a fit per slate."""
    import retrievekit.core.lattice.anchors as anchors_module
    import retrievekit.core.lattice.search as search_module

    fits, draws = [], []
    fit, draw = anchors_module.gmm_threshold, search_module.sample_anchors
    monkeypatch.setattr(anchors_module, "gmm_threshold", lambda v, iters=50: fits.append(tuple(v)) or fit(v, iters))

    def counted(scores, n, **kw):
        draws.append(len(scores) > n)
        return draw(scores, n, **kw)

    monkeypatch.setattr(search_module, "sample_anchors", counted)
    searcher = LatticeSearcher(planted_tree(), KeywordLLM())
    queries = ("volcano magma", "ocean tides", "magma chamber pressure")
    once, fitted = [], 0
    for q in queries:
        searcher.search(q, k=5)
        once.append(dict(searcher.last_state.anchors))
        assert len(fits) == len(set(fits)), q  # no fit made twice in a search
        fitted, fits[:] = fitted + len(fits), []
    assert sum(draws) > fitted > 0  # more mixture draws than fits

    monkeypatch.setattr(search_module, "sample_anchors", lambda scores, n, fitted=None, **kw: draw(scores, n, **kw))
    per_slate = []
    for q in queries:
        searcher.search(q, k=5)
        per_slate.append(dict(searcher.last_state.anchors))
    assert per_slate == once
