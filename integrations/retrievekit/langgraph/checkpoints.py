"""Strict checkpoints for the iterative agent: a saved state is read back as data, never as code.

LangGraph's default serializer rebuilds any ``(module, name)`` a checkpoint names, so whoever can write to the
checkpoint store (a shared SQLite file, a database) could make ``get_state`` / ``invoke`` call ``os.system``. The
agent's state is plain JSON plus LangChain messages, so :func:`strict_checkpointer` gives the agent's checkpointer a
:class:`StrictCheckpointSerializer`: it writes msgpack as before, and reads only the types in
:data:`AGENT_STATE_TYPES`. Anything else (another type, ``pickle``, the legacy ``json`` encoding) raises
:class:`~retrievekit.core.errors.CheckpointError` before anything is imported or called.

Examples:
    >>> from langchain_core.messages import AIMessage
    >>> serde = StrictCheckpointSerializer()
    >>> serde.loads_typed(serde.dumps_typed({"messages": [AIMessage("hi")]}))["messages"][0].content
    'hi'
    >>> import ormsgpack
    >>> evil = ormsgpack.packb(ormsgpack.Ext(0, ormsgpack.packb(("os", "system", "echo pwned"))))
    >>> serde.loads_typed(("msgpack", evil))
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.CheckpointError: refused to load a checkpoint that names os.system, ...
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

import ormsgpack
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.serde.base import SerializerProtocol
from langgraph.checkpoint.serde.encrypted import EncryptedSerializer
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer

from retrievekit.core.errors import CheckpointError

__all__ = ["AGENT_STATE_TYPES", "StrictCheckpointSerializer", "strict_checkpointer"]

_MESSAGES = ("HumanMessage", "AIMessage", "SystemMessage", "ToolMessage", "ChatMessage", "FunctionMessage")
AGENT_STATE_TYPES: frozenset[tuple[str, str]] = frozenset(
    {(f"langchain_core.messages.{name[:-7].lower()}", name) for name in _MESSAGES}
    | {(f"langchain_core.messages.{name[:-7].lower()}", f"{name}Chunk") for name in _MESSAGES}
    | {
        ("langchain_core.messages.modifier", "RemoveMessage"),
        ("langgraph.types", "Send"),
        ("langgraph.types", "Interrupt"),
        ("langgraph.types", "Command"),
        ("langgraph.types", "Overwrite"),
        ("uuid", "UUID"),
        ("datetime", "datetime"),
        ("datetime", "date"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
    }
)
"""The ``(module, class)`` pairs a checkpoint of the agent may hold: LangChain messages (the transcript), the few
LangGraph control types (``Send``, ``Interrupt``, ``Command``) and plain values (UUIDs, dates)."""

_METHODS = frozenset({("datetime", "datetime", "fromisoformat")})
_EXT_DELTA = 7  # a delta snapshot: plain data around more extensions
_EXT_NAMED = frozenset({0, 1, 2, 3, 4, 5})  # (module, name, ...) constructors, methods and pydantic models


class StrictCheckpointSerializer(JsonPlusSerializer):
    """LangGraph's msgpack serializer, reading only :data:`AGENT_STATE_TYPES` (extra pairs with ``allowed=``).

    Writing is unchanged (msgpack; never pickle). Reading first walks the payload: a type or encoding outside the
    allow-list raises :class:`~retrievekit.core.errors.CheckpointError` naming it, before anything is imported.

    Examples:
        >>> StrictCheckpointSerializer().loads_typed(("pickle", b"..."))
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.CheckpointError: refused to load a checkpoint value encoded as 'pickle': ...
    """

    def __init__(self, allowed: Iterable[tuple[str, str]] = ()) -> None:
        self.allowed = AGENT_STATE_TYPES | frozenset((str(m), str(n)) for m, n in allowed)
        super().__init__(pickle_fallback=False, allowed_msgpack_modules=sorted(self.allowed))

    def with_msgpack_allowlist(self, extra_allowlist: Iterable[tuple[str, ...] | type]) -> JsonPlusSerializer:
        """The same serializer: the agent's state schema is fixed, so its allow-list is too."""
        return self

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        """Read one stored value after checking every type it names."""
        kind, payload = data
        if kind in ("null", "bytes", "bytearray"):
            return super().loads_typed(data)
        if kind != "msgpack":
            raise CheckpointError(
                f"refused to load a checkpoint value encoded as {kind!r}: the agent's checkpoints are msgpack data "
                "(a tampered or foreign checkpoint?)",
                kind=kind,
            )
        self._check(payload)
        return super().loads_typed(data)

    def _check(self, payload: bytes) -> None:
        """Raise :class:`CheckpointError` when ``payload`` names a type (or method) outside the allow-list."""
        refused: list[str] = []

        def hook(code: int, data: bytes) -> None:
            if code == _EXT_DELTA:
                ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
                return None
            if code not in _EXT_NAMED:
                refused.append(f"msgpack extension {code}")
                raise ValueError(refused[-1])
            tup = ormsgpack.unpackb(data, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
            named = isinstance(tup, (list, tuple)) and len(tup) >= 3 and all(isinstance(t, str) for t in tup[:2])
            key = (str(tup[0]), str(tup[1])) if named else ("?", "?")
            method_ok = code != 3 or (len(tup) > 3 and (*key, tup[3]) in _METHODS)
            if key not in self.allowed or not method_ok:
                refused.append(".".join(key) + (f".{tup[3]}" if code == 3 and len(tup) > 3 else ""))
                raise ValueError(refused[-1])
            return None

        try:
            ormsgpack.unpackb(payload, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)
        except Exception as e:
            if refused:
                raise CheckpointError(
                    f"refused to load a checkpoint that names {refused[0]}, which is not part of the agent's state "
                    "(a tampered or foreign checkpoint?); nothing was imported or run",
                    kind=refused[0],
                ) from None
            raise CheckpointError(f"the checkpoint value is not valid msgpack: {e}", kind="msgpack") from e


def strict_checkpointer(checkpointer: Any) -> Any:
    """``checkpointer`` reading with :class:`StrictCheckpointSerializer` (a shallow copy; the caller's is unchanged).

    A saver with LangGraph's default serializer, or an ``EncryptedSerializer`` around it, gets the strict one (inside
    the encryption). ``None`` / ``True`` / ``False`` (no checkpointer, or the parent graph's) and savers with a
    serializer of the caller's own are returned as they are.

    Examples:
        >>> from langgraph.checkpoint.memory import InMemorySaver
        >>> saver = InMemorySaver()
        >>> type(strict_checkpointer(saver).serde).__name__, type(saver.serde).__name__
        ('StrictCheckpointSerializer', 'JsonPlusSerializer')
    """
    if not isinstance(checkpointer, BaseCheckpointSaver):
        return checkpointer
    serde = checkpointer.serde
    if isinstance(serde, StrictCheckpointSerializer):
        return checkpointer
    strict: SerializerProtocol
    if isinstance(serde, EncryptedSerializer) and isinstance(serde.serde, JsonPlusSerializer):
        strict = EncryptedSerializer(serde.cipher, StrictCheckpointSerializer())
    elif isinstance(serde, JsonPlusSerializer):
        strict = StrictCheckpointSerializer()
    else:
        return checkpointer
    clone = copy.copy(checkpointer)
    clone.serde = strict
    return clone
