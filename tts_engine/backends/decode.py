"""The hf backend's decoding loop: a KV store allocated once (and reused across calls), one forward and one
sampling pass per step, one device-to-host transfer per step.

The prompts are prefilled by the model as usual (a DynamicCache, with the prefix cache's hits); their keys and
values are then copied once into a `KVStore`, whose buffers `# (R, H, C, D)` hold R batch slots and C columns
(the left-padded prompts, then one column per decoding step, shared by all rows). Two ways to run the steps
(`decode_loop`, a backend option):

- `dynamic`: attention reads the columns written so far (views that grow by one column a step, so nothing is
  copied as the cache grows); finished rows leave the batch at once (live rows from the end of the batch move
  into their slots: a copy of those rows only). Every step's shapes differ, so it runs eagerly. The CPU default.
- `static`: every step has the same shapes: attention reads all C columns (those not yet written are masked),
  and rows sit in a power-of-two bucket where finished rows stay, masked out of the results, until the live
  ones fit in half the bucket (then they are compacted into the next smaller bucket). On CUDA the step
  (forward + sampling) is compiled with `torch.compile(mode="reduce-overhead")`: CUDA graphs replay it without
  per-op launch overhead. Batch and column sizes are compiled as dynamic dimensions (one compilation for every
  bucket and call), and the buffers are reused across calls so their addresses, which the graphs hold, stay
  the same. The CUDA default.

Both give the same samples (a row's noise depends only on its seed and step: tts_engine/backends/sampling.py).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch
from transformers.cache_utils import Cache

from .base import is_out_of_memory
from .sampling import sample_step

log = logging.getLogger(__name__)

DECODE_LOOPS = ("dynamic", "static")
COLUMN_BUCKET = 128
"""static loop: the store's column count is rounded up to a multiple of this, so that calls with similar prompt
widths and budgets share one compiled shape."""


class KVStore(Cache):
    """Keys and values of every layer in buffers allocated once `# (R, H, C, D)`; `update` writes the step's new
    column in place. Dynamic: returns the `rows` x `length` columns written so far (views). Static: returns the
    full `rows` x C buffers and writes at the device index `write_index`, so a captured step never changes shape
    or reads a host value."""

    def __init__(
        self, keys: list[torch.Tensor], values: list[torch.Tensor], *, static: bool, kv: torch.Tensor | None = None
    ):
        super().__init__(layers=[])
        self.keys, self.values, self.static = keys, values, static
        self.kv = kv
        """`# (layers, 2, R, H, C, D)`: every buffer in one tensor when the layers' shapes agree (keys and values
        are its views), so that a row's copy or a compaction is one op for all layers."""
        self.rows, self.columns = keys[0].shape[0], keys[0].shape[2]
        """Slots and columns in use (views of the buffers' first ones)."""
        self.length = 0
        """Columns written (host count; the dynamic loop's views end here)."""
        self.write_index = torch.zeros(1, dtype=torch.long, device=keys[0].device)
        """The column the next step writes (device copy of `length`, read by the static step)."""
        self.views: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.use(self.rows, self.columns)

    @classmethod
    def allocate(cls, like: list[tuple[torch.Tensor, torch.Tensor]], rows: int, columns: int, *, static: bool):
        """A store (zeroed if static) shaped after per-layer (keys, values) `# (U, H, T, D)` (a prefill's cache)."""
        new = torch.zeros if static else torch.empty  # the dynamic loop reads only what it wrote
        k0 = like[0][0]
        if all(k.shape[1:] == k0.shape[1:] == v.shape[1:] and k.dtype == v.dtype == k0.dtype for k, v in like):
            kv = new((len(like), 2, rows, k0.shape[1], columns, k0.shape[3]), dtype=k0.dtype, device=k0.device)
            return cls([kv[i, 0] for i in range(len(like))], [kv[i, 1] for i in range(len(like))], static=static, kv=kv)
        keys = [new((rows, k.shape[1], columns, k.shape[3]), dtype=k.dtype, device=k.device) for k, _ in like]
        values = [new((rows, v.shape[1], columns, v.shape[3]), dtype=v.dtype, device=v.device) for _, v in like]
        return cls(keys, values, static=static)

    def fits(self, like: list[tuple[torch.Tensor, torch.Tensor]], rows: int, columns: int) -> bool:
        """Whether this store's buffers can serve a batch of `rows` x `columns` shaped after `like`."""
        pairs = zip(like, self.keys)
        return (
            len(like) == len(self.keys)
            and self.keys[0].shape[0] >= rows
            and self.keys[0].shape[2] >= columns
            and all(
                k.shape[1::2] == sk.shape[1::2] and (k.dtype, k.device) == (sk.dtype, sk.device) for (k, _), sk in pairs
            )
        )

    def use(self, rows: int, columns: int) -> None:
        """Use the first `rows` slots and `columns` columns (views that start at the buffers' own addresses, which
        stay static)."""
        self.rows, self.columns = rows, columns
        self.views = [(k[:rows, :, :columns], v[:rows, :, :columns]) for k, v in zip(self.keys, self.values)]
        if self.static:
            for pair in self.views:
                for t in pair:
                    _dynamic(t, 0, 2)
                    if t.is_cuda:
                        torch._dynamo.mark_static_address(t, guard=False)

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int, *args, **kwargs):
        keys, values = self.views[layer_idx]
        if self.static:  # one column, at a device index: the same kernel every step
            keys.index_copy_(2, self.write_index, key_states)
            values.index_copy_(2, self.write_index, value_states)
            return keys, values
        end = self.length + key_states.shape[-2]
        keys[:, :, self.length : end] = key_states
        values[:, :, self.length : end] = value_states
        return keys[:, :, :end], values[:, :, :end]

    def advance(self) -> None:
        """One column was written by every layer."""
        self.length += 1
        self.write_index.fill_(self.length)

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.length

    def __len__(self) -> int:
        return len(self.keys)

    def row_layers(self, slot: int, columns: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """Per-layer (keys, values) `# (H, L, D)` of batch slot `slot` at `columns` `# (L,)` (copies)."""
        if self.kv is not None:
            row = self.kv[:, :, slot].index_select(-2, columns)  # (layers, 2, H, L, D): one copy
            return [(layer[0], layer[1]) for layer in row]
        return [(k[slot].index_select(1, columns), v[slot].index_select(1, columns)) for k, v in self.views]

    def move(self, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Copy the slots `src` `# (M,)` onto the slots `dst` `# (M,)` (the written columns only)."""
        if self.kv is not None:
            written = self.kv[..., : self.length, :]  # (layers, 2, R, H, L, D)
            written.index_copy_(2, dst, written.index_select(2, src))
            return
        for buffers in (self.keys, self.values):
            for buffer in buffers:
                written = buffer[:, :, : self.length]
                written.index_copy_(0, dst, written.index_select(0, src))


@dataclass
class Batch:
    """The device state of the rows being decoded, one entry per batch slot of the store."""

    store: KVStore
    visible: torch.Tensor
    """`# (R, C)` bool: the columns each slot may attend to (its prompt's real tokens, then every generated one)."""
    positions: torch.Tensor
    """`# (R, 1)` position id of each slot's next input token."""
    seeds: torch.Tensor | None
    """`# (R,)` int64 row seeds (None when greedy)."""
    slots: list[int]
    """Batch slot -> row index (for the first len(slots) slots; slots past them are padding of a static bucket)."""
    max_position: int
    """Positions are clamped to this (finished rows left in the batch keep stepping past their budgets)."""
    width: int
    """Columns of the prompts (left-padded); generated tokens are written from this column on."""

    def compact(self, live: list[int], rows: int, tokens: torch.Tensor) -> None:
        """Keep the slots `live` in the first len(live) slots and use `rows` >= len(live) slots from now on. Only
        the live slots past the front move, each into a finished slot's place (order does not matter: `slots`
        follows). `tokens` `# (R,)`, the next input of each slot, moves with its slot."""
        count = len(live)
        holes = sorted(set(range(count)) - set(live))  # finished slots in the front
        movers = [p for p in live if p >= count]  # live slots past it, as many
        if movers:
            src = torch.tensor(movers, device=self.visible.device)
            dst = torch.tensor(holes, device=self.visible.device)
            self.store.move(src, dst)
            for t in (self.visible, self.positions, self.seeds, tokens):
                if t is not None:
                    t.index_copy_(0, dst, t.index_select(0, src))
            for hole, mover in zip(holes, movers):
                self.slots[hole] = self.slots[mover]
        self.slots = self.slots[:count]
        self.store.use(rows, self.store.columns)


def bucket(rows: int) -> int:
    """The static loop's batch size for `rows` live rows: the next power of two, at least 2 (torch.compile
    specialises a dimension of size 1: a bucket of 1 would compile the step once more)."""
    return max(2, 1 << max(0, rows - 1).bit_length())


def _dynamic(tensor: torch.Tensor | None, *dims: int) -> None:
    """Compile the step for any size of these dimensions at once (batch slots, columns): one compilation serves
    every bucket and every call's column count, instead of one more at the first size that changes."""
    if tensor is not None:
        for dim in dims:
            torch._dynamo.maybe_mark_dynamic(tensor, dim)


class Decoder:
    """Runs decoding steps of one model: the forward of the last tokens, then `sample_step` on its logits.

    `mode` is "dynamic" or "static"; `compile` (static only) captures the step with torch.compile
    (mode="reduce-overhead"). A compile or capture failure is logged and the step runs eagerly from then on.
    """

    def __init__(self, model, cache_name: str, mode: str, *, compile: bool):
        if mode not in DECODE_LOOPS:
            raise ValueError(f"decode_loop must be one of {DECODE_LOOPS}, got {mode!r}")
        if compile and mode != "static":
            raise ValueError("compile_decode needs decode_loop=static (the dynamic loop's shapes change every step)")
        self.model, self.cache_name, self.mode, self.compile = model, cache_name, mode, compile
        self._pool: KVStore | None = None
        self._compiled = None
        impl = getattr(model.config, "_attn_implementation", None)
        if impl not in (None, "sdpa", "eager"):
            raise ValueError(
                f"the hf backend's decoding loop passes 4-D attention masks, which attn_implementation {impl!r} does "
                "not take: load the model with attn_implementation='sdpa' or 'eager'"
            )

    @property
    def static(self) -> bool:
        return self.mode == "static"

    def start(self, prefill, logits, expand, mask, seeds, params, budget: int, max_position: int):
        """The batch after prefill, and its first sampled tokens (packed as `sample_step`'s, on the device).

        `prefill`: per-layer (keys, values) `# (U, H, W, D)` of the U unique prompts; `logits` `# (U, V)` their
        last positions'; `expand` `# (B,)` the prompt of each row; `mask` `# (U, W)` the prompts' attention mask;
        `seeds` `# (B,)` or None; `budget` the most tokens any row generates.
        """
        rows, width = len(expand), mask.shape[1]
        columns = width + budget
        slots = rows
        if self.static:
            columns = -(-columns // COLUMN_BUCKET) * COLUMN_BUCKET
            slots = bucket(rows)
            expand = torch.cat([expand, expand[:1].expand(slots - rows)])  # padding slots copy row 0
            if seeds is not None:
                seeds = torch.cat([seeds, seeds[:1].expand(slots - rows)])
        store = self._store(prefill, slots, columns)
        for layer, (keys, values) in enumerate(prefill):
            store.keys[layer][:slots, :, :width] = keys[expand]
            store.values[layer][:slots, :, :width] = values[expand]
        store.use(slots, columns)
        store.length = width
        store.write_index.fill_(width)
        visible = torch.ones((slots, store.columns), dtype=torch.bool, device=mask.device)  # (R, C)
        visible[:, :width] = mask[expand].bool()
        positions = mask[expand].sum(-1, keepdim=True) - 1  # (R, 1): of each row's last prompt token
        batch = Batch(store, visible, positions, seeds, list(range(rows)), max_position, width)
        packed = sample_step(logits[expand], params.temperature, params.top_p, seeds, 0, params.top_logprobs)
        return batch, packed

    def _store(self, prefill, rows: int, columns: int) -> KVStore:
        """The store, reused across calls while it fits: no allocation (and no page faults) per call, and in the
        static loop the buffers' addresses stay the same, so a captured step is not captured again. The static
        loop zeroes the columns it uses (masked columns must hold finite values); the dynamic loop reads only
        columns it wrote."""
        pool = self._pool
        if pool is not None and pool.fits(prefill, rows, columns):
            if self.static and pool.kv is not None:
                pool.kv[:, :, :rows, :, :columns].zero_()
            elif self.static:
                for keys, values in zip(pool.keys, pool.values):
                    keys[:rows, :, :columns].zero_()
                    values[:rows, :, :columns].zero_()
            pool.length = 0
            return pool
        self._pool = None  # free the old buffers before allocating new ones
        self._pool = KVStore.allocate(prefill, rows, columns, static=self.static)
        return self._pool

    def release(self) -> None:
        """Drop the kept store (before retrying a batch that ran out of memory)."""
        self._pool = None

    def step(self, batch: Batch, tokens: torch.Tensor, params, step: int) -> torch.Tensor:
        """Forward `tokens` `# (R,)` (the tokens sampled last step, one per slot) and sample the next ones: the
        packed `# (R, 3)` (token, raw log-prob, confidence) of `sample_step`, on the device."""
        store = batch.store
        batch.positions.add_(1).clamp_(max=batch.max_position)
        ids = tokens[: store.rows, None]
        if self.static:
            step_t = torch.full((1,), step, dtype=torch.long, device=ids.device)
            args = (store, ids, batch.positions[: store.rows], batch.visible[: store.rows], batch.seeds, step_t, params)
            packed = self._static_step(*args)
        else:
            visible = batch.visible[: store.rows, : store.length + 1]
            bias = _bias(visible, self.model.dtype)
            out = self.model(
                input_ids=ids,
                attention_mask=bias,
                position_ids=batch.positions[: store.rows],
                use_cache=True,
                **{self.cache_name: store},
            )
            seeds = None if batch.seeds is None else batch.seeds[: store.rows]
            packed = sample_step(out.logits[:, -1], params.temperature, params.top_p, seeds, step, params.top_logprobs)
        store.advance()
        return packed

    def _static_step(self, store, ids, positions, visible, seeds, step_t, params) -> torch.Tensor:
        seeds = None if seeds is None else seeds[: store.rows]
        args = (self.model, self.cache_name, store, ids, positions, visible, seeds, step_t)
        settings = (params.temperature, params.top_p, params.top_logprobs)
        if self.compile and self._compiled is not False:
            for tensor, dims in ((ids, (0,)), (positions, (0,)), (visible, (0, 1)), (seeds, (0,))):
                _dynamic(tensor, *dims)
            try:
                if self._compiled is None:
                    self._compiled = torch.compile(static_step, mode="reduce-overhead", dynamic=None)
                torch.compiler.cudagraph_mark_step_begin()
                return self._compiled(*args, *settings).clone()
            except Exception as err:  # noqa: BLE001 - a compile or capture failure must not lose the run
                if is_out_of_memory(err):
                    raise  # the backend retries the batch in halves
                log.warning("compiled decode step failed (%s: %s); running it eagerly", type(err).__name__, err)
                self._compiled = False
        return static_step(*args, *settings)


def static_step(model, cache_name, store, ids, positions, visible, seeds, step, temperature, top_p, top_k):
    """One static-shape step: the forward of `ids` `# (R, 1)` over all C columns (those past `store.write_index`
    masked), then `sample_step`; `step` is a device tensor so that a captured step replays for every step."""
    columns = torch.arange(visible.shape[1], device=visible.device)  # (C,)
    bias = _bias(visible & (columns <= store.write_index), model.dtype)  # (R, 1, 1, C)
    out = model(input_ids=ids, attention_mask=bias, position_ids=positions, use_cache=True, **{cache_name: store})
    return sample_step(out.logits[:, -1], temperature, top_p, seeds, step, top_k)


def _bias(visible: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Additive attention mask `# (R, 1, 1, K)` from visible columns `# (R, K)`: 0 where visible, the dtype's
    lowest value elsewhere (every row sees at least its own new column, so no row is masked whole)."""
    zero = torch.zeros((), dtype=dtype, device=visible.device)
    return torch.where(visible, zero, torch.finfo(dtype).min)[:, None, None, :]
