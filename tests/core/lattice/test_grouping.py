"""LATTICE's bottom-up grouping (``balanced_groups``): top-down k-means splits into groups of at most M."""

from __future__ import annotations

import numpy as np
import pytest

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.lattice import clustering
from retrievekit.core.lattice.clustering import SPLIT_BRANCHING, balanced_groups, split_labels


def _planted(clusters: int, size: int, dim: int = 16, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Well-separated clusters of ``size`` points each, rows shuffled; returns (vectors, cluster of each row)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim)) * 10
    truth = rng.permutation(np.repeat(np.arange(clusters), size))
    return centres[truth] + rng.normal(scale=0.05, size=(len(truth), dim)), truth


def test_planted_clusters_of_at_most_m_come_back_whole():
    x, truth = _planted(clusters=60, size=7)
    groups = balanced_groups(x, 10, seed=1)
    assert sorted(i for g in groups for i in g) == list(range(len(x)))
    assert sorted(tuple(sorted(np.flatnonzero(truth == c).tolist())) for c in range(60)) == sorted(map(tuple, groups))


def test_large_sets_split_over_levels_on_samples_and_stay_deterministic(monkeypatch):
    x, truth = _planted(clusters=40, size=100, dim=8)  # 4,000 points > B * M: more than one level of splits
    assert len(x) > SPLIT_BRANCHING * 10
    monkeypatch.setattr(clustering, "SAMPLE_PER_CENTRE", 4)  # the top split fits its centres on 800 sampled rows
    groups = balanced_groups(x, 10, seed=5)
    assert sorted(i for g in groups for i in g) == list(range(len(x))) and max(map(len, groups)) <= 10
    assert all(len(set(truth[g].tolist())) == 1 for g in groups)  # no group mixes two planted clusters
    assert balanced_groups(x, 10, seed=5) == groups and groups == sorted(groups, key=lambda g: g[0])
    assert len(groups) <= 0.3 * len(x)  # the level shrinks (about n / M groups, not shattered)


def test_split_labels_are_numbered_by_first_member():
    x, _ = _planted(clusters=3, size=5)
    labels = split_labels(x.astype(np.float32), 3, seed=2)
    first_seen = list(dict.fromkeys(labels.tolist()))
    assert first_seen == [0, 1, 2]


def test_bad_sizes_are_refused():
    with pytest.raises(InvalidInputError, match="max_size must be >= 1"):
        balanced_groups(np.zeros((3, 2)), 0)
    with pytest.raises(InvalidInputError, match="split_labels needs k >= 1"):
        split_labels(np.zeros((0, 2), dtype=np.float32), 2)
    assert balanced_groups(np.zeros((0, 4)), 3) == []
