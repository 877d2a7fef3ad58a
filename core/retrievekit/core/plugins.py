"""The one shape of every pluggable part: :class:`Registry`, a name -> factory table with one entry-point group.

retrievekit has eight kinds of pluggable parts, and each is one :class:`Registry` (the guide: ``docs/plugins.md``):

============================  ===================================  =============================================
kind                          entry-point group                    where
============================  ===================================  =============================================
method                        ``retrievekit.methods``              ``retrievekit.core.registry``
dataset                       ``retrievekit.datasets``             ``retrievekit.core.eval.datasets.registry``
local model                   ``retrievekit.models``               ``retrievekit.core.llm.models``
served-LLM client             ``retrievekit.llms``                 ``retrievekit.core.llm.served_spec``
LLM adapter                   ``retrievekit.llm_adapters``         ``retrievekit.core.llm.resolve``
embedder adapter              ``retrievekit.embedders``            ``retrievekit.core.index.as_embedder``
vector store kind             ``retrievekit.stores``               ``retrievekit.core.index.store_kinds``
judge                         ``retrievekit.judges``               ``retrievekit.core.llm.judge_hooks``
============================  ===================================  =============================================

A registry holds what code registers (:meth:`Registry.register`: the value itself, or a lazy ``"module:attr"`` path
imported when it is first asked for) and lists what installed packages declare as entry points of its group
(``[project.entry-points."retrievekit.<kind>"]``, ``name = "module:attr"``) without importing them; an entry point is
loaded on first use, once. A name it does not know is an :class:`~retrievekit.core.errors.UnknownNameError` that
lists the names it knows.

Examples:
    >>> colours = Registry("colour", "retrievekit.colours")
    >>> colours.register("red", lambda: "#f00")
    >>> colours.get("red")(), colours.names(), "red" in colours
    ('#f00', ['red'], True)
    >>> colours.get("blue")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.UnknownNameError: unknown colour 'blue'; known: red
"""

from __future__ import annotations

import importlib
import importlib.metadata
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, TypeVar

from retrievekit.core.errors import InvalidInputError, MissingDependencyError, UnknownNameError

__all__ = ["Registry", "load_path", "spec_check"]

T = TypeVar("T")
_MISSING: Any = object()


def load_path(path: str, *, where: str = "") -> Any:
    """The object a ``"module:attr"`` path names (``attr`` may be dotted: ``"pkg.mod:Class.method"``), imported now.

    Raises:
        MissingDependencyError: the module cannot be imported.
        InvalidInputError: the path is not ``module:attr``, or the module has no such attribute.

    Examples:
        >>> load_path("os.path:join")("a", "b")
        'a/b'
        >>> load_path("os.path:nope")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: 'os.path:nope' names nothing: module 'posixpath' has no attribute 'nope'
    """
    module, sep, attr = path.partition(":")
    label = where or repr(path)
    if not sep or not module or not attr:
        raise InvalidInputError(f"{label}: a plugin is written 'module:attribute', got {path!r}")
    try:
        found: Any = importlib.import_module(module)
    except ImportError as e:
        raise MissingDependencyError(module, "install the package that provides it", f"{label}: {e}") from e
    try:
        for part in attr.split("."):
            found = getattr(found, part)
    except AttributeError as e:
        raise InvalidInputError(f"{label} names nothing: {e}") from e
    return found


def spec_check(spec_type: type[T], group: str, *, named: bool = True) -> Callable[[str, Any], T]:
    """A registry's ``check`` for entry points that name a spec object: it must be a ``spec_type`` and (``named``)
    carry the entry point's name in its ``name``.

    Examples:
        >>> from collections import namedtuple
        >>> Spec = namedtuple("Spec", "name")
        >>> check = spec_check(Spec, "retrievekit.specs")
        >>> check("a", Spec("a"))
        Spec(name='a')
        >>> check("a", Spec("b"))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: entry point a (group retrievekit.specs) declares the spec 'b'; the two names must be the same
    """
    what = spec_type.__name__.removesuffix("Spec").lower() or "spec"

    def check(name: str, value: Any) -> T:
        where = f"entry point {name} (group {group})"
        if not isinstance(value, spec_type):
            raise InvalidInputError(f"{where} is a {type(value).__name__}, not a {spec_type.__name__}")
        declared = getattr(value, "name", name)
        if named and declared != name:
            raise InvalidInputError(f"{where} declares the {what} {declared!r}; the two names must be the same")
        return value

    return check


