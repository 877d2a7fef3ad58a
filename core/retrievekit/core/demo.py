"""``retrievekit demo``: index retrievekit's own documentation and answer a few questions with every method.

The corpus is generated from the installed package itself (module, class and
function docstrings) plus the repository's ``docs/*.md`` when run from a
checkout, so the demo needs no download and no dataset.

Examples:
    >>> corpus = build_docs_corpus()
    >>> len(corpus) > 20 and all(p.text for p in corpus)
    True
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import pkgutil
import re
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from retrievekit.core.cli.llm_arguments import served_llm_spec
from retrievekit.core.demo_snapshot import DemoSnapshot, build_snapshot, load_snapshot, seed_embedder
from retrievekit.core.errors import IndexFormatError, MissingDependencyError
from retrievekit.core.index.as_embedder import as_embedder
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.llm.resolve import resolve_llm
from retrievekit.core.registry import MethodContext, available_methods, build_method
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

__all__ = ["DEMO_OPTIONS", "DEMO_QUESTIONS", "DEMO_SKIP", "LLM_DRIVEN", "build_docs_corpus", "demo_cache_dir", "main"]

DEMO_QUESTIONS = [
    "How do I save a BM25 index to disk and open it again?",
    "Which embedding model is used by default and where does it come from?",
    "How are the rankings of several retrievers fused?",
    "What happens when a text is not valid UTF-8?",
]

# Methods that need a trained model or a GPU, and baselines / ablations of other methods, are not run by the demo
# unless asked for (``--method``).
DEMO_SKIP = {"self-retrieval", "llm-rerank", "arm-no-mip", "arm-no-verify", "judge-rerank"}

# The LLM-driven methods answer the first question only, with the lightest settings their docs describe, so the
# whole demo stays within about three minutes on 2 CPU cores (the methods' own defaults are the papers';
# `retrievekit bench` uses those).
DEMO_OPTIONS: dict[str, dict[str, object]] = {
    "iterative": {"max_turns": 2},
    # a wider, shallower tree with short summaries (28 summary calls instead of 56 for the docs corpus), searched
    # greedily (beam 1, 4 slates: enough to reach the leaves of its 3 levels)
    "lattice": {
        "beam_size": 1,
        "num_iters": 4,
        "score_max": 9,
        "max_candidate_chars": 120,
        "append_child_titles": True,
        "max_children": 20,
        "child_chars": 60,
        "summary_max_tokens": 16,
    },
    "arm": {"expand_ks": (3,)},
    "mindref": {"title_beams": 5, "passage_beams": 3},
}
LLM_DRIVEN = frozenset({"arm", "iterative", "lattice", "mindref", "llm-rerank", "self-retrieval", "judge-rerank"})


# What the judge-accuracy curves established about each LLM-judged method with a weak (chance-level) judge such as
# the embedded SmolLM2 (docs/benchmarks.md, "Where each judged method pays off").
WEAK_JUDGE_FACTS: dict[str, str] = {
    "lattice": "LATTICE beats a flat BM25 rerank only with a judge of AUC about 0.9 or better; SmolLM2 judges at chance",
    "arm": "ARM's table recall@1 beats hybrid alone only from a judge AUC of about 0.9; SmolLM2 judges at chance",
    "iterative": "the agent's searches and deletes follow the model; SmolLM2 rarely calls a tool well",
    "llm-rerank": "a flat LLM rerank with SmolLM2 orders at chance, below BM25",
}
_BETTER = "pass --llm openai:MODEL@URL (your served LLM) or a trained judge (--judge DIR with retrievekit bench)"


def explain_result(method: str, hits: Sequence[Any], trace: Trace, *, served: bool) -> list[str]:
    """One line for each thing a user should know about a method's result: why it is empty, what fell back, and
    (embedded model only) what the judge-accuracy curves say about trusting it, with what would change it.

    Examples:
        >>> t = Trace(); t.note("fallback", "the LLM reply scored no item; using embedding cosine scores")
        >>> explain_result("lattice", [], t, served=False)[0]
        '(no hits: the LLM reply scored no item; using embedding cosine scores)'
        >>> explain_result("bm25", ["hit"], Trace(), served=False)
        []
    """
    fallbacks = [e.message for e in trace.events if e.kind == "fallback"]
    lines = []
    if not hits:
        why = fallbacks[0] if fallbacks else "no object passed the method's selection for this question"
        lines.append(f"(no hits: {why})")
    elif fallbacks:
        lines.append(f"note: {len(fallbacks)} step(s) fell back: {fallbacks[0]}")
    fact = WEAK_JUDGE_FACTS.get(method)
    if fact and not served:
        lines.append(f"note: {fact}; {_BETTER}")
    return lines


def demo_cache_dir() -> Path:
    """Where the demo keeps its indexes between runs: ``<retrievekit cache>/demo`` (``$RETRIEVEKIT_CACHE``).

    One stable folder, so a second run reuses the indexes and no run leaves a new temporary folder behind.

    Examples:
        >>> demo_cache_dir().name
        'demo'
    """
    from retrievekit.core.llm.models import cache_root

    return cache_root() / "demo"


class _Ticker:
    """A live progress line: ``label ... 12 s`` rewritten every second on a terminal, every 15 s elsewhere."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self.label = label
        self.stream = stream or sys.stdout
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.t0 = time.perf_counter()

    def _run(self) -> None:
        period = 1.0 if self.tty else 15.0
        while not self._stop.wait(period):
            elapsed = time.perf_counter() - self.t0
            if self.tty:
                self.stream.write(f"\r   {self.label} ... {elapsed:.0f} s")
            else:
                self.stream.write(f"   {self.label} ... {elapsed:.0f} s\n")
            self.stream.flush()

    def __enter__(self) -> _Ticker:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        if self.tty:
            self.stream.write("\r" + " " * (len(self.label) + 20) + "\r")
            self.stream.flush()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.t0


