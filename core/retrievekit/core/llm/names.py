"""One convention for every public entry point: ``llm`` is a model object, ``llm_name`` a registry name.

``llm=`` takes a loaded model (a :class:`~retrievekit.core.llm.protocol.ChatLLM`, a
:class:`~retrievekit.core.llm.protocol.ScoringLM` such as ``LocalLM.load("smollm2")``, or a framework LLM at the
framework edges); ``llm_name=`` the name of a model in :data:`~retrievekit.core.llm.models.MODEL_REGISTRY`
(``"smollm2"``, ``"qwen0.5b"``) to load. :func:`split_llm_argument` reads the pair and keeps the former
``llm="smollm2"`` spelling working for one release, with a :class:`DeprecationWarning`.

Examples:
    >>> split_llm_argument(None, "smollm2", where="f")
    (None, 'smollm2')
"""

from __future__ import annotations

import warnings
from typing import Any, TypeVar

__all__ = ["split_llm_argument"]

N = TypeVar("N", bound="str | None")


def split_llm_argument(llm: Any, llm_name: N, *, where: str, stacklevel: int = 3) -> tuple[Any, N | str]:
    """``(llm, llm_name)`` of a call to ``where``: a string ``llm`` is the deprecated spelling of ``llm_name``.

    A string ``llm`` warns (:class:`DeprecationWarning`, attributed ``stacklevel`` frames up: the caller of the
    function that calls this) and is returned as the name, with no model object; anything else is returned as is.

    Examples:
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     split_llm_argument("qwen0.5b", "smollm2", where="create_mindref")
        (None, 'qwen0.5b')
        >>> caught[0].category.__name__, str(caught[0].message)
        ('DeprecationWarning', "create_mindref(llm='qwen0.5b') is deprecated: pass llm_name='qwen0.5b' (llm= takes a model object)")
    """
    if isinstance(llm, str):
        warnings.warn(
            f"{where}(llm={llm!r}) is deprecated: pass llm_name={llm!r} (llm= takes a model object)",
            DeprecationWarning,
            stacklevel=stacklevel,
        )
        return None, llm
    return llm, llm_name
