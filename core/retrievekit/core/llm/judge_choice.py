"""Which relevance judge to use: typed values (:class:`JudgeSpec`), the judge registry (:data:`JUDGE_KINDS`), and the
one resolver (:func:`resolve_judge`).

A judge is named by a typed value -- ``JudgeSpec.trained(folder)``, ``JudgeSpec.zero_shot()``,
``JudgeSpec.cosine()``, ``JudgeSpec.served()``, ``JudgeSpec.oracle(noise, seed)``, or ``JudgeSpec(name)`` for a judge
a package registers -- or by the ``--judge`` string of the command line and of option ``judge_dir``, which
:func:`parse_judge` reads, once, into the same value: an existing folder is a trained judge; ``zero-shot``,
``cosine``, ``served`` and a registered judge's name are those kinds; ``oracle[:S[:SEED]]`` the gold-label oracle;
any other string the folder of a trained judge. :func:`build_judge` builds the judge a value names for a method's
:class:`~retrievekit.core.registry.MethodContext` through :data:`JUDGE_KINDS`, so the model layer and the methods
never import the judge package.

Examples:
    >>> parse_judge("served") == JudgeSpec.served(), parse_judge("oracle:0.2:7")
    (True, JudgeSpec(kind='oracle', path=None, noise=0.2, seed=7))
    >>> parse_judge(None) is None, parse_judge("runs/judge").kind
    (True, 'trained')
    >>> JudgeSpec("served-ish")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.UnknownNameError: unknown judge 'served-ish'; known: cosine, served, trained, zero-shot (or oracle[:S[:SEED]])
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from retrievekit.core.errors import IndexFormatError, InvalidInputError, UnknownNameError
from retrievekit.core.plugins import Registry
from retrievekit.core.registry import MethodContext

__all__ = [
    "JUDGES",
    "JUDGE_ENTRY_POINT_GROUP",
    "JUDGE_KINDS",
    "ORACLE",
    "JudgeSpec",
    "build_judge",
    "load_judge_by_path",
    "parse_judge",
    "parse_oracle",
    "register_judge",
    "resolve_judge",
]

ORACLE = "oracle"
"""The ``--judge`` value (``oracle``, ``oracle:S`` or ``oracle:S:SEED``)."""

JUDGE_ENTRY_POINT_GROUP = "retrievekit.judges"
"""Entry-point group of judges in installed packages: ``name = "module:factory"``, ``factory(ctx)`` returning a
:class:`~retrievekit.core.llm.protocol.RelevanceJudge` for a :class:`~retrievekit.core.registry.MethodContext`."""

JUDGES: dict[str, str] = {
    "trained": "retrievekit.core.judge:load_judge",
    "zero-shot": "retrievekit.core.judge:Judge.zero_shot",
    "cosine": "retrievekit.core.judge.cosine:CosineJudge",
    "served": "retrievekit.core.judge.served:ServedJudge.from_spec",
}
"""How ``--judge`` builds each built-in kind of judge: ``module:attribute`` paths into the judge package, imported on
first use (as the method registry names its factories), so the model layer and the methods never import it."""

JUDGE_KINDS: Registry[Any] = Registry(
    "judge",
    JUDGE_ENTRY_POINT_GROUP,
    unknown="unknown {kind} {name!r}; known: {known} (or oracle[:S[:SEED]])",
    builtin=JUDGES,
)
"""The judges (a :class:`~retrievekit.core.plugins.Registry`): the built-in loaders of :data:`JUDGES`, the judges
registered with :func:`register_judge`, and the entry points of :data:`JUDGE_ENTRY_POINT_GROUP`."""


def register_judge(name: str, factory: Any) -> None:
    """Make ``--judge NAME`` (and ``JudgeSpec(NAME)``) build ``factory(ctx)``: a relevance judge for a method's
    :class:`~retrievekit.core.registry.MethodContext` (``ctx.llm``, ``ctx.take_embedder()``, ``ctx.options``).

    Examples:
        >>> class Half:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.5] * len(candidates)
        >>> register_judge("half", lambda ctx: Half())
        >>> type(resolve_judge("half")).__name__
        'Half'
        >>> JUDGE_KINDS.unregister("half")
    """
    if name in JUDGES or name == ORACLE:
        raise InvalidInputError(f"{name!r} is a built-in judge; register yours under another name")
    JUDGE_KINDS.register(name, factory)


def load_judge_by_path(kind: str) -> Any:
    """The loader :data:`JUDGE_KINDS` holds for ``kind``, imported now (a built-in's module is looked up at call
    time, so a test can put a scripted judge package in ``sys.modules``).

    Examples:
        >>> load_judge_by_path("trained").__name__
        'load_judge'
    """
    return JUDGE_KINDS.get(kind)


def parse_oracle(spec: object) -> tuple[float, int] | None:
    """``(noise, seed)`` of an oracle spec (``oracle``, ``oracle:S``, ``oracle:S:SEED``); None for anything else.

    Raises:
        InvalidInputError: ``oracle:...`` with a noise outside ``[0, 1]`` or a seed that is not an integer.

    Examples:
        >>> parse_oracle("oracle"), parse_oracle("oracle:0.4:7"), parse_oracle(None)
        ((0.0, 0), (0.4, 7), None)
        >>> parse_oracle("oracle:2")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --judge oracle:S needs a noise S in [0, 1] (and optionally :SEED, an integer), got 'oracle:2'
    """
    if isinstance(spec, JudgeSpec):
        return (spec.noise, spec.seed) if spec.kind == ORACLE else None
    if not isinstance(spec, str) or spec.split(":", 1)[0] != ORACLE:
        return None
    parts = spec.split(":")
    try:
        noise = float(parts[1]) if len(parts) > 1 else 0.0
        seed = int(parts[2]) if len(parts) > 2 else 0
        ok = len(parts) <= 3 and 0.0 <= noise <= 1.0
    except ValueError:
        ok = False
    if not ok:
        raise InvalidInputError(
            f"--judge oracle:S needs a noise S in [0, 1] (and optionally :SEED, an integer), got {spec!r}"
        )
    return noise, seed


@dataclass(frozen=True)
class JudgeSpec:
    """Which judge to use, as a value: ``kind`` (``trained``, ``zero-shot``, ``cosine``, ``served``, ``oracle`` or a
    registered judge's name), ``path`` (a trained judge's folder), ``noise`` and ``seed`` (the oracle's).

    Examples:
        >>> JudgeSpec.trained("runs/judge").label, JudgeSpec.oracle(0.25).label, JudgeSpec.zero_shot().label
        ('runs/judge', 'oracle:0.25', 'zero-shot')
        >>> JudgeSpec.oracle(1.5)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: JudgeSpec.oracle needs a noise in [0, 1] and an integer seed, got noise=1.5, seed=0
    """

    kind: str
    path: str | None = None
    noise: float = 0.0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind != ORACLE and (not isinstance(self.kind, str) or self.kind not in JUDGE_KINDS):
            raise JUDGE_KINDS.unknown_name(self.kind)
        if (self.kind == "trained") != (self.path is not None and bool(str(self.path).strip())):
            raise InvalidInputError(f"JudgeSpec: a trained judge, and only one, names its folder (kind={self.kind!r})")
        good_noise = isinstance(self.noise, (int, float)) and math.isfinite(self.noise) and 0.0 <= self.noise <= 1.0
        if not good_noise or isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidInputError(
                f"JudgeSpec.oracle needs a noise in [0, 1] and an integer seed, got noise={self.noise!r}, "
                f"seed={self.seed!r}"
            )

    @classmethod
    def trained(cls, path: str | Path) -> JudgeSpec:
        """A trained judge's folder (``retrievekit train-judge``'s output).

        Examples:
            >>> JudgeSpec.trained("runs/judge").path
            'runs/judge'
        """
        return cls("trained", path=str(path))

    @classmethod
    def zero_shot(cls) -> JudgeSpec:
        """The untrained ``Judge.zero_shot`` of the method's ``llm``."""
        return cls("zero-shot")

    @classmethod
    def oracle(cls, noise: float = 0.0, seed: int = 0) -> JudgeSpec:
        """The gold-label oracle with ``noise`` (built by the benchmark harness alone: it reads the qrels).

        Examples:
            >>> JudgeSpec.oracle(0.2, 7).label
            'oracle:0.2:7'
        """
        return cls(ORACLE, noise=float(noise) if isinstance(noise, int) else noise, seed=seed)

    @classmethod
    def cosine(cls) -> JudgeSpec:
        """The embedding-cosine judge of the method's embedder."""
        return cls("cosine")

    @classmethod
    def served(cls) -> JudgeSpec:
        """The method's served ``llm`` (``CLIENT:MODEL@URL``) as a pointwise Yes/No judge."""
        return cls("served")

    @property
    def label(self) -> str:
        """The value as ``--judge`` writes it.

        Examples:
            >>> JudgeSpec.oracle().label, JudgeSpec.served().label
            ('oracle', 'served')
        """
        if self.kind == "trained":
            return str(self.path)
        if self.kind == ORACLE:
            parts = (
                [ORACLE]
                + ([f"{self.noise:g}"] if self.noise or self.seed else [])
                + ([str(self.seed)] if self.seed else [])
            )
            return ":".join(parts)
        return self.kind


