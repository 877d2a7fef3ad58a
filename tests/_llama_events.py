"""Collect LlamaIndex instrumentation events during a block (for tests that check the trace events an edge emits)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.instrumentation.event_handlers import BaseEventHandler


class Collect(BaseEventHandler):
    """An event handler that keeps every event it sees."""

    events: list[Any] = []

    @classmethod
    def class_name(cls) -> str:
        return "Collect"

    def handle(self, event: Any, **kwargs: Any) -> None:
        self.events.append(event)


@contextmanager
def collected_events() -> Iterator[list[Any]]:
    """The events the root dispatcher emits inside the block; the handler is removed afterwards."""
    handler = Collect()
    handler.events = []
    root = get_dispatcher()
    root.add_event_handler(handler)
    try:
        yield handler.events
    finally:
        root.event_handlers.remove(handler)
