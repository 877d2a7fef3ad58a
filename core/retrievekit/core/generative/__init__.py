"""Generative retrieval: the LM writes titles and passages under corpus constraints (MindRef).

Examples:
    >>> from retrievekit.core.generative import MindRefConfig
    >>> MindRefConfig().passage_tokens
    150
"""

from retrievekit.core.generative.mindref import MindRef, MindRefConfig, TitleHit, build_mindref, first_sentence_title

__all__ = ["MindRef", "MindRefConfig", "TitleHit", "build_mindref", "first_sentence_title"]
