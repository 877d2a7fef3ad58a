"""retrievekit core: framework-free algorithms, data types, indexes, model layer and evaluation.

Nothing under ``retrievekit.core`` imports LlamaIndex or LangChain; the
framework edges live in ``retrievekit.llama_index``, ``retrievekit.langchain``,
``retrievekit.langgraph`` and ``retrievekit.outlines``.

Examples:
    >>> from retrievekit.core import Passage, Trace
    >>> Passage(id="a", text="hello").id
    'a'
"""

from retrievekit.core import errors, types
from retrievekit.core.errors import *  # noqa: F403 - every error and warning class: errors.__all__
from retrievekit.core.trace import Trace, TraceEvent
from retrievekit.core.types import *  # noqa: F403 - the data types: types.__all__

__version__ = "0.1.0"

__all__ = [
    "Trace",
    "TraceEvent",
    "__version__",
]
__all__ += types.__all__
__all__ += errors.__all__
