"""Shared causal-LM fine-tuning: training instances, a resumable trainer, and versioned trained-model folders.

Used by Self-Retrieval (a model that internalises a corpus) and by the fine-tuned relevance judge. Framework-free:
torch and transformers are imported lazily inside functions; peft only when ``TrainConfig(lora=True)``.

Examples:
    >>> from retrievekit.core.training import Segment, TrainConfig, TrainingExample
    >>> ex = TrainingExample((Segment("Question: q\\n Title: "), Segment("aspirin", trainable=True)), kind="query-title")
    >>> TrainConfig().epochs, ex.trainable_text
    (3.0, 'aspirin')
"""

from retrievekit.core.training import manifest
from retrievekit.core.training.config import TrainConfig
from retrievekit.core.training.examples import (
    IGNORE_INDEX,
    EncodedExample,
    Segment,
    TrainingExample,
    collate,
    encode_example,
    encode_examples,
    examples_fingerprint,
)
from retrievekit.core.training.manifest import *  # noqa: F403 - saving and loading a trained model: manifest.__all__
from retrievekit.core.training.trainer import (
    TrainResult,
    autocast_dtype,
    learning_rate_factor,
    plan_steps,
    resolve_device,
    train_causal_lm,
)

__all__ = [
    "IGNORE_INDEX",
    "EncodedExample",
    "Segment",
    "TrainConfig",
    "TrainResult",
    "TrainingExample",
    "autocast_dtype",
    "collate",
    "encode_example",
    "encode_examples",
    "examples_fingerprint",
    "learning_rate_factor",
    "plan_steps",
    "resolve_device",
    "train_causal_lm",
]
__all__ += manifest.__all__