def _docstring_passages(module_name: str) -> list[Passage]:
    try:
        mod = importlib.import_module(module_name)
    except Exception:  # optional framework not installed, or a module with import-time requirements
        return []
    out: list[Passage] = []
    if mod.__doc__:
        out.append(
            Passage(
                id=module_name, title=module_name, text=inspect.cleandoc(mod.__doc__), metadata={"source": "docstring"}
            )
        )
    for name, obj in sorted(vars(mod).items()):
        if name.startswith("_") or getattr(obj, "__module__", None) != module_name:
            continue
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        doc = inspect.getdoc(obj)
        if doc:
            qual = f"{module_name}.{name}"
            out.append(Passage(id=qual, title=qual, text=doc, metadata={"source": "docstring"}))
    return out


DEMO_SKIP_MARK = "<!-- retrievekit-demo: skip -->"
"""A docs section holding this HTML comment is left out of the demo corpus."""


def _markdown_passages(docs_dir: Path) -> list[Passage]:
    out: list[Passage] = []
    for md in sorted(docs_dir.glob("*.md")):
        text = md.read_text(encoding="utf-8")
        # one passage per second-level section
        parts = re.split(r"(?m)^## ", text)
        for i, part in enumerate(parts):
            part = part.strip()
            if not part:
                continue
            if DEMO_SKIP_MARK in part:  # e.g. a section quoting the demo's own output
                continue
            head = part.splitlines()[0].lstrip("# ").strip()
            out.append(
                Passage(
                    id=f"docs/{md.name}#{i}", title=f"{md.stem}: {head}", text=part, metadata={"source": str(md.name)}
                )
            )
    return out


def build_docs_corpus() -> list[Passage]:
    """Passages from retrievekit's docstrings (and ``docs/*.md`` in a source checkout), sorted by id.

    Examples:
        >>> any(p.id == "retrievekit.core.index.bm25.BM25Index" for p in build_docs_corpus())
        True
    """
    import retrievekit

    names: set[str] = set()
    for path in retrievekit.__path__:
        for info in pkgutil.walk_packages([path], prefix="retrievekit."):
            names.add(info.name)
    passages: list[Passage] = []
    for name in sorted(names):
        if name.endswith(".demo") or name.endswith(".cli"):
            continue
        passages.extend(_docstring_passages(name))
    docs = Path(__file__).resolve().parents[3] / "docs"
    if docs.is_dir():
        passages.extend(_markdown_passages(docs))
    seen: set[str] = set()
    unique = []
    for p in sorted(passages, key=lambda p: p.id):
        if p.id not in seen:
            seen.add(p.id)
            unique.append(p)
    return unique


def _demo_corpus(use_snapshot: bool, methods: Sequence[str]) -> tuple[DemoSnapshot | None, str]:
    """The shipped snapshot (checked, its vectors handed to the embedder) and how to name the corpus, or ``None``
    when it is not wanted or fails its check (said in one line: the demo then builds from the installed docs)."""
    live = "taken from the installed package now"
    if not use_snapshot:
        return None, live
    try:
        snapshot = load_snapshot()
    except IndexFormatError as e:
        print(f"note: the demo's shipped snapshot is unusable ({e}); indexing the installed docs instead", flush=True)
        return None, live
    if any(m != "bm25" for m in methods):  # every other demo method embeds the corpus
        try:
            from retrievekit.core.index.embeddings import MiniLMEmbedder

            seed_embedder(snapshot, MiniLMEmbedder.default())
        except MissingDependencyError:
            pass  # the methods that need the embedder say so themselves
    return snapshot, "the snapshot shipped with the package, with its embeddings; --no-snapshot takes the docs now"