def parse_judge(value: object) -> JudgeSpec | None:
    """The :class:`JudgeSpec` a ``--judge`` value names (the module docstring gives the rules); None for no judge
    (None or a blank string); a :class:`JudgeSpec` as it is.

    Raises:
        InvalidInputError: a value of another type, or an ``oracle:...`` string that does not parse.

    Examples:
        >>> parse_judge("zero-shot"), parse_judge("  ")
        (JudgeSpec(kind='zero-shot', path=None, noise=0.0, seed=0), None)
        >>> parse_judge(3)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a judge is a JudgeSpec, a judge kind's name or a trained judge's folder, got int 3
    """
    if value is None or isinstance(value, JudgeSpec):
        return value
    if not isinstance(value, (str, Path)):
        raise InvalidInputError(
            f"a judge is a JudgeSpec, a judge kind's name or a trained judge's folder, got {type(value).__name__} "
            f"{str(value)[:40]}"
        )
    text = str(value).strip()
    if not text:
        return None
    if Path(text).exists():
        return JudgeSpec.trained(text)  # a folder wins over a kind of the same name
    oracle = parse_oracle(text)
    if oracle is not None:
        return JudgeSpec.oracle(*oracle)
    if text != "trained" and text in JUDGE_KINDS:
        return JudgeSpec(text)
    return JudgeSpec.trained(text)


