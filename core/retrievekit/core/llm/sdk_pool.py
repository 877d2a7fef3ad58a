"""How many sync calls at once the OpenAI SDK's client carries safely: its connection pool's keep-alive limit.

The OpenAI SDK's sync client sends through an httpx connection pool that keeps at most 100 idle connections alive
(``httpx.Limits(max_connections=1000, max_keepalive_connections=100)``). httpcore 1.0.9's sync pool closes an idle
connection whenever it holds more connections than that limit, even one it has just handed to a waiting request
(encode/httpcore#1110): that request then fails with "Bad file descriptor" or, when its socket was already being
read, waits out the full read timeout. More than 100 sync calls in flight through one client (LATTICE over 200
threads sends up to 400) hit it now and then.

So the sync driver sends at most :func:`keepalive_limit` of a model's requests at once through such a client
(:meth:`~retrievekit.core.llm.served.ServedChatLLM.bound_sync_calls`); the others wait for a place, within the
model's ``max_concurrency``. A client built with a larger pool (``http_client=httpx.Client(limits=...)``) is read
and bounded by its own limit. Awaited calls go through retrievekit's own transport and are not bounded here.

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

from typing import Any

__all__ = ["SDK_KEEPALIVE", "keepalive_limit"]

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
    http = getattr(client, "_client", None)
    pool = getattr(getattr(http, "_transport", None), "_pool", None)
    limit = getattr(pool, "_max_keepalive_connections", None)
    return int(limit) if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0 else SDK_KEEPALIVE
