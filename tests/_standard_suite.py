"""langchain-tests' standard retriever suite over one retrievekit LangChain retriever, its boilerplate written once."""

from __future__ import annotations

from typing import Any

from langchain_tests.integration_tests import RetrieversIntegrationTests

FRUIT_QUERY = "fruit programming language river mountain"


class StandardSuite(RetrieversIntegrationTests):
    """A subclass (named ``Test...``) sets ``constructor``, ``query`` and ``k`` (None: the class's default) and
    either ``core`` (a module fixture may set it) or ``make_core()``; the suite builds ``constructor(retriever=core,
    k=k)``."""

    constructor: Any = None
    query: str = FRUIT_QUERY
    k: int | None = None
    core: Any = None

    def make_core(self) -> Any:
        return self.core

    @property
    def retriever_constructor(self) -> Any:
        return self.constructor

    @property
    def retriever_constructor_params(self) -> dict:
        params: dict[str, Any] = {"retriever": self.make_core()}
        if self.k is not None:
            params["k"] = self.k
        return params

    @property
    def retriever_query_example(self) -> str:
        return self.query
