"""KV caches of finished sequences, found again by the longest shared prefix of a new prompt.

The `hf` backend's counterpart of vLLM's prefix caching: a verification prompt is prompt + solution + the
question, and the solution was just generated, so its keys and values already exist. Sequences are stored
by token ids in a trie; a lookup walks a new prompt down the trie and returns how many of its first tokens
some stored sequence shares, with that sequence's keys and values cut to that length.

Memory is bounded by `max_tokens`, kept in two generations: new sequences go to the newer one; when it would
pass half the budget it becomes the older one and the older one is dropped. So the most recent sequences (a
chunk's samples just generated, a search's reads of the last round, which the next round extends) are always
kept, where emptying the whole cache would drop them with the rest.
"""

from __future__ import annotations

from typing import Sequence

import torch

LayerKV = tuple[torch.Tensor, torch.Tensor]
"""Keys and values of one layer for one sequence `# (H, L, D)` each."""

_ENTRY = -1
"""Trie key of the stored sequence that passes through a node (token ids are never negative)."""


class _Trie:
    """Sequences' per-layer KV by token ids; `longest` finds the longest prefix shared with any of them."""

    def __init__(self):
        self.root: dict = {}
        self.entries: list[list[LayerKV]] = []
        self.tokens = 0

    def put(self, ids: Sequence[int], layers: list[LayerKV]) -> None:
        self.entries.append(layers)
        self.tokens += len(ids)
        node, entry = self.root, len(self.entries) - 1
        for token in ids:
            node = node.setdefault(token, {})
            node[_ENTRY] = entry  # the newest sequence through this node

    def longest(self, ids: Sequence[int]) -> tuple[int, list[LayerKV] | None]:
        node, length, entry = self.root, 0, None
        for token in ids:
            node = node.get(token)
            if node is None:
                break
            length, entry = length + 1, node[_ENTRY]
        if entry is None:
            return 0, None
        return length, [(k[:, :length], v[:, :length]) for k, v in self.entries[entry]]


class PrefixCache:
    """Stored sequences' per-layer KV by token ids, in two generations (older, newer); `longest` finds the longest
    prefix shared with any of them."""

    def __init__(self, max_tokens: int):
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.max_tokens = max_tokens
        self.clear()

    def clear(self) -> None:
        self.generations = [_Trie(), _Trie()]  # older, newer

    @property
    def tokens(self) -> int:
        return sum(g.tokens for g in self.generations)

    def put(self, ids: Sequence[int], layers: list[LayerKV]) -> None:
        """Store the KV of the sequence `ids` (one (H, len(ids), D) pair per layer)."""
        if not ids or len(ids) > self.max_tokens:
            return
        older, newer = self.generations
        if newer.tokens and newer.tokens + len(ids) > self.max_tokens // 2:
            older, newer = newer, _Trie()  # the newer half is full: it becomes the older, the older is dropped
        if older.tokens + newer.tokens + len(ids) > self.max_tokens:
            older = _Trie()
        self.generations = [older, newer]
        newer.put(ids, layers)

    def longest(self, ids: Sequence[int]) -> tuple[int, list[LayerKV] | None]:
        """(length, per-layer KV cut to it) of the longest prefix of `ids` that a stored sequence shares."""
        older, newer = (g.longest(ids) for g in self.generations)
        return newer if newer[0] >= older[0] else older
