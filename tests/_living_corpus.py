"""A changing SciFact-like source for the living-corpus tests (issue #61 item 1): three rounds of the same sources,
with documents added, edited and deleted between them, and the queries whose answers are compared with a fresh
build over the final round."""

from __future__ import annotations

from retrievekit.core.types import Passage

ABSTRACTS = {
    "aspirin": "Low-dose aspirin reduces the risk of a first myocardial infarction in adults over fifty.",
    "statins": "Statins lower LDL cholesterol and reduce cardiovascular events in patients with diabetes.",
    "vitd": "Vitamin D supplementation did not reduce fractures in community-dwelling older adults.",
    "bcg": "BCG vaccination protects infants against severe forms of tuberculosis such as meningitis.",
    "metformin": "Metformin improves insulin sensitivity and lowers fasting glucose in type 2 diabetes.",
    "sleep": "Short sleep duration is associated with obesity and impaired glucose tolerance in adolescents.",
    "crispr": "CRISPR-Cas9 editing of T cells enhances their activity against solid tumours in mice.",
    "microbiome": "The gut microbiome of infants delivered by caesarean section differs from vaginal births.",
}
"""Round 1: one source each (``source`` metadata = the key)."""

EDITED = {
    "statins": "Statins lower LDL cholesterol but raise the risk of new-onset diabetes in older women.",
    "sleep": "Short sleep duration predicts weight gain and insulin resistance in adolescents and adults.",
}
ADDED = {
    "zinc": "Zinc lozenges shorten the duration of common cold symptoms in healthy adults.",
    "exercise": "Aerobic exercise improves memory and hippocampal volume in older adults with mild impairment.",
}
DELETED_2 = ("bcg",)
DELETED_3 = ("microbiome", "zinc")
EDITED_3 = {"aspirin": "Daily aspirin increases major bleeding and does not prolong disability-free survival."}

QUERIES = [
    "aspirin bleeding risk",
    "cholesterol lowering drugs and diabetes",
    "insulin resistance in adolescents",
    "tuberculosis vaccine for infants",
    "common cold treatment",
    "memory and exercise in elderly",
    "gene editing cancer immunotherapy",
]


def rounds() -> list[dict[str, str]]:
    """The three rounds of the source: ``{source key: text}``."""
    one = dict(ABSTRACTS)
    two = {k: EDITED.get(k, v) for k, v in one.items() if k not in DELETED_2} | ADDED
    three = {k: EDITED_3.get(k, v) for k, v in two.items() if k not in DELETED_3}
    return [one, two, three]


def passages(round_: dict[str, str]) -> list[Passage]:
    """One round as passages (id = source key), sorted by id."""
    return [Passage(id=k, text=v, metadata={"source": k}) for k, v in sorted(round_.items())]
