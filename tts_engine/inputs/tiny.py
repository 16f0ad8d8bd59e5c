"""Tiny character-level models built from configs in code: tests and training's base.

The character vocabulary is stored in byte-level BPE form with no merges (PLATFORM.md): transformers 5.x and
vLLM load any `qwen2` checkpoint's tokenizer as Qwen2Tokenizer with a byte-level pre-tokenizer, so a plain
character vocab would silently lose its spaces. Stored this way, both split per character and round-trip.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# Printable ASCII plus newline: enough for arithmetic, LaTeX answers and the verifier prompt.
CHARSET = "".join(c for c in string.printable if c not in "\t\r\x0b\x0c")
WORDS = ["Yes", "No"]
"""Whole-word tokens, so the unified verifier's answers are single tokens."""
THINKING_TOKENS = ["<think>", "</think>"]
"""A thinking model's markers as Qwen3 and DeepSeek-R1 store them: added tokens, one id each, not special (decoding
with skip_special_tokens keeps them in the text)."""
THINKING_CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)
"""R1's shape: the generation prompt opens the trace, so the model writes its thinking, `</think>`, then the answer."""


def _byte_level(ch: str) -> str:
    """The byte-level form of one ASCII character (space -> 'Ġ', newline -> 'Ċ')."""
    from tokenizers.pre_tokenizers import ByteLevel

    return ByteLevel(add_prefix_space=False, use_regex=False).pre_tokenize_str(ch)[0][0]


def build_char_tokenizer(extra_words: list[str] | None = None, added_tokens: list[str] | None = None):
    """A PreTrainedTokenizerFast over single characters (+ a few whole words), byte-level encoded; `added_tokens`
    (e.g. THINKING_TOKENS) are added as single non-special tokens."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for tok in SPECIAL_TOKENS:
        vocab[tok] = len(vocab)
    for ch in CHARSET:
        vocab.setdefault(_byte_level(ch), len(vocab))
    words = WORDS + list(extra_words or [])
    # A whole word is a BPE merge chain: "Y"+"e" -> "Ye", "Ye"+"s" -> "Yes".
    merges: list[tuple[str, str]] = []
    for word in words:
        for end in range(2, len(word) + 1):
            left, right = word[: end - 1], word[end - 1]
            merges.append((left, right))
            vocab.setdefault(word[:end], len(vocab))
    core = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(SPECIAL_TOKENS)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core,
        eos_token="<|endoftext|>",
        pad_token="<|endoftext|>",
        clean_up_tokenization_spaces=False,
    )
    tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in added_tokens or []])
    return tok


@dataclass
class TinyModelConfig:
    """Size of a tiny Qwen2 causal LM."""

    hidden_size: int = 128
    """Width of the residual stream."""
    num_layers: int = 4
    """Transformer blocks."""
    num_heads: int = 4
    """Attention heads (key/value heads are the same number)."""
    intermediate_size: int = 512
    """Width of the MLP."""
    max_position_embeddings: int = 1024
    """Longest sequence (prompt + generation) in tokens."""
    seed: int = 0
    """Seed of the random initialisation."""


def build_tiny_model(tokenizer, config: TinyModelConfig | None = None):
    """A randomly initialised Qwen2ForCausalLM whose vocab_size equals len(tokenizer)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    cfg = config or TinyModelConfig()
    torch.manual_seed(cfg.seed)
    hf_config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(hf_config)


def save_tiny_checkpoint(path: str | Path, config: TinyModelConfig | None = None, thinking: bool = False) -> Path:
    """Build a random tiny model + char tokenizer and save both in Hugging Face format at `path`; `thinking`: in a
    thinking model's shape (its markers as single tokens and a chat template that opens the trace)."""
    path = Path(path)
    tok = build_char_tokenizer(added_tokens=THINKING_TOKENS if thinking else None)
    if thinking:
        tok.chat_template = THINKING_CHAT_TEMPLATE
    model = build_tiny_model(tok, config)
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path
