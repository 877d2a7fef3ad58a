"""LangChain edge: bad constructor arguments raise retrievekit's typed error, not pydantic's ``ValidationError``.

LangChain components are pydantic models, so a check that raises
:class:`~retrievekit.core.errors.InvalidInputError` while the model is built (a validator, ``model_post_init``)
reaches the caller wrapped in a ``ValidationError``, and a field of the wrong type raises pydantic's own error.
:class:`TypedInit`, mixed in first, gives the caller the check's own error, or an ``InvalidInputError`` naming the
component and each field pydantic refused (the ``ValidationError`` is its ``__cause__``). Both are ``ValueError``
subclasses, as ``ValidationError`` is.

Examples:
    >>> from pydantic import BaseModel
    >>> class Box(TypedInit, BaseModel):
    ...     size: int = 1
    >>> Box(size="big")
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.InvalidInputError: Box(): size: Input should be a valid integer, unable to parse string as an integer
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from retrievekit.core.errors import InvalidInputError, RetrieveKitError

__all__ = ["TypedInit"]


class TypedInit:
    """Mixin (first among the bases) turning a construction ``ValidationError`` into retrievekit's typed error.

    Examples:
        >>> from pydantic import BaseModel, model_validator
        >>> class Checked(TypedInit, BaseModel):
        ...     k: int = 1
        ...     def model_post_init(self, __context):
        ...         if self.k < 1:
        ...             raise InvalidInputError(f"k must be a positive integer, got {self.k}")
        >>> Checked(k=0)
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.InvalidInputError: k must be a positive integer, got 0
    """

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as error:
            raise _typed(type(self).__name__, error) from error


def _typed(owner: str, error: ValidationError) -> RetrieveKitError:
    """The check's own error when a retrievekit check raised it, else one ``InvalidInputError`` naming each field."""
    for detail in error.errors():
        raised = detail.get("ctx", {}).get("error")
        if isinstance(raised, RetrieveKitError):
            return raised
    parts = [
        f"{'.'.join(str(p) for p in detail['loc'])}: {detail['msg']}" if detail["loc"] else detail["msg"]
        for detail in error.errors()
    ]
    return InvalidInputError(f"{owner}(): {'; '.join(parts)}")
