"""The ``--llm`` arguments of every command (``retrievekit bench`` and ``demo``, the benchmark scripts).

``--llm`` takes a local model's registry name (loaded in-process), ``none``, or a served LLM written
``CLIENT:MODEL@URL`` (:mod:`retrievekit.core.llm.served_spec`); ``--llm-timeout`` and ``--llm-max-concurrency`` set
the served LLM's request timeout and requests in flight.

Examples:
    >>> p = argparse.ArgumentParser(); add_llm_arguments(p, default=None, help="LLM")
    >>> p.parse_args(["--llm", "qwen0.5b"]).llm
    'qwen0.5b'
"""

from __future__ import annotations

import argparse
from typing import Any

from retrievekit.core.errors import InvalidInputError
from retrievekit.core.llm.models import DEFAULT_MODEL, MODEL_REGISTRY
from retrievekit.core.llm.served import STRUCTURED_OUTPUT_MODES
from retrievekit.core.llm.served_spec import ServedLLMSpec, parse_served_spec

__all__ = ["LLM_CHOICES", "add_llm_arguments", "llm_argument", "served_llm_spec", "served_settings"]

LLM_CHOICES = (DEFAULT_MODEL, *sorted(name for name in MODEL_REGISTRY if name != DEFAULT_MODEL))
"""Local models ``--llm`` names (:data:`~retrievekit.core.llm.models.MODEL_REGISTRY`)."""


def llm_argument(value: str) -> str:
    """The ``--llm`` value: a local model's registry name, ``none``, or a served LLM ``CLIENT:MODEL@URL``.

    Examples:
        >>> llm_argument("qwen0.5b"), llm_argument("openai:qwen@http://127.0.0.1:8080/v1")
        ('qwen0.5b', 'openai:qwen@http://127.0.0.1:8080/v1')
        >>> llm_argument("gpt")
        Traceback (most recent call last):
        ...
        argparse.ArgumentTypeError: 'gpt' is neither a local model (smollm2, qwen0.5b, qwen1.5b, none) nor a served LLM CLIENT:MODEL@URL (e.g. openai:smollm2@http://127.0.0.1:8080/v1)
    """
    if value in LLM_CHOICES or value.lower() == "none":
        return value
    try:
        if parse_served_spec(value) is not None:
            return value
    except InvalidInputError as e:
        raise argparse.ArgumentTypeError(str(e)) from e
    raise argparse.ArgumentTypeError(
        f"{value!r} is neither a local model ({', '.join(LLM_CHOICES)}, none) nor a served LLM CLIENT:MODEL@URL "
        "(e.g. openai:smollm2@http://127.0.0.1:8080/v1)"
    )


def add_llm_arguments(parser: argparse.ArgumentParser, *, default: str | None, help: str) -> None:
    """``--llm`` (:func:`llm_argument`), ``--llm-timeout`` and ``--llm-max-concurrency`` (a served LLM's request
    timeout and requests in flight).

    Examples:
        >>> p = argparse.ArgumentParser(); add_llm_arguments(p, default=None, help="LLM")
        >>> a = p.parse_args(["--llm", "openai:m@http://127.0.0.1:8080/v1", "--llm-timeout", "120"])
        >>> a.llm, a.llm_timeout, a.llm_max_concurrency
        ('openai:m@http://127.0.0.1:8080/v1', 120.0, 4)
    """
    parser.add_argument(
        "--llm",
        type=llm_argument,
        default=default,
        metavar="{" + ",".join(LLM_CHOICES) + ",CLIENT:MODEL@URL}",
        help=help + "; a served LLM is openai:MODEL@URL (LangChain ChatOpenAI) or openai-like:MODEL@URL "
        "(LlamaIndex OpenAILike)",
    )
    parser.add_argument(
        "--llm-timeout", type=float, default=60.0, help="served LLM: seconds one request may take (default: 60)"
    )
    parser.add_argument(
        "--llm-max-concurrency", type=int, default=4, help="served LLM: requests in flight at once (default: 4)"
    )
    parser.add_argument(
        "--llm-structured-output",
        choices=STRUCTURED_OUTPUT_MODES,
        default="auto",
        help="served LLM: how JSON is asked for (default: auto, the server's JSON-schema mode where the client "
        "supports it; prompt: the schema in the prompt)",
    )


def served_settings(args: argparse.Namespace) -> dict[str, Any] | None:
    """The served LLM's settings that change results or cost (for a run's records and result), or None.

    Examples:
        >>> a = argparse.Namespace(llm="openai:m@http://127.0.0.1:8080/v1", llm_timeout=60.0,
        ...                        llm_max_concurrency=1, llm_structured_output="prompt")
        >>> served_settings(a)
        {'timeout': 60.0, 'max_concurrency': 1, 'structured_output': 'prompt'}
    """
    spec = served_llm_spec(args)
    if spec is None:
        return None
    return {
        "timeout": spec.policy.timeout,
        "max_concurrency": spec.max_concurrency,
        "structured_output": spec.structured_output,
    }


def served_llm_spec(args: argparse.Namespace) -> ServedLLMSpec | None:
    """The served LLM ``--llm`` names, with ``--llm-timeout`` / ``--llm-max-concurrency`` /
    ``--llm-structured-output``, or None when it names a local model (or none). Either is an ``llm=`` argument of
    :func:`~retrievekit.core.llm.resolve.resolve_llm`.

    Examples:
        >>> served_llm_spec(argparse.Namespace(llm="qwen0.5b")) is None
        True
        >>> served_llm_spec(argparse.Namespace(llm="openai:m@http://127.0.0.1:8080/v1", llm_timeout=5)).policy.timeout
        5.0
    """
    return parse_served_spec(
        getattr(args, "llm", None),
        timeout=getattr(args, "llm_timeout", None),
        max_concurrency=getattr(args, "llm_max_concurrency", None),
        structured_output=getattr(args, "llm_structured_output", None),
    )
