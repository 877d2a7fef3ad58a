"""Small shared corpora for unit tests (imported by conftest's ``small_corpus`` fixture and by test modules)."""

from __future__ import annotations

from retrievekit.core.types import Passage

FRUIT = [
    Passage(id="apple", text="Apples are red or green fruits that grow on trees in orchards.", title="Apple"),
    Passage(id="banana", text="Bananas are long yellow tropical fruits rich in potassium.", title="Banana"),
    Passage(id="python", text="Python is a programming language used for data science and scripting.", title="Python"),
    Passage(id="rust", text="Rust is a systems programming language focused on memory safety.", title="Rust"),
    Passage(id="everest", text="Mount Everest is the highest mountain on Earth, in the Himalayas.", title="Everest"),
    Passage(
        id="nile", text="The Nile is a major river in northeastern Africa flowing into the Mediterranean.", title="Nile"
    ),
]