def _harness_only(spec: JudgeSpec) -> InvalidInputError:
    return InvalidInputError(
        f"--judge {spec.label} reads the dataset's gold labels, so only the benchmark harness can build it "
        f"(retrievekit bench, or run_benchmark with options={{'judge_dir': {spec.label!r}}})"
    )


def _trained(spec: JudgeSpec) -> Any:
    """The trained judge of ``spec.path``; a folder that does not exist is an unknown judge (a misspelt kind?)."""
    try:
        return load_judge_by_path("trained")(str(spec.path))
    except IndexFormatError as e:
        if Path(str(spec.path)).exists():
            raise
        raise UnknownNameError(
            f"unknown judge {spec.path!r}: no such trained judge folder, and no judge kind of that name (known: "
            f"{', '.join(JUDGE_KINDS.names())}, oracle[:S[:SEED]])",
            kind="judge",
            name=str(spec.path),
            known=JUDGE_KINDS.names(),
        ) from e


def build_judge(value: object, ctx: MethodContext) -> Any:
    """The relevance judge ``value`` (a :class:`JudgeSpec` or a ``--judge`` string) names, built for ``ctx``: a trained
    judge loaded from its folder, the zero-shot or served judge of ``ctx.llm``, the cosine judge of ``ctx``'s
    embedder, a registered judge's ``factory(ctx)``; None for no judge. The oracle is the harness's alone.

    Raises:
        InvalidInputError: the oracle (the harness builds it), or what was built is no judge.

    Examples:
        >>> build_judge("oracle:0.2", MethodContext(corpus=[]))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: --judge oracle:0.2 reads the dataset's gold labels, so only the benchmark harness can build it (retrievekit bench, or run_benchmark with options={'judge_dir': 'oracle:0.2'})
    """
    spec = parse_judge(value)
    if spec is None:
        return None
    if spec.kind == ORACLE:
        raise _harness_only(spec)
    if spec.kind == "trained":
        judge = _trained(spec)
    elif spec.kind in ("zero-shot", "served"):
        judge = load_judge_by_path(spec.kind)(ctx.llm)
    elif spec.kind == "cosine":
        judge = load_judge_by_path("cosine")(ctx.take_embedder(), load_base=ctx.load_llm)
    else:
        judge = JUDGE_KINDS.get(spec.kind)(ctx)
    if not hasattr(judge, "score_relevance"):
        raise InvalidInputError(f"the judge loaded from {spec.label} has no score_relevance(query, candidates)")
    return judge


def resolve_judge(judge: Any = None, judge_dir: str | Path | None = None, *, llm: Any = None) -> Any:
    """The judge to use: ``judge`` when it is a judge (it has ``score_relevance``), else the judge ``judge`` or
    ``judge_dir`` names (a :class:`JudgeSpec` or a ``--judge`` string, read by :func:`parse_judge` and built by
    :func:`build_judge` over ``llm``), else the zero-shot judge of ``llm`` (a loaded ``LocalLM`` or a model's name;
    None: the default model). (The rerankers give a chat LLM without logits, a served one, to
    :func:`~retrievekit.core.lattice.listwise.resolve_reranking_judge` instead.)

    Used by the LlamaIndex / LangChain reranker edges.

    Examples:
        >>> class Half:
        ...     def score_relevance(self, query, candidates, *, trace=None):
        ...         return [0.5] * len(candidates)
        >>> isinstance(resolve_judge(Half()), Half)
        True
        >>> resolve_judge(object())
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: judge must implement score_relevance (or name a judge: a JudgeSpec, a judge kind, a trained judge's folder), got object
    """
    if judge is not None and hasattr(judge, "score_relevance"):
        return judge
    if judge is not None and not isinstance(judge, (JudgeSpec, str, Path)):
        raise InvalidInputError(
            "judge must implement score_relevance (or name a judge: a JudgeSpec, a judge kind, a trained judge's "
            f"folder), got {type(judge).__name__}"
        )
    spec = parse_judge(judge if judge is not None else judge_dir) or JudgeSpec.zero_shot()
    return build_judge(spec, MethodContext(corpus=[], llm=llm))
