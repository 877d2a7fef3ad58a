"""ARM test data: a small table + passage corpus around one multi-hop question, and a scripted chat-only LLM.

Shared by the ARM method tests (tests/core/arm) and the framework-edge tests (tests/integrations).
"""

from __future__ import annotations

from retrievekit.core.llm.base import ChatLLMBase
from retrievekit.core.llm.protocol import Completion
from retrievekit.core.types import Passage, Table

QUESTION = "Who created the series in which the character of Robert, played by actor Nonso Anozie, appeared?"


def corpus() -> list:
    return [
        Table(
            id="Nonso_Anozie_1",
            title="Nonso Anozie",
            header=("Year", "Title", "Role", "Notes"),
            rows=(
                ("2006", "Prime Suspect", "Robert"),  # ragged: padded
                ("2010", "Doctor Who", "Abrobagus", ""),
                ("2015", "", "", ""),
            ),
            metadata={
                "section_title": "Television",
                "cell_links": [(0, 1, "/wiki/Prime_Suspect"), (1, 1, "/wiki/Doctor_Who")],
            },
        ),
        Passage(
            id="/wiki/Prime_Suspect",
            title="Prime Suspect",
            text="Prime Suspect is a British police procedural television drama series devised by Lynda La Plante.",
        ),
        Passage(id="/wiki/Doctor_Who", title="Doctor Who", text="Doctor Who is a British science fiction programme."),
        Passage(id="/wiki/Solar", title="Solar panel", text="Solar panels convert sunlight into electricity."),
        Table(id="Wind_1", title="Wind farms", header=("Farm", "MW"), rows=(("Alpha", "10"), ("Beta",))),
        Table(id="Empty_1", title="Empty table", header=("a", "b"), rows=()),
    ]


class Chat(ChatLLMBase):
    """A chat-only LLM (no logits): scripted replies by prompt type."""

    def complete(self, prompt, *, max_tokens=256, temperature=0.0, trace=None):
        text = str(prompt)
        if trace is not None:
            trace.record_llm_call(10, 5)
        if "Objects:" in text:
            return Completion('{"objects": ["Prime Suspect", "Nonso Anozie - Television"]}', 10, 5)
        return Completion('{"keywords": [{"keyword": "Nonso Anozie", "similar": ["actor"]}]}', 10, 5)
