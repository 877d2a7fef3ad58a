"""Build-time LLM work shared by both builders: summaries, a resumable journal, bounded concurrency.

* :class:`BuildJournal` appends every finished LLM result (a node summary, a document summary, a partition) to
  ``journal.jsonl`` in the build folder, flushed and fsynced; a restarted build reads it back and skips the work,
  so a crash mid-build loses no finished summary. Each entry is keyed by what produced it: the build's *scope*
  (the LLM's identity, the prompt templates, the build config and the embedder, :func:`build_scope`) and the
  entry's inputs (the children's texts, the document's text), so a build with another LLM, prompt, setting or
  corpus never reuses it. Lines of another journal format are ignored, with a warning.
* :func:`journaled_step` is a build stage as a step (:mod:`retrievekit.core.llm.calls`): the results the journal
  holds are reused, the rest are asked of the model in batches of :func:`step_batch` calls
  (:data:`ROUNDS_PER_BATCH` rounds of as many calls as may be in flight), each batch's replies read and journaled
  with one write as it comes back, under a tqdm bar; :func:`drive_build` sends it with the sync driver
  (:func:`~retrievekit.core.llm.drivers.drive`) at the build's concurrency, which keeps that many calls in flight
  within a batch: only a batch's end leaves slots idle, once every :data:`ROUNDS_PER_BATCH` rounds.
* :func:`centroid_summary` is the LLM-free summary (``TreeBuildConfig(summaries="extractive")``): the children's
  short texts nearest the group's centroid first, cut to the length of an LLM summary.
* :func:`summary_call` asks for one short node summary from its children's titles / first sentences (a
  ``"lattice.summary"`` chat call); :func:`read_summary` reads its reply: when the call failed or the reply holds
  nothing usable, an extractive label (the children's leading words) is used, counted and noted.
  :func:`summarize_children` is the two for one group, sent now.

Examples:
    >>> import tempfile, pathlib
    >>> j = BuildJournal(pathlib.Path(tempfile.mkdtemp()), scope="llm-a")
    >>> key = j.key("summary", ["Apples", "Bananas"])
    >>> j.put(key, "Fruit"); BuildJournal(j.folder, scope="llm-a").get(key)
    'Fruit'
    >>> BuildJournal(j.folder, scope="llm-b").key("summary", ["Apples", "Bananas"]) == key
    False
    >>> short_text("Aspirin thins the blood. It also relieves pain.", 100)
    'Aspirin thins the blood.'
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from retrievekit.core.errors import LLMUnavailableError
from retrievekit.core.llm.calls import ModelCall, Step
from retrievekit.core.llm.concurrency import llm_concurrency
from retrievekit.core.llm.drivers import drive
from retrievekit.core.llm.protocol import ChatLLM
from retrievekit.core.paths import ensure_folder
from retrievekit.core.trace import Trace
from retrievekit.core.types import DataObject

__all__ = [
    "BuildJournal",
    "build_scope",
    "centroid_summary",
    "drive_build",
    "llm_identity",
    "extractive_label",
    "journaled_step",
    "object_short_text",
    "read_summary",
    "short_text",
    "step_batch",
    "summarize_children",
    "summary_call",
]

R = TypeVar("R")
JOURNAL = "journal.jsonl"
JOURNAL_VERSION = 2
"""Journal line format (``{"v": 2, "key", "value"}``); lines of another version (keyed by node ids only) are ignored."""
_SENT = re.compile(r"(?<=[.!?])\s+")

SUMMARY_PROMPT = "{items}\n\nWhat topic do these items share? Answer with a short title of at most {words} words."


def short_text(text: str, max_chars: int) -> str:
    """First sentence of ``text`` (whitespace collapsed), cut at a word boundary to ``max_chars``.

    Examples:
        >>> short_text("a b c d e f", 5)
        'a b c'
    """
    t = " ".join(text.split())
    first = _SENT.split(t, maxsplit=1)[0]
    if len(first) <= max_chars:
        return first
    cut = first[: max_chars + 1]
    sp = cut.rfind(" ")
    return (cut[:sp] if sp > 0 else cut[:max_chars]).strip()


def object_short_text(obj: DataObject, max_chars: int) -> str:
    """An object's title (or its first sentence), cut to ``max_chars``.

    Examples:
        >>> from retrievekit.core.types import Passage
        >>> object_short_text(Passage(id="a", text="Body. More.", title="Title"), 50)
        'Title: Body.'
    """
    title = obj.title.strip() if obj.title else ""
    body = short_text(obj.text, max_chars)
    return short_text(f"{title}: {body}", max_chars) if title else body


def extractive_label(texts: Sequence[str], max_chars: int = 120) -> str:
    """A label without an LLM: the children's short texts joined with ``"; "``, cut to ``max_chars``.

    Examples:
        >>> extractive_label(["Apples", "Bananas"])
        'Apples; Bananas'
    """
    return short_text("; ".join(short_text(t, 40) for t in texts if t.strip()), max_chars) or "misc"


CHARS_PER_TOKEN = 4
"""Characters an extractive summary may take per token of ``summary_max_tokens`` (*ours*: about one English
token's worth, so it is as long as the LLM summary it stands in for)."""


def centroid_summary(texts: Sequence[str], vectors: np.ndarray, max_chars: int) -> str:
    """An extractive summary of a group: its members' short ``texts`` ordered by cosine to the centroid of their
    ``vectors`` (nearest first; ties by position), joined with ``"; "`` and cut at a word to ``max_chars``.

    Examples:
        >>> import numpy as np
        >>> vecs = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8]])
        >>> centroid_summary(["Apples grow on trees", "Fruit is sweet", "Bananas are yellow"], vecs, 40)
        'Fruit is sweet; Bananas are yellow'
    """
    x = np.asarray(vectors, dtype=np.float64)
    x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    centre = x.mean(0)
    near = np.round(x @ centre, 9)
    order = sorted(range(len(texts)), key=lambda i: (-near[i], i))
    joined = "; ".join(t for t in (" ".join(texts[i].split()) for i in order) if t)
    if len(joined) <= max_chars:
        return joined or "misc"
    cut = joined[: max_chars + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut[:max_chars]).rstrip(" ;") or "misc"


# Where a model keeps its name, in order; how deep adapters of adapters are followed.
_NAME_ATTRS = ("name", "model_name", "model", "model_id")
_WRAP_DEPTH = 4


def llm_identity(llm: Any) -> str:
    """A stable name for the model behind ``llm``, for keying build results: its class and its model name
    (``name``, ``model_name``, ``model`` or ``model_id``), then ``>`` and the same for the model it writes through:
    an adapter's wrapped ``llm`` (``as_chat_llm``), a judge's base chat model (its ``chat_model()``).

    Examples:
        >>> class LM:
        ...     name = "my-model"
        >>> llm_identity(LM()).endswith("LM:my-model")
        True
        >>> class Adapter:
        ...     def __init__(self, llm): self.llm = llm
        >>> llm_identity(Adapter(LM())).endswith("Adapter:>retrievekit.core.lattice.summarize.LM:my-model")
        True
    """
    parts = []
    for _ in range(_WRAP_DEPTH):  # an adapter of an adapter of a model; a cycle stops here
        cls = type(llm)
        name = next((v for a in _NAME_ATTRS if isinstance(v := getattr(llm, a, None), str) and v), "")
        parts.append(f"{cls.__module__}.{cls.__qualname__}:{name}")
        llm = _wrapped_model(llm)
        if llm is None:
            break
    return ">".join(parts)


def _wrapped_model(llm: Any) -> Any:
    """The model ``llm`` hands its calls to (None when it writes itself)."""
    if callable(getattr(llm, "chat_model", None)):  # a judge (ChatDelegate, a trained Judge): its base writes
        try:
            return llm.chat_model()  # loads a lazy base once; the build needs it for its summaries anyway
        except Exception:  # a base that fails to load: the build's own calls meet (and count) that failure
            return None
    inner = getattr(llm, "llm", None)
    return None if inner is None or isinstance(inner, str) or inner is llm else inner


def build_scope(llm: Any, prompts: Sequence[str], config: Any, embedder: Any = None) -> str:
    """The sha256 of what every result of one build depends on: the LLM's identity, the prompt templates, the
    build config (a dataclass or a mapping) and, when given, the embedder's identity (top-down partitions fall back
    to, and are repaired with, leaf vectors).

    Examples:
        >>> build_scope(None, ["p"], {"a": 1}) == build_scope(None, ["p"], {"a": 2})
        False
        >>> build_scope(None, ["p"], {}) == build_scope(None, ["p"], {}, embedder=object())
        False
    """
    cfg = vars(config) if hasattr(config, "__dataclass_fields__") else dict(config or {})
    parts: list[Any] = [llm_identity(llm), list(prompts), cfg]
    if embedder is not None:
        parts.append(llm_identity(embedder))
    blob = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class BuildJournal:
    """Append-only JSONL of finished build results (``{"v", "key", "value"}``), reused on restart.

    Args:
        folder: the build folder (created); None keeps the journal in memory only.
        scope: what every entry depends on (:func:`build_scope`); part of every :meth:`key`.

    Examples:
        >>> BuildJournal(None).get("x") is None
        True
    """

    def __init__(self, folder: Path | None, *, scope: str = "") -> None:
        self.folder = Path(folder) if folder is not None else None
        self.scope = scope
        self._values: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._loaded: set[str] = set()  # keys read back from the file
        self._hits: set[str] = set()  # ... that this build has asked for
        self.ignored = 0
        if self.folder is not None:
            ensure_folder(self.folder, "tree build folder")
            self._read(self.folder / JOURNAL)

    def _read(self, path: Path) -> None:
        """Load the entries of ``path`` (if any); warn once when lines of another format are ignored."""
        if not path.is_file():
            return
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    d = json.loads(line)
                    if d.get("v") != JOURNAL_VERSION:
                        self.ignored += 1  # an older journal, keyed by node ids only: never trusted
                        continue
                    self._values[str(d["key"])] = d["value"]
                    self._loaded.add(str(d["key"]))
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue  # a line torn by a crash: its work is simply redone
        if self.ignored:
            warnings.warn(
                f"{path}: ignoring {self.ignored} build journal entries of another format (this retrievekit writes "
                f"version {JOURNAL_VERSION}, keyed by the LLM, prompts, settings and inputs); their work is redone",
                RuntimeWarning,
                stacklevel=3,
            )

    def key(self, kind: str, *inputs: Any) -> str:
        """The key of a ``kind`` result computed from ``inputs`` within this journal's scope.

        Examples:
            >>> BuildJournal(None, scope="s").key("summary", ["a"]).startswith("summary:")
            True
        """
        blob = json.dumps([self.scope, kind, *inputs], ensure_ascii=False, default=str)
        return f"{kind}:{hashlib.sha256(blob.encode('utf-8')).hexdigest()}"

    def get(self, key: str) -> Any:
        """The stored value of ``key`` (None when absent).

        Examples:
            >>> BuildJournal(None).get("k") is None
            True
        """
        with self._lock:
            if key in self._loaded:
                self._hits.add(key)
            return self._values.get(key)

    @property
    def reused(self) -> int:
        """How many entries read back from the file this build has reused (entries of another scope are not).

        Examples:
            >>> BuildJournal(None).reused
            0
        """
        with self._lock:
            return len(self._hits)

    def put(self, key: str, value: Any) -> None:
        """Store ``value`` and append it to the journal file (flush + fsync).

        Examples:
            >>> j = BuildJournal(None); j.put("k", 1); j.get("k")
            1
        """
        self.put_many([(key, value)])

    def put_many(self, items: Sequence[tuple[str, Any]]) -> None:
        """Store each ``(key, value)`` and append them to the journal file in one write, flushed and fsynced once
        (a batch's results: one fsync, not one per result; a line torn by a crash is redone).

        Examples:
            >>> j = BuildJournal(None); j.put_many([("a", 1), ("b", 2)]); j.get("b"), len(j)
            (2, 2)
        """
        if not items:
            return
        with self._lock:
            self._values.update(items)
            if self.folder is not None:
                lines = [{"v": JOURNAL_VERSION, "key": key, "value": value} for key, value in items]
                with open(self.folder / JOURNAL, "a", encoding="utf-8") as f:
                    f.write("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))
                    f.flush()
                    os.fsync(f.fileno())

    def __len__(self) -> int:
        return len(self._values)


ROUNDS_PER_BATCH = 16
"""How many rounds of calls (``max_concurrency`` each) a build stage sends as one batch (*ours*: 16). Within a batch
the driver keeps every slot busy; at its end the slots wait for the batch's last replies, staggered by the client's
time to send each call (``benchmarks/build_throughput.py``: 838 level-1 summaries through a scripted server with 64
slots and 1 s a call kept 0.71 of the slots busy at one round a batch, 0.86 at 8, 0.89 at 16, 0.91 as one batch). A
crash loses at most one batch's replies: they are journaled as the batch comes back."""


def step_batch(llm: Any, max_concurrency: int) -> int:
    """The calls a build stage sends as one batch to ``llm``: :data:`ROUNDS_PER_BATCH` rounds of
    :func:`~retrievekit.core.llm.concurrency.llm_concurrency` calls, or one call at a time when only one may be in
    flight (nothing to overlap: every reply is journaled at once).

    Examples:
        >>> step_batch(object(), 4), step_batch(object(), 1)
        (64, 1)
    """
    n = llm_concurrency(llm, max_concurrency)
    return n if n <= 1 else n * ROUNDS_PER_BATCH


def _bar(total: int, progress: bool, desc: str) -> Any:
    """A tqdm bar over ``total`` results (None without ``progress`` or results)."""
    if not progress or not total:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc or "lattice build", unit="call")


def journaled_step(
    journal: BuildJournal,
    keys: Sequence[str],
    *,
    ask: Callable[[int], ModelCall],
    read: Callable[[int, Any], Any],
    reuse: Callable[[Any], Any] = lambda v: v,
    batch: int = 1,
    progress: bool = False,
    desc: str = "",
) -> Step[list[Any]]:
    """One result per key, as a step: a value the journal holds under ``keys[i]`` is reused (``reuse(value)``, None
    when it is not usable), the others are asked of the model (``ask(i)``: one call per distinct key) in batches of
    ``batch`` calls, and each reply is read (``read(i, reply)``: a reply, or the failure as an exception value) and
    journaled as soon as its batch comes back, so a restarted build redoes nothing finished. A batch is best a few
    rounds (:func:`step_batch`): the driver keeps its calls in flight side by side, and a failure that stops the build
    loses no more than the batch's replies. The bar, when shown, counts every result, reused ones first.

    Examples:
        >>> from retrievekit.core.llm.base import ChatLLMBase
        >>> from retrievekit.core.llm.protocol import Completion
        >>> class Counting(ChatLLMBase):
        ...     calls = 0
        ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        ...         self.calls += 1
        ...         self._record(trace, 5, 1)
        ...         return Completion("B")
        >>> j = BuildJournal(None); j.put(j.key("s", "a"), "A")
        >>> step = journaled_step(j, [j.key("s", t) for t in "abb"], ask=lambda i: ModelCall.chat("s", "abb"[i]),
        ...                       read=lambda i, reply: reply.text)
        >>> llm = Counting(); drive(step, llm), llm.calls, j.get(j.key("s", "b"))
        (['A', 'B', 'B'], 1, 'B')
    """
    out: list[Any] = [None] * len(keys)
    pending: dict[str, list[int]] = {}  # a key not journaled -> the results it gives (asked once)
    for i, key in enumerate(keys):
        got = reuse(journal.get(key))
        if got is None:
            pending.setdefault(key, []).append(i)
        else:
            out[i] = got
    asks = list(pending.items())
    bar = _bar(len(keys), progress, desc)
    try:
        if bar is not None:
            bar.update(len(keys) - sum(len(at) for _, at in asks))
        size = max(1, int(batch))
        for start in range(0, len(asks), size):
            chunk = asks[start : start + size]
            replies = yield [ask(at[0]) for _, at in chunk]
            values: list[Any] = []
            try:
                values.extend(read(at[0], reply) for (_, at), reply in zip(chunk, replies, strict=True))
            finally:  # the replies read before one that stops the build are kept too
                journal.put_many([(key, value) for (key, _), value in zip(chunk, values, strict=False)])
            for (_, at), value in zip(chunk, values, strict=True):
                for i in at:
                    out[i] = value
            if bar is not None:
                bar.update(sum(len(at) for _, at in chunk))
    finally:
        if bar is not None:
            bar.close()
    return out


def drive_build(step: Step[R], llm: Any, *, into: Trace, calls: Trace, max_concurrency: int) -> R:
    """Run a build stage's ``step`` with the sync driver, ``max_concurrency`` calls in flight at most (capped by the
    model's own budget), its calls recorded in ``calls`` and then merged into the build's trace ``into`` (stage times
    left out: the calls overlapped), also when the stage stops on a failure.

    Examples:
        >>> from retrievekit.core.llm.base import ChatLLMBase
        >>> from retrievekit.core.llm.protocol import Completion
        >>> class Ok(ChatLLMBase):
        ...     def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        ...         self._record(trace, 5, 1)
        ...         return Completion("ok")
        >>> def step():
        ...     replies = yield [ModelCall.chat("s", "a"), ModelCall.chat("s", "b")]
        ...     return [r.text for r in replies]
        >>> build = Trace()
        >>> drive_build(step(), Ok(), into=build, calls=Trace(), max_concurrency=2), build.llm_calls
        (['ok', 'ok'], 2)
    """
    try:
        return drive(step, llm, trace=calls, max_concurrency=max_concurrency)
    finally:
        calls.stage_seconds.clear()
        into.merge(calls)


def _clean_summary(text: str, max_chars: int) -> str:
    for line in text.splitlines():
        line = line.strip().lstrip("-*#>0123456789.) ").strip().strip('"').strip()
        if line.lower().startswith(("topic:", "description:", "summary:")):
            line = line.split(":", 1)[1].strip()
        if line:
            return line[:max_chars]
    return ""


def summary_call(texts: Sequence[str], *, max_tokens: int, words: int = 12) -> ModelCall:
    """The call asking for one short summary (a title of at most ``words`` words) of a group from its children's
    short ``texts``.

    Examples:
        >>> call = summary_call(["Apples", "Bananas"], max_tokens=20)
        >>> call.purpose, call.max_tokens, call.messages[0].content.splitlines()[:2]
        ('lattice.summary', 20, ['- Apples', '- Bananas'])
    """
    items = "\n".join(f"- {t}" for t in texts)
    return ModelCall.chat("lattice.summary", SUMMARY_PROMPT.format(items=items, words=words), max_tokens=max_tokens)


def read_summary(
    reply: Any, texts: Sequence[str], *, trace: Trace | None = None, stats: dict[str, int] | None = None
) -> str:
    """The summary in ``reply`` (the reply to :func:`summary_call`, or its failure as an exception value); an
    extractive label of ``texts`` when the call failed (noted in ``trace``) or the reply holds nothing usable,
    counted in ``stats["extractive_summaries"]``. A model that is down or too slow (``LLMUnavailableError``) is not a
    reply: it stops the build (which resumes later).

    Examples:
        >>> from retrievekit.core.errors import LLMOutputError
        >>> from retrievekit.core.llm.protocol import Completion
        >>> read_summary(Completion("Topic: Fruit"), ["Apples"])
        'Fruit'
        >>> stats = {}
        >>> read_summary(LLMOutputError("empty reply"), ["Apples", "Bananas"], stats=stats), stats
        ('Apples; Bananas', {'extractive_summaries': 1})
    """
    if isinstance(reply, LLMUnavailableError):
        raise reply
    text = ""
    if isinstance(reply, BaseException):  # a failing reply must not kill a long build: label extractively, count it
        if trace is not None:
            trace.note(
                "fallback", f"summary call failed ({type(reply).__name__}: {str(reply)[:120]}); extractive label"
            )
    else:
        text = _clean_summary(str(getattr(reply, "text", "") or ""), 400)
    if not text:
        if stats is not None:
            stats["extractive_summaries"] = stats.get("extractive_summaries", 0) + 1
        return extractive_label(texts)
    return text


def summarize_children(
    llm: ChatLLM,
    texts: Sequence[str],
    *,
    max_tokens: int,
    words: int = 12,
    trace: Trace | None = None,
    stats: dict[str, int] | None = None,
) -> str:
    """One short summary of a group from its children's short ``texts``, sent now through the sync driver
    (:func:`summary_call`, :func:`read_summary`: an extractive label on failure).

    Examples:
        >>> from retrievekit.core.fakes import FixedReplyLLM
        >>> summarize_children(FixedReplyLLM("- Fruits and trees"), ["Apples", "Bananas"], max_tokens=20)
        'Fruits and trees'
    """

    def step() -> Step[str]:
        (reply,) = yield [summary_call(texts, max_tokens=max_tokens, words=words)]
        return read_summary(reply, texts, trace=trace, stats=stats)

    return drive(step(), llm, trace=trace)
