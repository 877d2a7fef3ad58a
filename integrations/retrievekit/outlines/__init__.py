"""retrievekit for Outlines: trie and suffix-array (FM-index role) constraints as logits processors.

Examples:
    >>> from retrievekit.core.index.token_trie import TokenTrie
    >>> from retrievekit.outlines import TrieLogitsProcessor, prefix_allowed_tokens_fn
    >>> fn = prefix_allowed_tokens_fn(TokenTrie([[4]], eos_token_id=0), prompt_length=0)
    >>> TrieLogitsProcessor(TokenTrie([[4]], eos_token_id=0)).eos_token_id
    0
"""

from retrievekit.core.edge import require_extras

require_extras(  # without the extra: one typed error naming it, not a ModuleNotFoundError
    __name__,
    {"outlines": 'pip install "retrievekit[local]"', "torch": 'pip install "retrievekit[local]" torch==2.13.0'},
)

from retrievekit.outlines import processors  # noqa: E402 - after the check
from retrievekit.outlines.processors import *  # noqa: E402, F403 - the package's API is the processors module's

__all__ = list(processors.__all__)
