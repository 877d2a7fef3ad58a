"""``retrievekit bench --method oneshot``: a wide hybrid candidate pool, then One-SHOT selection within a budget.

Options (``--option key=value``): every :class:`~retrievekit.core.oneshot.config.OneShotConfig` field, e.g.
``budget`` (tokens, 4000), ``filter`` (false), ``crop`` (false; needs ``--llm``), ``k_max`` (none), ``tokenizer``
("regex"), ``crop_judge_threshold`` (0.5) -- read by :meth:`~retrievekit.core.oneshot.config.OneShotConfig.from_options`,
which coerces strings by the field's type; then ``pool`` (candidates from the hybrid baseline, 100),
``documents_meta`` (a ``documents_meta.json`` with document titles/aliases for the filter), ``judge_dir``
(``--judge DIR``: a trained relevance judge crops instead of ``--llm``; it turns ``crop`` on unless ``crop=false``
is given, which is an error), plus the hybrid baseline's own options (``fusion``, ``rrf_k`` ...). Selection returns
a *set*; its hits come back in relevance order so ranking metrics stay meaningful, and ``returns_set = True`` adds
set precision/recall/F1 to the results.

Examples:
    >>> from retrievekit.core.registry import MethodContext
    >>> from retrievekit.core.types import Passage
    >>> ctx = MethodContext(corpus=[Passage(id="a", text="x")], options={"budget": 500})
    >>> build_oneshot(ctx).search("x", k=10)[0].id  # the hybrid pool needs all-MiniLM-L6-v2  # doctest: +SKIP
    'a'
"""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any

from retrievekit.core.checks import check_k, check_query
from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.oneshot.config import OneShotConfig
from retrievekit.core.oneshot.filters import DocumentCatalog, MetadataKeys
from retrievekit.core.oneshot.selector import OneShotResult, OneShotSelector
from retrievekit.core.options import check_option_keys, option_bool
from retrievekit.core.registry import MethodContext
from retrievekit.core.retriever import Retriever
from retrievekit.core.trace import Trace
from retrievekit.core.types import ScoredHit

__all__ = ["OneShotRetriever", "build_oneshot"]

_CONFIG_KEYS = frozenset(f.name for f in fields(OneShotConfig))


class OneShotRetriever:
    """A retriever: ``base.search(query, pool)`` then :class:`OneShotSelector` within the token budget.

    ``last_result`` keeps the latest :class:`OneShotResult` (tokens used, drops, origins).

    Examples:
        >>> from retrievekit.core.index.bm25 import BM25Index
        >>> from retrievekit.core.types import Passage
        >>> base = BM25Index.build([Passage(id="a", text="red apples"), Passage(id="b", text="red cars " * 40)])
        >>> r = OneShotRetriever(base, OneShotSelector(OneShotConfig(budget=20)), pool=10)
        >>> [h.id for h in r.search("red apples")]
        ['a']
    """

    returns_set = True

    def __init__(self, base: Retriever, selector: OneShotSelector, *, pool: int = 100) -> None:
        self.base = base
        self.selector = selector
        self.pool = check_k(pool)
        self.last_result: OneShotResult | None = None

    def search(self, query: str, k: int = 10, *, trace: Trace | None = None) -> list[ScoredHit]:
        """Retrieve ``pool`` candidates, select within the budget, return at most ``k`` hits in relevance order.

        Examples:
            >>> from retrievekit.core.index.bm25 import BM25Index
            >>> from retrievekit.core.types import Passage
            >>> OneShotRetriever(BM25Index.build([Passage(id="a", text="tea")]), OneShotSelector()).search("coffee")
            []
        """
        check_query(query)
        check_k(k)
        trace = trace if trace is not None else Trace()
        hits = self.base.search(query, self.pool, trace=trace)
        res = self.selector.select(query, hits, trace=trace)
        self.last_result = res
        return res.hits()[:k]


def build_oneshot(ctx: MethodContext) -> OneShotRetriever:
    """Factory registered as ``oneshot``: hybrid pool (cached in ``ctx.work_dir``) + One-SHOT selection.

    Examples:
        >>> build_oneshot(MethodContext(corpus=[], options={"budget": -1}))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: budget must be a positive int (tokens), got -1
    """
    from retrievekit.core.index.baselines import HYBRID_OPTIONS, build_hybrid
    from retrievekit.core.llm.judge_hooks import judge_from_options

    known = [f.name for f in fields(OneShotConfig)] + ["pool", "documents_meta", "judge_dir", *HYBRID_OPTIONS]
    check_option_keys(ctx.options, known, label="oneshot")
    judge, opts = judge_from_options(ctx)
    cfg_opts: dict[str, Any] = {k: v for k, v in opts.items() if k in _CONFIG_KEYS}
    if judge is not None:
        if "crop" in cfg_opts and not option_bool("crop", cfg_opts["crop"]):
            raise InvalidInputError("--judge is used for cropping; it cannot be combined with crop=false")
        cfg_opts["crop"] = True
    cfg = OneShotConfig.from_options(cfg_opts)
    pool = opts.get("pool", 100)
    if isinstance(pool, bool) or not isinstance(pool, int) or pool < 1:
        raise InvalidInputError(f"option pool must be a positive int, got {pool!r}")
    llm: Any = judge
    if cfg.crop and llm is None:
        if ctx.llm is None:
            raise InvalidInputError(f"crop=true needs a local model: add --llm {DEFAULT_MODEL} (or qwen0.5b)")
        llm = ctx.load_llm()
    catalog = None
    meta_path = opts.get("documents_meta")
    if meta_path:
        path = Path(str(meta_path))
        if not path.is_file():
            raise InvalidInputError(f"documents_meta file not found: {path}")
        raw = json.loads(path.read_text(encoding="utf-8"))
        catalog = DocumentCatalog.from_records(raw.values() if isinstance(raw, dict) else raw)
    keys = MetadataKeys()
    hybrid_opts = {k: v for k, v in opts.items() if k not in _CONFIG_KEYS | {"pool", "documents_meta"}}
    hybrid_opts.setdefault("candidate_k", max(100, pool))
    base = build_hybrid(ctx.stage(options=hybrid_opts))  # the user's embedder and store reach the pool
    selector = OneShotSelector(
        cfg,
        catalog=catalog,
        keys=keys,
        lookup=OneShotSelector.corpus_lookup(ctx.corpus, keys) if cfg.filter else None,
        llm=llm,
    )
    return OneShotRetriever(base, selector, pool=pool)