class Registry(Generic[T]):
    """A name -> factory (or spec) table of one kind of pluggable part, with the entry-point group ``group``.

    Args:
        kind: what a name stands for, in messages (``"method"``, ``"vector store kind"``).
        group: the entry-point group installed packages declare theirs in (``retrievekit.<kind>``).
        unknown: the message of an unknown name, formatted with ``kind``, ``name`` and ``known`` (the known names,
            comma-separated).
        check: ``check(name, value) -> value``, applied to what an entry point loads (e.g. that it is a spec of
            the right type carrying the entry point's name); it raises a typed error.
        broken: the error type of an entry point whose module raises while it is imported.
        builtin: the built-in table (name -> value or ``"module:attr"`` path), read live at every lookup, after what
            code registers and before the entry points.
        hints: the ``pip install`` line of an entry point whose module cannot be imported, by name.

    Examples:
        >>> stores = Registry("store kind", "retrievekit.example", unknown="no {kind} {name!r} (known: {known})")
        >>> stores.register("memory", "builtins:dict")  # a lazy path: imported when asked for
        >>> stores.get("memory")(a=1), stores.names()
        ({'a': 1}, ['memory'])
        >>> stores["disk"]
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.UnknownNameError: no store kind 'disk' (known: memory)
    """

    def __init__(
        self,
        kind: str,
        group: str,
        *,
        unknown: str = "unknown {kind} {name!r}; known: {known}",
        check: Callable[[str, Any], T] | None = None,
        broken: type[InvalidInputError] = InvalidInputError,
        builtin: Mapping[str, T | str] | None = None,
        hints: Mapping[str, str] | None = None,
    ) -> None:
        self.kind, self.group, self.unknown = kind, group, unknown
        self._check, self._broken = check, broken
        self._builtin: Mapping[str, T | str] = builtin if builtin is not None else {}
        self._hints: Mapping[str, str] = hints or {}
        self._entries: dict[str, T | str] = {}
        self._loaded: dict[str, T] = {}
        self._lock = threading.RLock()

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.group!r}, {len(self)} names)"

    def register(self, name: str, factory: T | str) -> None:
        """Register ``factory`` (or a lazy ``"module:attr"`` path to it) under ``name``, replacing what was there.

        Examples:
            >>> r = Registry("thing", "retrievekit.things"); r.register("x", 1); r.register("x", 2); r.get("x")
            2
        """
        if not isinstance(name, str) or not name.strip():
            raise InvalidInputError(f"a {self.kind} is registered under a non-empty name, got {name!r}")
        with self._lock:
            self._entries[name] = factory
            self._loaded.pop(name, None)

    def unregister(self, name: str) -> None:
        """Forget what code registered as ``name`` (an entry point stays declared by its package).

        Examples:
            >>> r = Registry("thing", "retrievekit.things"); r.register("x", 1); r.unregister("x"); r.names()
            []
        """
        self.pop(name)

    def pop(self, name: str, default: Any = None) -> Any:
        """Forget ``name`` and return what was registered there (``default`` if nothing was), as ``dict.pop``.

        Examples:
            >>> r = Registry("thing", "retrievekit.things"); r.register("x", 1); r.pop("x"), r.pop("x")
            (1, None)
        """
        with self._lock:
            self._loaded.pop(name, None)
            return self._entries.pop(name, default)

    def entry_points(self) -> dict[str, importlib.metadata.EntryPoint]:
        """The entry points installed packages declare in :attr:`group`, by name (read from their metadata; nothing
        is imported), read anew at every call.

        Examples:
            >>> Registry("thing", "retrievekit.no-such-group").entry_points()
            {}
        """
        return {ep.name: ep for ep in importlib.metadata.entry_points(group=self.group)}

    def registered(self) -> dict[str, T]:
        """What code registered and the built-in table, by name (sorted; lazy paths imported), without reading the
        entry points (the fast path of a lookup that asks every part in turn).

        Examples:
            >>> r = Registry("thing", "retrievekit.things", builtin={"b": 2}); r.register("a", 1); r.registered()
            {'a': 1, 'b': 2}
        """
        with self._lock:
            names = sorted(set(self._entries) | set(self._builtin))
        return {name: self.get(name) for name in names}

    def names(self) -> list[str]:
        """Every name, sorted: registered by code or declared as an entry point.

        Examples:
            >>> r = Registry("thing", "retrievekit.things"); r.register("b", 1); r.register("a", 2); r.names()
            ['a', 'b']
        """
        with self._lock:
            registered = set(self._entries) | set(self._builtin)
        return sorted(registered | set(self.entry_points()))

    def get(self, name: str, default: Any = _MISSING) -> T:
        """What ``name`` stands for: registered by code (a lazy path is imported now, at every call), else an entry
        point (loaded once); ``default`` (as ``dict.get``), when given, for a name it does not know.

        Raises:
            UnknownNameError: no such name (and no ``default``); the message lists the known ones.

        Examples:
            >>> Registry("thing", "retrievekit.things").get("x")
            Traceback (most recent call last):
            ...
            retrievekit.core.errors.UnknownNameError: unknown thing 'x'; known: none
        """
        with self._lock:
            if name in self._entries or name in self._builtin:
                value = self._entries[name] if name in self._entries else self._builtin[name]
                return load_path(value, where=f"{self.kind} {name!r}") if isinstance(value, str) else value
            if name in self._loaded:
                return self._loaded[name]
        entry = self.entry_points().get(name) if isinstance(name, str) else None
        if entry is None:
            if default is not _MISSING:
                return default
            raise self.unknown_name(name)
        value = self._load_entry(entry)
        with self._lock:
            self._loaded[name] = value
        return value

    def unknown_name(self, name: object) -> UnknownNameError:
        """The error of an unknown ``name`` (a caller that refuses a name itself raises this too).

        Examples:
            >>> Registry("thing", "retrievekit.things").unknown_name("x").known
            ()
        """
        known = self.names()
        message = self.unknown.format(kind=self.kind, name=name, known=", ".join(known) or "none")
        return UnknownNameError(message, kind=self.kind, name=str(name), known=known)

    def load_all(self) -> dict[str, T]:
        """Every name's value, by name (sorted): an entry point whose module cannot be imported is left out (its
        framework is not installed, so nothing can be of its type).

        Examples:
            >>> r = Registry("thing", "retrievekit.things"); r.register("x", 1); r.load_all()
            {'x': 1}
        """
        out: dict[str, T] = {}
        for name in self.names():
            try:
                out[name] = self.get(name)
            except MissingDependencyError:
                continue
        return out

    def _load_entry(self, entry: importlib.metadata.EntryPoint) -> T:
        """The object ``entry`` names, with typed errors, checked by ``check``."""
        where = f"entry point {entry.name} = {entry.value!r} (group {self.group})"
        try:
            value = entry.load()
        except ImportError as e:
            hint = self._hints.get(entry.name, "reinstall the package that declares it")
            raise MissingDependencyError(entry.value.split(":")[0], hint, f"{where}: {e}") from e
        except AttributeError as e:
            raise InvalidInputError(f"{where} names nothing: {e}") from e
        except Exception as e:  # the module raised while it was imported: its bug, said as this kind's error
            raise self._broken(f"{where} failed to import ({type(e).__name__}: {str(e)[:300]})") from e
        return self._check(entry.name, value) if self._check is not None else value

    # Read as a mapping: ``name in registry``, ``registry[name]``, ``sorted(registry)``, ``registry[name] = value``.
    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        return name in self._entries or name in self._builtin or name in self.entry_points()

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __setitem__(self, name: str, value: T) -> None:
        self.register(name, value)

    def __delitem__(self, name: str) -> None:
        if self.pop(name, _MISSING) is _MISSING:
            raise self.unknown_name(name)
