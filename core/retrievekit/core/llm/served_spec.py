"""A served LLM named on the command line: ``openai:MODEL@URL`` (and ``openai-like:MODEL@URL``).

``retrievekit bench --llm openai:smollm2@http://127.0.0.1:8080/v1`` runs a method through LangChain's
``ChatOpenAI`` against that server; ``openai-like:`` goes through LlamaIndex's ``OpenAILike`` instead. The API key
is read from ``OPENAI_API_KEY`` (``"-"`` when unset: local servers take any key). The framework integrations
register the clients as entry points of group :data:`LLM_ENTRY_POINT_GROUP`, so the core imports no framework; the
table is :data:`SERVED_CLIENTS`, a :class:`~retrievekit.core.plugins.Registry` (``docs/plugins.md``).

Examples:
    >>> spec = parse_served_spec("openai:qwen@http://127.0.0.1:8080/v1")
    >>> spec.client, spec.model, spec.base_url
    ('openai', 'qwen', 'http://127.0.0.1:8080/v1')
    >>> parse_served_spec("qwen0.5b") is None  # a local model's registry name
    True
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.call_policy import CallPolicy
from retrievekit.core.plugins import Registry

_T = TypeVar("_T")

__all__ = [
    "LLM_ENTRY_POINT_GROUP",
    "SERVED_CLIENTS",
    "ServedLLMSpec",
    "load_served_llm",
    "parse_served_spec",
    "split_served_spec",
]

LLM_ENTRY_POINT_GROUP = "retrievekit.llms"
"""Entry-point group of served-LLM factories: ``name = "module:function"``, the function taking a
:class:`ServedLLMSpec` and returning a ``ChatLLM``."""

_SPEC_RE = re.compile(r"^(?P<client>[a-z][a-z0-9-]*):(?P<model>[^@\s]+)@(?P<url>https?://\S+)$")
_INSTALL = {
    "openai": "pip install langchain-openai",
    "openai-like": "pip install llama-index-llms-openai-like",
}

SERVED_CLIENTS: Registry[Any] = Registry(
    "served-LLM client", LLM_ENTRY_POINT_GROUP, unknown="unknown {kind} {name!r}; available: {known}", hints=_INSTALL
)
"""The served-LLM clients (a :class:`~retrievekit.core.plugins.Registry`): ``factory(spec) -> ChatLLM`` by client
name, the framework edges' through the entry points of :data:`LLM_ENTRY_POINT_GROUP`."""


@dataclass(frozen=True)
class ServedLLMSpec:
    """Which served LLM to use, and how.

    Attributes:
        client: the registered client (``"openai"``: LangChain ``ChatOpenAI``; ``"openai-like"``: LlamaIndex
            ``OpenAILike``).
        model: the model name the server expects.
        base_url: the OpenAI-compatible base URL (``http://host:port/v1``).
        api_key: from ``OPENAI_API_KEY``, else ``"-"``.
        policy: timeout and retries of one request.
        max_concurrency: requests in flight at once.
        structured_output: how JSON is asked for (``auto``, ``json_schema``, ``json_object``, ``prompt``;
            :mod:`retrievekit.core.llm.served`).

    Examples:
        >>> ServedLLMSpec("openai", "m", "http://127.0.0.1:8080/v1").label
        'openai:m@http://127.0.0.1:8080/v1'
    """

    client: str
    model: str
    base_url: str
    api_key: str = "-"
    policy: CallPolicy = CallPolicy()
    max_concurrency: int = 4
    structured_output: str = "auto"

    @property
    def label(self) -> str:
        """The spec as written on the command line (no key)."""
        return f"{self.client}:{self.model}@{self.base_url}"

    def adapter_options(self) -> dict[str, Any]:
        """The settings a framework adapter takes from the spec (``policy``, ``max_concurrency``,
        ``structured_output``), for ``Adapter(client, **spec.adapter_options())``.

        Examples:
            >>> sorted(ServedLLMSpec("openai", "m", "http://127.0.0.1:8080/v1").adapter_options())
            ['max_concurrency', 'policy', 'structured_output']
        """
        return {
            "policy": self.policy,
            "max_concurrency": self.max_concurrency,
            "structured_output": self.structured_output,
        }

    def client_limits(self) -> dict[str, Any]:
        """The spec's call policy as a framework client's own settings (``timeout``, ``max_retries``: LangChain's
        ``ChatOpenAI`` and LlamaIndex's ``OpenAILike`` both take them).

        Examples:
            >>> ServedLLMSpec("openai", "m", "http://127.0.0.1:8080/v1", policy=CallPolicy(timeout=5.0)).client_limits()
            {'timeout': 5.0, 'max_retries': 2}
        """
        return {"timeout": self.policy.timeout, "max_retries": self.policy.max_retries}

    def adapted(self, adapter: Callable[..., _T], client: Any) -> _T:
        """``adapter(client, **self.adapter_options())``, the adapter remembering this spec (``served_spec``): how
        every edge's served client is built.

        Examples:
            >>> class Adapter:
            ...     def __init__(self, client, **options):
            ...         self.client, self.options = client, options
            >>> a = ServedLLMSpec("openai", "m", "http://127.0.0.1:8080/v1").adapted(Adapter, "chat")
            >>> a.client, sorted(a.options), a.served_spec.label
            ('chat', ['max_concurrency', 'policy', 'structured_output'], 'openai:m@http://127.0.0.1:8080/v1')
        """
        built: Any = adapter(client, **self.adapter_options())
        built.served_spec = self
        return cast(_T, built)


