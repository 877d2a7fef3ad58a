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
import tempfile
import time
from pathlib import Path

from retrievekit.core.retriever import MethodContext, available_methods, build_method
from retrievekit.core.trace import Trace
from retrievekit.core.types import Passage

__all__ = ["DEMO_QUESTIONS", "build_docs_corpus", "main"]

DEMO_QUESTIONS = [
    "How do I save a BM25 index to disk and open it again?",
    "Which embedding model is used by default and where does it come from?",
    "How are the rankings of several retrievers fused?",
    "What happens when a text is not valid UTF-8?",
]

# Methods that need a trained model or a GPU, and baselines / ablations of other methods, are not run by the demo
# unless asked for (``--method``).
_DEMO_SKIP = {"self-retrieval", "llm-rerank", "arm-no-mip", "arm-no-verify", "judge-rerank"}

# Lighter settings for the LLM-driven methods so the whole demo stays within a few minutes on 2 CPU cores
# (the methods' own defaults are the papers'; `retrievekit bench` uses those).
_DEMO_OPTIONS: dict[str, dict[str, object]] = {
    "iterative": {"max_turns": 2},
    "lattice": {"num_iters": 4, "score_max": 9, "append_child_titles": True},
    "arm": {"expand_ks": (3,)},
    "mindref": {"title_beams": 5, "passage_beams": 3},
}


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


def _answer_with_llm(llm_name: str, question: str, context: list[str]) -> tuple[str, Trace]:
    from retrievekit.core.llm.local import LocalLM

    lm = LocalLM.load(llm_name)
    trace = Trace()
    ctx = "\n\n".join(c[:600] for c in context)
    prompt = f"Answer the question in one or two sentences using only the context.\n\nContext:\n{ctx}\n\nQuestion: {question}"
    out = lm.complete(prompt, max_tokens=64, trace=trace)
    return out.text.strip(), trace


def main(args: argparse.Namespace | None = None) -> int:
    """Run the demo; ``args`` may carry ``methods`` (list), ``k`` (int), ``llm`` (name or None), ``work_dir``.

    Examples:
        >>> main(argparse.Namespace(methods=["bm25"], k=1, llm=None, work_dir=None, questions=None))  # doctest: +SKIP
        0
    """
    methods = list(getattr(args, "methods", None) or [m for m in available_methods() if m not in _DEMO_SKIP])
    k = int(getattr(args, "k", 3) or 3)
    llm = getattr(args, "llm", "smollm2")
    questions = list(getattr(args, "questions", None) or DEMO_QUESTIONS)
    work = getattr(args, "work_dir", None)
    work_dir = Path(work) if work else Path(tempfile.mkdtemp(prefix="retrievekit-demo-"))

    corpus = build_docs_corpus()
    print(f"retrievekit demo: {len(corpus)} passages from retrievekit's own documentation; index cache: {work_dir}\n")
    contexts: dict[str, list[str]] = {}
    for method in methods:
        t0 = time.perf_counter()
        ctx = MethodContext(
            corpus=corpus, work_dir=work_dir, llm=llm or "smollm2", options=_DEMO_OPTIONS.get(method, {})
        )
        retriever = build_method(method, ctx)
        build_s = time.perf_counter() - t0
        print(f"=== {method}  (built in {build_s:.1f}s)")
        for q in questions:
            trace = Trace()
            t1 = time.perf_counter()
            hits = retriever.search(q, k, trace=trace)
            dt = time.perf_counter() - t1
            print(f"Q: {q}   [{dt * 1000:.0f} ms, {trace.llm_calls} LLM calls]")
            for h in hits:
                print(f"   {h.rank + 1}. {h.score:7.3f}  {h.obj.title or h.id}")
            if not hits:
                print("   (no hits)")
            contexts.setdefault(q, [h.obj.text for h in hits])
        print()
    if llm:
        q = questions[0]
        print(f"=== answer with the local LLM ({llm}) over the {methods[0]} context")
        answer, trace = _answer_with_llm(llm, q, contexts.get(q, []))
        print(f"Q: {q}\nA: {answer}\n   [{trace.prompt_tokens} prompt + {trace.completion_tokens} completion tokens]")
    return 0