def _answer_with_llm(llm: str, served: Any, question: str, context: list[str]) -> tuple[str, Trace]:
    lm = resolve_llm(served if served is not None else llm)
    trace = Trace()
    # two passages of 400 characters and the instruction after the context: what a 135M model follows best
    ctx = "\n\n".join(c[:400] for c in context[:2])
    prompt = f"Context:\n{ctx}\n\nUsing only the context above, answer in one sentence: {question}"
    out = lm.complete(prompt, max_tokens=48, trace=trace)
    return out.text.strip(), trace


def _closing_answer(llm: str, served: Any, q: str, source: str, contexts: dict[str, dict[str, list[str]]]) -> None:
    """Let the LLM answer the first question from ``source``'s hits, and print it with its cost (and, for the
    embedded demo model, what it is)."""
    kind = "served" if served is not None else "local"
    print(f"=== answer with the {kind} LLM ({llm}) over the {source} context", flush=True)
    if served is None:
        print(
            f"({llm} is a small model for offline demos and tests: its answers are often wrong; for real answers "
            "pass --llm openai:MODEL@URL)"
        )
    with _Ticker(f"{llm}: writing") as tick:
        answer, trace = _answer_with_llm(llm, served, q, contexts.get(source, {}).get(q, []))
    print(
        f"Q: {q}\nA: {answer}\n   [{trace.prompt_tokens} prompt + {trace.completion_tokens} completion tokens, "
        f"{tick.seconds:.1f} s]\n"
    )


def _quiet_model_loading() -> None:
    """Hide transformers' per-load progress bars: the demo prints its own progress line."""
    try:
        from transformers.utils import logging as hf_logging
    except ImportError:
        return
    hf_logging.disable_progress_bar()


def _build(
    method: str,
    corpus: list[Any],
    options: dict[str, Any],
    snapshot: DemoSnapshot | None,
    served: Any,
    llm: str,
    work_dir: Path,
    embedder: Any = None,
) -> tuple[Any, float]:
    """Build one method (LATTICE over the snapshot's tree when it is the one the demo would build) and say how long
    it took, and what came prebuilt."""
    shipped = method == "lattice" and snapshot is not None and snapshot.tree_fits(llm, served is not None, options)
    run_options = {**options, "tree_dir": str(snapshot.tree_dir)} if shipped and snapshot is not None else options
    ctx = MethodContext(
        corpus,
        work_dir=work_dir,
        llm=served if served is not None else llm,
        options=dict(run_options),
        embedder=embedder,
    )
    with _Ticker(f"{method}: building") as tick:
        retriever = build_method(method, ctx)
    note = ""
    if shipped and snapshot is not None:
        took = snapshot.build_seconds.get(method)
        note = (
            f": the tree {llm} wrote for these docs ships with the package"
            + (f" (writing it took {took:.0f} s)" if took else "")
            + "; --no-snapshot builds it here"
        )
    print(f"   built in {tick.seconds:.1f} s{note}", flush=True)
    return retriever, tick.seconds


def _ask(
    method: str, retriever: Any, questions: list[str], k: int, served: Any
) -> tuple[float, int, dict[str, list[str]]]:
    """Ask each question, print the hits and what explains them; ``(seconds, LLM calls, contexts by question)``."""
    query_s, calls, contexts = 0.0, 0, {}
    for q in questions:
        trace = Trace()
        with _Ticker(f"{method}: answering") as tick:
            hits = retriever.search(q, k, trace=trace)
        query_s += tick.seconds
        calls += trace.llm_calls
        print(f"Q: {q}   [{tick.seconds:.1f} s, {trace.llm_calls} LLM calls]")
        for h in hits:
            print(f"   {h.rank + 1}. {h.score:7.3f}  {h.obj.title or h.id}")
        for line in explain_result(method, hits, trace, served=served is not None):
            print(f"   {line}")
        contexts[q] = [h.obj.text for h in hits]
    return query_s, calls, contexts


