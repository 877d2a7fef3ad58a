"""The arguments of the agent's two tools, and how a tool call is checked before it runs.

Fishing for Answers (mechanism 3) gives the agent two tools: ``chunk_search(query)`` adds the top results of a
search to the working set, ``chunk_delete(ids)`` removes chunks from it. :class:`ChunkSearchArgs` and
:class:`ChunkDeleteArgs` are their argument schemas (plain pydantic: a framework binds them as tool schemas);
:func:`parse_tool_call` turns a model's call into one of them, or raises
:class:`~retrievekit.core.errors.ToolCallError` saying what is wrong, which the agent reports back to the model
instead of failing.

Examples:
    >>> parse_tool_call("chunk_search", {"query": "  Lilu   demon "})
    ChunkSearchArgs(query='Lilu demon')
    >>> parse_tool_call("chunk_delete", {"ids": []})
    Traceback (most recent call last):
    ...
    retrievekit.core.errors.ToolCallError: invalid arguments for chunk_delete: ids: List should have at least 1 item after validation, not 0
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from retrievekit.core.errors import ToolCallError

__all__ = ["TOOL_NAMES", "ChunkDeleteArgs", "ChunkSearchArgs", "parse_tool_call", "unparsable_call"]

TOOL_NAMES: tuple[str, ...] = ("chunk_search", "chunk_delete")
"""The agent's tools, in the order they are bound."""


class ChunkSearchArgs(BaseModel):
    """Arguments of ``chunk_search``: one search query (runs of whitespace collapsed, 1 to 1000 characters).

    Examples:
        >>> ChunkSearchArgs(query="  Paris population ").query
        'Paris population'
    """

    query: str = Field(min_length=1, max_length=1000, description="a short search query")

    @field_validator("query")
    @classmethod
    def _strip(cls, v: str) -> str:
        v = " ".join(v.split())
        if not v:
            raise ValueError("query is empty")
        return v


class ChunkDeleteArgs(BaseModel):
    """Arguments of ``chunk_delete``: 1 to 100 chunk ids.

    Examples:
        >>> ChunkDeleteArgs(ids=["a", "b"]).ids
        ['a', 'b']
    """

    ids: list[str] = Field(min_length=1, max_length=100, description="ids of chunks to remove, as shown in [brackets]")


_SCHEMAS: dict[str, type[ChunkSearchArgs] | type[ChunkDeleteArgs]] = {
    "chunk_search": ChunkSearchArgs,
    "chunk_delete": ChunkDeleteArgs,
}


def parse_tool_call(name: str, args: Any, *, tools: Collection[str] = TOOL_NAMES) -> ChunkSearchArgs | ChunkDeleteArgs:
    """Validate one tool call of the model: ``name`` must be one of ``tools`` and ``args`` fit its schema.

    Raises:
        ToolCallError: ``kind="unknown_tool"`` for a tool that is not bound (e.g. ``chunk_delete`` when deletion is
            off), ``kind="invalid_tool_args"`` with the pydantic errors in ``errors`` for arguments that do not
            validate.

    Examples:
        >>> parse_tool_call("chunk_delete", {"ids": ["a"]})
        ChunkDeleteArgs(ids=['a'])
        >>> parse_tool_call("chunk_delete", {"ids": ["a"]}, tools=["chunk_search"])
        Traceback (most recent call last):
        ...
        retrievekit.core.errors.ToolCallError: unknown tool 'chunk_delete'; available: chunk_search
        >>> try:
        ...     parse_tool_call("chunk_search", {"q": "Paris"})
        ... except ToolCallError as e:
        ...     print(e.kind, "|", e.label, "|", e.errors)
        invalid_tool_args | invalid arguments | query: Field required
    """
    schema = _SCHEMAS.get(name) if name in tools else None
    if schema is None:
        raise ToolCallError(
            f"unknown tool {name!r}; available: {', '.join(sorted(tools))}",
            tool=str(name),
            kind="unknown_tool",
            label="unknown tool",
        )
    try:
        return schema.model_validate(args)
    except ValidationError as e:
        errs = "; ".join(f"{'.'.join(str(x) for x in er['loc']) or 'args'}: {er['msg']}" for er in e.errors())
        raise ToolCallError(
            f"invalid arguments for {name}: {errs}",
            tool=name,
            kind="invalid_tool_args",
            label="invalid arguments",
            arguments=args,
            errors=errs,
        ) from None


def unparsable_call(name: Any, detail: Any) -> ToolCallError:
    """The error for a tool call whose arguments did not parse at all (e.g. not JSON); ``detail`` says why.

    Examples:
        >>> e = unparsable_call("chunk_search", "bad json")
        >>> str(e), e.kind, e.label
        ("could not parse the arguments of 'chunk_search': bad json", 'invalid_tool_args', 'unparsable arguments')
    """
    return ToolCallError(
        f"could not parse the arguments of {name!r}: {detail}",
        tool=str(name),
        kind="invalid_tool_args",
        label="unparsable arguments",
    )