def split_served_spec(text: str, *, what: str, form: str, example: str) -> tuple[str, str, str]:
    """``(client, model, url)`` of a ``CLIENT:MODEL@URL`` spec (the one grammar of served LLMs and embedders).

    Raises:
        InvalidInputError: ``text`` is not of that form with an http(s) URL; the message names ``what`` it should
            be, its ``form`` and an ``example``.

    Examples:
        >>> split_served_spec("openai:m@http://h:1/v1/", what="x", form="CLIENT:MODEL@URL", example="e")
        ('openai', 'm', 'http://h:1/v1')
        >>> split_served_spec("m@h", what="a served thing", form="CLIENT:MODEL@URL", example="openai:m@http://h/v1")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a served thing is written CLIENT:MODEL@URL with an http(s) URL, e.g. openai:m@http://h/v1; got 'm@h'
    """
    m = _SPEC_RE.match(text.strip())
    if m is None:
        raise InvalidInputError(f"{what} is written {form} with an http(s) URL, e.g. {example}; got {text!r}")
    return m.group("client"), m.group("model"), m.group("url").rstrip("/")


def parse_served_spec(
    text: str | None,
    *,
    timeout: float | None = None,
    max_concurrency: int | None = None,
    structured_output: str | None = None,
) -> ServedLLMSpec | None:
    """The :class:`ServedLLMSpec` ``text`` names, or None when it is not of the form ``CLIENT:MODEL@URL``.

    Examples:
        >>> parse_served_spec("openai-like:qwen@http://gpu:8000/v1", timeout=30).policy.timeout
        30.0
        >>> parse_served_spec("openai:m@ftp://x")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: a served LLM is written CLIENT:MODEL@URL with an http(s) URL, e.g. openai:smollm2@http://127.0.0.1:8080/v1; got 'openai:m@ftp://x'
    """
    if text is None or ":" not in text or "@" not in text:
        return None
    client, model, url = split_served_spec(
        text, what="a served LLM", form="CLIENT:MODEL@URL", example="openai:smollm2@http://127.0.0.1:8080/v1"
    )
    policy = CallPolicy(timeout=timeout) if timeout is not None else CallPolicy()
    return ServedLLMSpec(
        client=client,
        model=model,
        base_url=url,
        api_key=os.environ.get("OPENAI_API_KEY") or "-",
        policy=policy,
        max_concurrency=int(max_concurrency) if max_concurrency is not None else 4,
        structured_output=structured_output or "auto",
    )


def load_served_llm(spec: ServedLLMSpec | str) -> Any:
    """The ``ChatLLM`` for ``spec``, built by the client registered under its name (entry point group
    :data:`LLM_ENTRY_POINT_GROUP`). Nothing is sent to the server yet.

    Examples:
        >>> load_served_llm("nope:m@http://127.0.0.1:1/v1")
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.UnknownNameError: unknown served-LLM client 'nope'; available: openai, openai-like
    """
    parsed = parse_served_spec(spec) if isinstance(spec, str) else spec
    if parsed is None:
        raise InvalidInputError(f"not a served LLM (CLIENT:MODEL@URL): {spec!r}")
    factory = SERVED_CLIENTS.get(parsed.client)
    return factory(parsed)
