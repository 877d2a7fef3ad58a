"""LATTICE: an LLM-built semantic tree and calibrated, LLM-guided beam search (arXiv 2510.13217).

Build a tree (:func:`build_bottom_up`, :func:`build_top_down`; :func:`build_bottom_up_into` from a stream straight
into a folder), persist it (:class:`SemanticTree`), search it
(:class:`Lattice`), grow and shrink it (:func:`insert_documents`, :func:`delete_documents`), say how far it drifted
from a fresh build (:func:`drift`) and draw a search (:func:`draw_search`). Defaults and every
paper-vs-code choice are documented in :mod:`retrievekit.core.lattice.config`.

Examples:
    >>> from retrievekit.core.lattice import LatticeConfig
    >>> LatticeConfig().relevance_chain_factor
    0.5
"""

from __future__ import annotations

from retrievekit.core.lattice.bottom_up import build_bottom_up
from retrievekit.core.lattice.bottom_up_stream import build_bottom_up_into
from retrievekit.core.lattice.calibration import Calibration, fit_latent_scores
from retrievekit.core.lattice.config import LatticeConfig, TreeBuildConfig
from retrievekit.core.lattice.delete import delete_documents
from retrievekit.core.lattice.draw import draw_search
from retrievekit.core.lattice.drift import TreeDrift, drift
from retrievekit.core.lattice.insert import insert_documents
from retrievekit.core.lattice.method import (
    FlatLLMReranker,
    build_lattice,
    build_llm_rerank,
    build_tree,
    create_lattice,
)
from retrievekit.core.lattice.scoring import SlateScorer, SlateScores
from retrievekit.core.lattice.search import Lattice, LatticeSearcher, SearchState
from retrievekit.core.lattice.top_down import build_top_down
from retrievekit.core.lattice.tree import SemanticTree, TreeNode

__all__ = [
    "Calibration",
    "FlatLLMReranker",
    "Lattice",
    "LatticeConfig",
    "LatticeSearcher",
    "SearchState",
    "SemanticTree",
    "SlateScorer",
    "SlateScores",
    "TreeBuildConfig",
    "TreeDrift",
    "TreeNode",
    "build_bottom_up",
    "build_bottom_up_into",
    "build_lattice",
    "build_llm_rerank",
    "build_top_down",
    "build_tree",
    "create_lattice",
    "delete_documents",
    "draw_search",
    "drift",
    "fit_latent_scores",
    "insert_documents",
]
