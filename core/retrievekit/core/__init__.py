"""retrievekit core: framework-free algorithms, data types, indexes, model layer and evaluation.

Nothing under ``retrievekit.core`` imports LlamaIndex or LangChain; the
framework edges live in ``retrievekit.llama_index``, ``retrievekit.langchain``,
``retrievekit.langgraph`` and ``retrievekit.outlines``.

Examples:
    >>> from retrievekit.core import Passage, Trace
    >>> Passage(id="a", text="hello").id
    'a'
"""

from retrievekit.core.errors import (
    ConstraintError,
    EmptyCorpusError,
    EmptyQueryError,
    IndexFormatError,
    InvalidInputError,
    InvalidPathError,
    InvalidTextError,
    LLMOutputError,
    MissingDependencyError,
    ModelIntegrityError,
    RetrieveKitError,
)
from retrievekit.core.trace import Trace, TraceEvent
from retrievekit.core.types import DataObject, Passage, ScoredHit, Table, TableRow, ensure_text

__version__ = "0.1.0"

__all__ = [
    "ConstraintError",
    "DataObject",
    "EmptyCorpusError",
    "EmptyQueryError",
    "IndexFormatError",
    "InvalidInputError",
    "InvalidPathError",
    "InvalidTextError",
    "LLMOutputError",
    "MissingDependencyError",
    "ModelIntegrityError",
    "Passage",
    "RetrieveKitError",
    "ScoredHit",
    "Table",
    "TableRow",
    "Trace",
    "TraceEvent",
    "__version__",
    "ensure_text",
]