def main(args: argparse.Namespace | None = None) -> int:
    """Run the demo; ``args`` may carry ``methods`` (list), ``k`` (int), ``llm`` (name or None), ``work_dir``,
    ``questions`` (list), ``snapshot`` (bool, default True: index the docs snapshot shipped with the package, with
    its embeddings and LATTICE tree; see :mod:`retrievekit.core.demo_snapshot`), ``write_snapshot`` (a folder: take
    a new snapshot there instead of running the demo).

    Fast methods answer every question; LLM-driven ones (:data:`LLM_DRIVEN`) answer the first, with light settings.
    Each step shows a live progress line, each method its build and query time, and a table closes the run.

    Examples:
        >>> import tempfile
        >>> args = argparse.Namespace(methods=["bm25"], k=1, llm=None, work_dir=tempfile.mkdtemp(), questions=["BM25?"])
        >>> main(args)
        retrievekit demo: ...
        0
    """
    from retrievekit.core.threads import num_threads

    _quiet_model_loading()
    # 1. what to run
    methods = list(getattr(args, "methods", None) or [m for m in available_methods() if m not in DEMO_SKIP])
    snapshot_out = getattr(args, "write_snapshot", None)
    if snapshot_out:
        return _write_snapshot(Path(snapshot_out), methods)
    k = int(getattr(args, "k", 3) or 3)
    llm = getattr(args, "llm", DEFAULT_MODEL)  # None: --no-llm (the methods then use their default model)
    spec = served_llm_spec(args) if args is not None else None  # --llm CLIENT:MODEL@URL: a served LLM
    served = resolve_llm(spec) if spec is not None else None
    embedder = as_embedder(getattr(args, "embedder", None), where="--embedder")  # None: all-MiniLM-L6-v2
    questions = list(getattr(args, "questions", None) or DEMO_QUESTIONS)
    work = getattr(args, "work_dir", None)
    work_dir = Path(work) if work else demo_cache_dir()
    t_start = time.perf_counter()
    # 2. the corpus: the shipped snapshot, or the installed docs
    snapshot, source = _demo_corpus(getattr(args, "snapshot", True), methods)
    corpus = snapshot.corpus if snapshot is not None else build_docs_corpus()
    print(
        f"retrievekit demo: {len(corpus)} passages from retrievekit's own documentation ({source}); "
        f"index cache: {work_dir}\n"
        f"model calls use {num_threads()} CPU thread(s) (set RETRIEVEKIT_NUM_THREADS to change); LLM-driven methods "
        "answer the first question only, with light settings\n",
        flush=True,
    )
    skipped = [m for m in available_methods() if m in DEMO_SKIP and m not in methods]
    if skipped and not getattr(args, "methods", None):
        print(
            f"not shown (need a trained model, or are baselines/ablations; run them with --method): {', '.join(skipped)}\n"
        )
    # 3. every method: build, then ask
    contexts: dict[str, dict[str, list[str]]] = {}
    rows: list[tuple[str, float, float, int, int]] = []
    for n, method in enumerate(methods, 1):
        asked = questions[:1] if method in LLM_DRIVEN else questions
        options = DEMO_OPTIONS.get(method, {})
        setting = f"  [{', '.join(f'{k_}={v}' for k_, v in options.items())}]" if options else ""
        print(f"=== [{n}/{len(methods)}] {method}{setting}", flush=True)
        retriever, build_s = _build(
            method, corpus, dict(options), snapshot, served, llm or DEFAULT_MODEL, work_dir, embedder
        )
        query_s, calls, contexts[method] = _ask(method, retriever, asked, k, served)
        rows.append((method, build_s, query_s, len(asked), calls))
        print(flush=True)
    # 4. the LLM's answer and the closing table
    if llm:
        _closing_answer(llm, served, questions[0], "bm25" if "bm25" in methods else methods[0], contexts)
    print(f"{'method':<12} {'build s':>8} {'query s':>8} {'questions':>9} {'LLM calls':>9}")
    for method, b, qs, nq, c in rows:
        print(f"{method:<12} {b:8.1f} {qs:8.1f} {nq:9d} {c:9d}")
    print(f"\ndemo finished in {time.perf_counter() - t_start:.0f} s")
    return 0


def _write_snapshot(out: Path, methods: list[str]) -> int:
    """``retrievekit demo --write-snapshot DIR``: build the demo's methods over the installed docs and write the
    snapshot the demo ships (:func:`~retrievekit.core.demo_snapshot.build_snapshot`)."""
    corpus = build_docs_corpus()
    build_snapshot(out, corpus, methods=methods, options=DEMO_OPTIONS)
    print(f"snapshot of {len(corpus)} passages written to {out}")
    return 0
