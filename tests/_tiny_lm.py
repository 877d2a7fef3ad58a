"""A tiny random-weight Llama and a BPE tokenizer trained in-process (no hub, no network).

Used by the model-layer tests to exercise constrained decoding and scoring on CPU in milliseconds.

Example:
    >>> model, tok = build_tiny_lm()  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Aspirin thins the blood and relieves pain.",
    "Solar panels convert sunlight into electricity.",
    "Wind farms generate power from moving air.",
    "The history of Rome spans many centuries.",
    "Protein folding determines the shape of enzymes.",
    "Machine learning models need training data.",
    "Retrieval augmented generation grounds answers in documents.",
]

TITLES = ["Aspirin", "Solar panels", "Wind farms", "History of Rome", "Protein folding", "Solar power"]

CHAT_TEMPLATE = (
    "{% for m in messages %}<s>{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<s>assistant: {% endif %}"
)


def tiny_local_lm(*, outlines: bool = True, **build: Any) -> Any:
    """A ``LocalLM`` named ``"tiny"`` over :func:`build_tiny_lm` (``build``: its settings); ``outlines=False`` skips
    the schema compile of constrained JSON (faster tests that do not need it).

    Example:
        >>> tiny_local_lm(outlines=False).name  # doctest: +SKIP
        'tiny'
    """
    from retrievekit.core.llm import LocalLM

    return LocalLM(*build_tiny_lm(**build), name="tiny", use_outlines=outlines)


def build_tiny_lm(
    seed: int = 0,
    *,
    chat_template: bool = True,
    texts: list[str] | None = None,
    vocab_size: int = 300,
    hidden_size: int = 32,
    max_positions: int = 1024,
) -> tuple[Any, Any]:
    """Return ``(model, tokenizer)``: a ~50k-parameter ``LlamaForCausalLM`` with random weights.

    ``texts`` (default: this module's sentences and titles) train the BPE tokenizer; ``vocab_size``,
    ``hidden_size`` (intermediate size is twice it) and ``max_positions`` size the model.

    Example:
        >>> model, tok = build_tiny_lm()  # doctest: +SKIP
        >>> tok.eos_token  # doctest: +SKIP
        '</s>'
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    raw = Tokenizer(models.BPE(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<pad>", "<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    raw.train_from_iterator(SENTENCES + TITLES if texts is None else texts, trainer=trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=raw, bos_token="<s>", eos_token="</s>", pad_token="<pad>", unk_token="<unk>"
    )
    if chat_template:
        tok.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=hidden_size,
        intermediate_size=2 * hidden_size,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(config)
    model.eval()
    return model, tok
