"""How many sync calls at once the OpenAI SDK's client carries safely: its connection pool's keep-alive limit.

The OpenAI SDK's sync client sends through an httpx connection pool that keeps at most 100 idle connections alive
(``httpx.Limits(max_connections=1000, max_keepalive_connections=100)``). httpcore 1.0.9's sync pool closes an idle
connection whenever it holds more connections than that limit, even one it has just handed to a waiting request
(encode/httpcore#1110): that request then fails with "Bad file descriptor" or, when its socket was already being
read, waits out the full read timeout. More than 100 sync calls in flight through one client (LATTICE over 200
threads sends up to 400) hit it now and then.

So the sync driver sends at most :func:`keepalive_limit` requests at once through such a pool
(:meth:`~retrievekit.core.llm.served.ServedChatLLM.bound_sync_calls`); the others wait for a place. The places are
the pool's, not a model's (:func:`pool_gate`): models whose SDK clients share one pool (one ``http_client`` given
to several models, from either framework or to a served judge) share them. A client built with a larger pool
(``http_client=httpx.Client(limits=...)``) is read and bounded by its own limit. Awaited calls go through
retrievekit's own transport and are not bounded here.

Examples:
    >>> import httpx, openai
    >>> keepalive_limit(openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="-"))
    100
    >>> wide = httpx.Client(limits=httpx.Limits(max_connections=1000, max_keepalive_connections=1000))
    >>> keepalive_limit(openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="-", http_client=wide))
    1000
    >>> keepalive_limit(object())  # not readable: the SDK's default
    100
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["SDK_KEEPALIVE", "keepalive_limit", "pool_gate"]

SDK_KEEPALIVE = 100
"""The OpenAI SDK's default keep-alive limit (``openai.DEFAULT_CONNECTION_LIMITS``), assumed where a client's own
cannot be read.

Examples:
    >>> SDK_KEEPALIVE
    100
"""


def keepalive_limit(client: Any) -> int:
    """The keep-alive limit of an OpenAI SDK sync ``client``'s connection pool, or :data:`SDK_KEEPALIVE` where it
    cannot be read (another transport, a future SDK).

    Examples:
        >>> import openai
        >>> keepalive_limit(openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="-"))
        100
    """
    limit = getattr(_pool_of(client), "_max_keepalive_connections", None)
    return int(limit) if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else SDK_KEEPALIVE


_GATES: weakref.WeakKeyDictionary[Any, threading.BoundedSemaphore] = weakref.WeakKeyDictionary()
_GATES_LOCK = threading.Lock()


def pool_gate(client: Any) -> threading.BoundedSemaphore:
    """The places of an OpenAI SDK sync ``client``'s connection pool: a semaphore of :func:`keepalive_limit`
    places, one per pool, so that every model sending through that pool (one ``http_client`` given to several
    models) holds the same ones; a semaphore of its own where the pool cannot be read.

    Examples:
        >>> import httpx, openai
        >>> shared = httpx.Client()  # httpx keeps 20 connections alive by default
        >>> a = openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="-", http_client=shared)
        >>> b = openai.OpenAI(base_url="http://127.0.0.1:8081/v1", api_key="-", http_client=shared)
        >>> pool_gate(a) is pool_gate(b), pool_gate(a)._value
        (True, 20)
        >>> pool_gate(a) is pool_gate(openai.OpenAI(base_url="http://127.0.0.1:8080/v1", api_key="-"))
        False
    """
    pool = _pool_of(client)
    if pool is None:
        return threading.BoundedSemaphore(keepalive_limit(client))
    with _GATES_LOCK:
        gate = _GATES.get(pool)
        if gate is None:
            gate = _GATES[pool] = threading.BoundedSemaphore(keepalive_limit(client))
        return gate


def _pool_of(client: Any) -> Any:
    """The httpcore connection pool an OpenAI SDK sync client sends through, or None (another transport)."""
    http = getattr(client, "_client", None)
    pool = getattr(getattr(http, "_transport", None), "_pool", None)
    try:
        weakref.ref(pool)  # the gates are keyed by it, weakly
    except TypeError:  # None, or not the pool this module knows
        return None
    return pool
