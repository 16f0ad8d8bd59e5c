"""Small pure functions of token sampling (gpt-fast style): each one swappable and testable alone.

Sampling runs where the logits are. A row's noise comes from a counter-based generator: a hash of (the row's
seed, the decoding step, the vocabulary index) computed with integer tensor ops on the logits' device, so a
sample depends on its own seed and nothing else (not its batch, not its position in it, not the device), and
no generator state lives on the host. One pass (`sample_step`) samples (temperature, top-p, the exponential
race) and reads the chosen token's raw log-probability and the top-k confidence from the same logits.
"""

from __future__ import annotations

import hashlib

import torch

_MASK32 = 0xFFFFFFFF
_FMIX_1, _FMIX_2 = 0x85EBCA6B, 0xC2B2AE35
"""The multipliers of murmur3's 32-bit finaliser (fmix32)."""
_GOLDEN = 0x9E3779B9
"""2^32 / golden ratio: the Weyl step between consecutive counters."""
_STEP_SALT = 0x632BE5AB
"""Separates the step's counter from the vocabulary's (any odd constant)."""


def row_seed(seed: int, prompt: str, sample_index: int) -> int:
    """A seed for one (prompt, sample) pair, so a sample does not depend on its batch or position in it."""
    digest = hashlib.blake2b(f"{seed}\x00{sample_index}\x00{prompt}".encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest(), "little") & ((1 << 63) - 1)


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """x * c mod 2^32 for x in [0, 2^32) held in int64, without overflowing int64 (no wrap-around relied on: the
    constant is split in 16-bit halves, so every product stays below 2^48)."""
    low = x * (c & 0xFFFF)
    high = ((x * (c >> 16)) & 0xFFFF) << 16
    return (low + high) & _MASK32


def _fmix32(h: torch.Tensor) -> torch.Tensor:
    """murmur3's finaliser on 32-bit values in int64: every input bit flips each output bit with probability ~1/2."""
    h = h ^ (h >> 16)
    h = _mul32(h, _FMIX_1)
    h = h ^ (h >> 13)
    h = _mul32(h, _FMIX_2)
    return h ^ (h >> 16)


def step_keys(seeds: torch.Tensor, step: int | torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Two 32-bit keys `# (B,)` each for row seeds `# (B,)` (int64, below 2^63) at decoding step `step` (an int,
    or a 0-d/1-element tensor so that a compiled step does not specialise on it)."""
    lo, hi = seeds & _MASK32, (seeds >> 32) & _MASK32
    counter = _fmix32(_mul32((step + 1) & _MASK32, _STEP_SALT))
    first = _fmix32(lo ^ counter)
    second = _fmix32(hi ^ _fmix32((first + _GOLDEN) & _MASK32))
    return first, second


def exponential_noise(seeds: torch.Tensor, step: int | torch.Tensor, vocab: int) -> torch.Tensor:
    """E ~ Exp(1) `# (B, V)`, float32, on the seeds' device: a function of (row seed, step, vocabulary index)
    only. 24 bits of each hash make a uniform w in (0, 1); E = -log(1 - w), finite and > 0."""
    first, second = step_keys(seeds, step)  # (B,), (B,)
    index = torch.arange(vocab, device=seeds.device, dtype=torch.int64)  # (V,)
    h = _fmix32(_mul32(index, _GOLDEN)[None, :] ^ first[:, None])  # (B, V)
    h = _fmix32((h + second[:, None]) & _MASK32)
    w = ((h >> 8).to(torch.float32) + 0.5) * (1.0 / (1 << 24))  # (B, V) in (0, 1]: (2^24 - 0.5) / 2^24 rounds to 1
    w = w.clamp(max=1.0 - 2.0**-24)
    return -torch.log1p(-w)


def top_p_mask(scaled: torch.Tensor, top_p: float) -> torch.Tensor | None:
    """True outside the nucleus `# (B, V)` of temperature-scaled logits `# (B, V)`: the tokens whose higher-ranked
    tokens already hold top_p of the probability (the top token always stays); None when top_p >= 1."""
    if top_p >= 1.0:
        return None
    sorted_logits, order = scaled.sort(dim=-1, descending=True)
    sorted_probs = torch.softmax(sorted_logits, dim=-1)
    mass_before = sorted_probs.cumsum(dim=-1) - sorted_probs
    return torch.zeros_like(scaled, dtype=torch.bool).scatter_(-1, order, mass_before >= top_p)


def sample_tokens(
    logits: torch.Tensor, temperature: float, top_p: float, seeds: torch.Tensor | None, step: int | torch.Tensor = 0
) -> torch.Tensor:
    """Next tokens `# (B,)` from last-position logits `# (B, V)`: greedy at temperature 0, else the exponential race
    argmax(p / E) over the nucleus, E from `exponential_noise(seeds, step)`: each row's own noise."""
    if temperature == 0:
        return logits.argmax(dim=-1)
    if seeds is None:
        raise ValueError("sampling at temperature > 0 needs one seed per row")
    scaled = logits.float() / temperature
    outside = top_p_mask(scaled, top_p)
    # log(p / E) up to a per-row constant: the race in log space needs no softmax over the vocabulary.
    race = scaled - torch.log(exponential_noise(seeds, step, logits.shape[-1]))
    if outside is not None:
        race = race.masked_fill(outside, float("-inf"))
    return race.argmax(dim=-1)


def sample_step(
    logits: torch.Tensor,
    temperature: float,
    top_p: float,
    seeds: torch.Tensor | None,
    step: int | torch.Tensor,
    top_k: int,
) -> torch.Tensor:
    """One decoding step's reads of last-position logits `# (B, V)`, packed `# (B, 3)` float64 so that the host
    needs one transfer: the sampled token, its raw (temperature 1, before top_p) log-probability, and the token
    confidence -mean of the top_k largest raw log-probabilities (0 when top_k is 0)."""
    logits = logits.float()
    tokens = sample_tokens(logits, temperature, top_p, seeds, step)  # (B,)
    lse = torch.logsumexp(logits, dim=-1)  # (B,)
    logp = logits.gather(-1, tokens[:, None]).squeeze(-1) - lse  # (B,)
    if top_k:
        conf = lse - logits.topk(min(top_k, logits.shape[-1]), dim=-1).values.mean(dim=-1)  # (B,)
    else:
        conf = torch.zeros_like(lse)
    return torch.stack([tokens.double(), logp.double(), conf.double()], dim=-1)


def left_pad(sequences: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Left-padded ids and attention mask, both `# (B, T)` with T the longest sequence."""
    width = max(len(s) for s in sequences)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, seq in enumerate(sequences):
        if seq:
            ids[row, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            mask[row, width - len(seq) :] = 1
    return ids, mask
