"""The `hf` backend: transformers + torch, CPU or GPU. The embedded default and what tests use."""

from __future__ import annotations

import functools
import inspect
import logging
import random
import threading
from pathlib import Path
from typing import Sequence

import torch

from ..params import SamplingParams
from .base import PromptFailedError, PromptTooLongError, Sample, TokenizerMethods, is_out_of_memory, window_confidence
from .decode import DECODE_LOOPS, Batch, Decoder, bucket
from .prefix_cache import PrefixCache
from .sampling import left_pad, row_seed

log = logging.getLogger(__name__)


def _one_call_at_a_time(method):
    """Serialise a backend method: several threads may share one backend (a server's request handlers), but its
    decoder's KV store and its prefix cache hold one call's state at a time."""

    @functools.wraps(method)
    def locked(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class HFBackend(TokenizerMethods):
    """Batched sampling with a KV cache: each prompt is prefilled once and its cache copied to its N rows, which
    are decoded together (tts_engine/backends/decode.py: `decode_loop` dynamic on CPU, static and compiled on CUDA).

    Finished sequences keep their keys and values in a prefix cache (`prefix_cache_tokens`; 0 turns it off),
    so a verification prompt that extends a just-generated solution computes only its new tokens. A batch that
    runs out of memory is retried in halves, down to one row.
    """

    name = "hf"
    stops_in_loop = True  # stop_below is checked at every token of the decoding loop

    def __init__(
        self,
        model,
        tokenizer=None,
        *,
        device: str | None = None,
        dtype: str | None = None,
        max_batch_rows: int = 512,
        prefix_cache_tokens: int = 262_144,
        decode_loop: str | None = None,
        compile_decode: bool | None = None,
    ):
        """`max_batch_rows`: rows decoded (and prompts scored) together; 512, the samples the engine hands over
        per call (`tts_engine.running.loop.ROWS_PER_CHUNK`), so that a call decodes as one batch (half the decoding steps of
        256 rows, each with its fixed cost; a batch that does not fit is retried in halves). `decode_loop`: "dynamic" or "static" (default: static on
        CUDA, dynamic elsewhere); `compile_decode`: capture the static loop's step with torch.compile (default:
        on CUDA with the static loop)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if max_batch_rows < 1:
            raise ValueError(f"max_batch_rows must be >= 1, got {max_batch_rows}")
        if prefix_cache_tokens < 0:
            raise ValueError(f"prefix_cache_tokens must be >= 0, got {prefix_cache_tokens}")
        if decode_loop is not None and decode_loop not in DECODE_LOOPS:
            raise ValueError(f"decode_loop must be one of {DECODE_LOOPS}, got {decode_loop!r}")
        if isinstance(model, (str, Path)):
            path = str(model)
            if not Path(path).exists():
                raise FileNotFoundError(
                    f"model directory {path!r} does not exist (pass a local Hugging Face checkpoint)"
                )
            tokenizer = tokenizer or AutoTokenizer.from_pretrained(path)
            torch_dtype = getattr(torch, dtype) if dtype else torch.float32
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype)
        if tokenizer is None:
            raise ValueError("tokenizer is required when model is a model object, not a path")
        self.device = torch.device(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.max_batch_rows = max_batch_rows
        self.prefix_cache = PrefixCache(prefix_cache_tokens) if prefix_cache_tokens else None
        self._lock = threading.RLock()  # see _one_call_at_a_time
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.eos_ids = _eos_ids(model, tokenizer)
        # transformers renamed `past_key_values` to `cache` (5.2x); accept both.
        self._cache_name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
        on_cuda = self.device.type == "cuda"
        loop = decode_loop or ("static" if on_cuda else "dynamic")
        compile_step = compile_decode if compile_decode is not None else (on_cuda and loop == "static")
        self.decoder = Decoder(self.model, self._cache_name, loop, compile=compile_step)
        self._pieces: dict[int, str] = {}
        """Token id -> its text alone (the stop-string check's filter)."""

    # --- protocol helpers -------------------------------------------------------------------------------
    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def max_model_len(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 1 << 30))

    # --- generation -------------------------------------------------------------------------------------
    @_one_call_at_a_time
    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[list[Sample]]:
        """`params.n` samples for each prompt, in input order. Rows are decoded max_batch_rows at a time; a chunk
        that runs out of memory is retried with half as many rows (and the rest of the call keeps that size); a
        single row that still does not fit is its prompt's PromptFailedError."""
        encoded = [self._encode_prompt(i, p, params.max_new_tokens) for i, p in enumerate(prompts)]
        rows = sorted(
            ((i, j) for i in range(len(prompts)) for j in range(params.n)),
            key=lambda r: (len(encoded[r[0]]), r[0], r[1]),
        )
        results: list[list[Sample | None]] = [[None] * params.n for _ in prompts]
        size, start = self.max_batch_rows, 0
        while start < len(rows):
            chunk = rows[start : start + size]
            try:
                samples = self._generate_rows(chunk, prompts, encoded, params)
            except Exception as err:  # noqa: BLE001 - only an allocation failure is retried; the rest re-raise
                if not is_out_of_memory(err):
                    raise
                self._free_memory()
                if len(chunk) == 1:
                    raise PromptFailedError(chunk[0][0], f"out of memory with a single row: {err}") from err
                size = len(chunk) // 2
                log.warning("hf backend: out of memory at %d rows; retrying with %d", len(chunk), size)
                continue
            for (i, j), sample in zip(chunk, samples):
                results[i][j] = sample
            start += len(chunk)
        return results  # type: ignore[return-value]

    def _free_memory(self) -> None:
        self.decoder.release()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()

    def _encode_prompt(self, index: int, prompt: str, max_new_tokens: int) -> list[int]:
        ids = self.encode(prompt)
        if len(ids) + 1 > self.max_model_len:
            raise PromptTooLongError(index, len(ids), self.max_model_len)
        return ids

    def _generate_rows(self, rows, prompts, encoded, params: SamplingParams) -> list[Sample]:
        """Sample the (prompt index, sample index) `rows` together: prefill unique prompts, decode rows."""
        unique = sorted({i for i, _ in rows})
        slot = {i: k for k, i in enumerate(unique)}
        out, mask, cached = self._forward_prompts(self.model, [encoded[i] for i in unique], logits_to_keep=1)
        logits, cache = out.logits[:, -1].float(), getattr(out, self._cache_name)  # (U, V)
        prefill = [(layer.keys, layer.values) for layer in cache.layers]  # (U, H, W, D) each
        del out, cache
        expand = torch.tensor([slot[i] for i, _ in rows], device=self.device)  # (B,)
        seeds = None
        if not params.greedy:
            seeds = torch.tensor(
                [
                    row_seed(params.seed, prompts[i], j) if params.seed is not None else random.getrandbits(63)
                    for i, j in rows
                ],
                dtype=torch.long,
                device=self.device,
            )  # (B,)
        budgets = [min(params.max_new_tokens, self.max_model_len - len(encoded[i])) for i, _ in rows]
        batch, packed = self.decoder.start(
            prefill, logits, expand, mask, seeds, params, max(budgets), self.max_model_len - 1
        )
        del prefill, logits
        samples = self._decode(rows, batch, packed, mask.cpu(), expand.tolist(), budgets, params, encoded)
        for sample, (i, _) in zip(samples, rows):
            sample.num_cached_tokens = cached[slot[i]]
        return samples

    def _forward_prompts(self, module, sequences: list[list[int]], reusable: list[int] | None = None, **kwargs):
        """One forward over left-padded prompts, each starting from the KV of its longest cached prefix (of at
        most `reusable` tokens; default all but the last, whose logits are needed).

        Returns the module's output (with its KV cache), the attention mask `# (U, P + R)` over cached
        prefixes (left-padded to P) and new tokens (left-padded to R), and each prompt's cached length.
        """
        limits = reusable if reusable is not None else [len(s) - 1 for s in sequences]
        hits = [self.prefix_cache.longest(s[:n]) if self.prefix_cache else (0, None) for s, n in zip(sequences, limits)]
        cached = [length for length, _ in hits]
        width = max(cached)
        ids, new_mask = left_pad([s[c:] for s, c in zip(sequences, cached)], self.pad_id)  # (U, R)
        past_mask = torch.zeros((len(sequences), width), dtype=torch.long)  # (U, P)
        for row, c in enumerate(cached):
            past_mask[row, width - c :] = 1
        mask = torch.cat([past_mask, new_mask], dim=-1).to(self.device)  # (U, P + R)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, width:]  # (U, R)
        if width:
            kwargs[self._cache_name] = self._padded_cache(hits, width)
        out = module(
            input_ids=ids.to(self.device), attention_mask=mask, position_ids=positions, use_cache=True, **kwargs
        )
        return out, mask, cached

    def _padded_cache(self, hits, width: int):
        """A DynamicCache holding each row's cached prefix, left-padded with zeros to `width` positions."""
        from transformers import DynamicCache

        layers = []
        some = next(kv for _, kv in hits if kv is not None)
        for layer, (k0, v0) in enumerate(some):
            keys = k0.new_zeros((len(hits), k0.shape[0], width, k0.shape[2]))  # (U, H, P, D)
            values = v0.new_zeros((len(hits), v0.shape[0], width, v0.shape[2]))
            for row, (length, kv) in enumerate(hits):
                if length:
                    keys[row, :, width - length :] = kv[layer][0]
                    values[row, :, width - length :] = kv[layer][1]
            layers.append((keys, values))
        return DynamicCache(ddp_cache_data=layers)

    def cached_prefix_tokens(self, prompts: Sequence[str]) -> list[int]:
        """How many of each prompt's first tokens the prefix cache holds now (0 without a cache)."""
        if self.prefix_cache is None:
            return [0] * len(prompts)
        return [self.prefix_cache.longest(self.encode(p)[:-1])[0] for p in prompts]

    def _decode(self, rows, batch: Batch, packed, mask, expand, budgets, params, encoded) -> list[Sample]:
        """Decode until every row stops. `packed` holds the first step's tokens; `mask` `# (U, W)` (on the host)
        and `expand` (each row's prompt) say which prompt columns hold real tokens. Each step reads one packed
        transfer from the device and applies every stop rule on the host; finished rows leave the batch when
        it is compacted (tts_engine/backends/decode.py)."""
        tokens: list[list[int]] = [[] for _ in rows]
        logps: list[list[float]] = [[] for _ in rows]
        confs: list[list[float]] = [[] for _ in rows]
        reasons: list[str | None] = [None] * len(rows)
        stop_window = max((len(s) for s in params.stop), default=0) + 8
        stop_chars = set("".join(params.stop))
        always_decode = any(c.isspace() for c in stop_chars)  # a tokenizer may add a leading space in context
        keep_conf = params.top_logprobs > 0
        thresholds = [params.stop_threshold(i) for i, _ in rows]  # per row: stop below this window confidence
        prompt_columns = [mask[u].nonzero().squeeze(-1) for u in range(mask.shape[0])]
        live, step = len(rows), 0
        while True:
            values = packed.tolist()  # (R, 3): the step's one device-to-host transfer
            for pos, row in enumerate(batch.slots):
                if reasons[row] is not None:
                    continue  # finished, left in the batch until it is compacted
                tok, lp, conf = values[pos]
                seq = tokens[row]
                seq.append(int(tok))
                logps[row].append(lp)
                if keep_conf:
                    confs[row].append(conf)
                reason = self._finish_reason(seq, budgets[row], params.stop, stop_window, stop_chars, always_decode)
                if reason is None and thresholds[row] is not None:
                    window = window_confidence(confs[row], params.confidence_window)
                    reason = "low_confidence" if window is not None and window < thresholds[row] else None
                if reason is not None:
                    reasons[row] = reason
                    live -= 1
                    # the cache holds the prompt and every generated token but this last one
                    self._remember(batch, pos, prompt_columns[expand[row]], encoded[rows[row][0]] + seq[:-1])
            if not live:
                break
            next_tokens = packed[:, 0].long()  # (R,): stays on the device
            self._compact(batch, next_tokens, reasons, live)
            step += 1
            packed = self.decoder.step(batch, next_tokens, params, step)
        return [
            self._to_sample(tokens[r], logps[r], reasons[r] or "length", params.stop, len(encoded[i]), confs[r])
            for r, (i, _) in enumerate(rows)
        ]

    def _compact(self, batch: Batch, next_tokens: torch.Tensor, reasons, live: int) -> None:
        """Drop finished rows from the batch: in the dynamic loop at once (a compaction moves only the live rows
        that fill finished slots); in the static loop when the live rows fit in half the bucket."""
        if self.decoder.static:
            rows = bucket(live)
            if rows >= batch.store.rows:
                return
        elif live == len(batch.slots):
            return
        else:
            rows = live
        batch.compact([pos for pos, row in enumerate(batch.slots) if reasons[row] is None], rows, next_tokens)

    def _remember(self, batch: Batch, pos: int, prompt_columns: torch.Tensor, ids: list[int]) -> None:
        """Keep the KV of the finished row at batch slot `pos`: `ids` are the tokens the cache holds (the prompt's
        real columns, then every generated column written so far)."""
        if self.prefix_cache is None:
            return
        generated = torch.arange(batch.width, batch.store.length)
        if len(prompt_columns) + len(generated) != len(ids):
            return
        columns = torch.cat([prompt_columns, generated]).to(self.device)
        self.prefix_cache.put(ids, batch.store.row_layers(pos, columns))

    def _finish_reason(self, tokens, budget: int, stop, window: int, stop_chars, always_decode: bool) -> str | None:
        """Finish reason: stop (end of sequence, or a stop string in the decoded tail), length, or None. The tail
        is decoded only when the new token's own text could complete a stop string (it holds one of the stop
        strings' characters, or is empty or a partial character)."""
        last = tokens[-1]
        if last in self.eos_ids:
            return "stop"
        if stop and (always_decode or self._may_complete(last, stop_chars)):
            tail = self.decode(tokens[-window:])
            if any(s in tail for s in stop):
                return "stop"
        return "length" if len(tokens) >= budget else None

    def _may_complete(self, token: int, stop_chars: set[str]) -> bool:
        piece = self._pieces.get(token)
        if piece is None:
            piece = self._pieces[token] = self.decode([token])
        return not piece or "\ufffd" in piece or any(c in stop_chars for c in piece)

    def _to_sample(self, tokens, logps, reason, stop, num_prompt_tokens, confidences=()) -> Sample:
        text = self.decode(tokens)
        for s in stop:
            cut = text.find(s)
            if cut >= 0:
                text = text[:cut]
        return Sample(
            text=text,
            token_ids=tokens,
            finish_reason=reason,
            logprobs=logps,
            confidences=list(confidences),
            num_prompt_tokens=num_prompt_tokens,
        )

    # --- verifier scoring -------------------------------------------------------------------------------
    @_one_call_at_a_time
    @torch.inference_mode()
    def final_hidden_states(self, prompts: Sequence[str]) -> torch.Tensor:
        """Hidden state after the final norm at each prompt's last position `# (B, D)`; never full logits."""
        encoded = [self._encode_prompt(i, p, 0) for i, p in enumerate(prompts)]
        order = sorted(range(len(prompts)), key=lambda i: len(encoded[i]))
        hidden = [None] * len(prompts)
        body = self.model.get_decoder()
        for start in range(0, len(order), self.max_batch_rows):
            part = order[start : start + self.max_batch_rows]
            out, _, _ = self._forward_prompts(body, [encoded[i] for i in part])
            for i, h in zip(part, out.last_hidden_state[:, -1]):
                hidden[i] = h
        return torch.stack(hidden)  # (B, D)

    @_one_call_at_a_time
    @torch.inference_mode()
    def yes_no_logprobs(self, prompts: Sequence[str], yes_id: int, no_id: int) -> list[tuple[float, float]]:
        """log P(Yes), log P(No) at each prompt's next position: the token-score op with two targets (on CUDA
        the fused kernel, elsewhere its torch reference)."""
        from ..kernels import fused_verifier_score

        if not prompts:
            return []
        hidden = self.final_hidden_states(prompts)  # (B, D)
        head = self.model.get_output_embeddings()
        logp_yes, logp_no = fused_verifier_score(hidden, head.weight, yes_id, no_id, bias=getattr(head, "bias", None))
        return list(zip(logp_yes.tolist(), logp_no.tolist()))

    remembers_reads = True
    """`continuation_logprobs(..., remember=True)` keeps each read's keys and values in the prefix cache."""

    @torch.inference_mode()
    def continuation_logprobs(
        self, prompts: Sequence[str], continuations: Sequence[str], *, remember: bool = False
    ) -> list[float]:
        """log P(continuation | prompt) of each pair: the sum of its tokens' log-probs, teacher-forced."""
        return [sum(row) for row in self.continuation_token_logprobs(prompts, continuations, remember=remember)]

    @_one_call_at_a_time
    @torch.inference_mode()
    def continuation_token_logprobs(
        self, prompts: Sequence[str], continuations: Sequence[str], *, remember: bool = False
    ) -> list[list[float]]:
        """log P(token | prompt and the continuation before it) of every continuation token, teacher-forced. The
        prompt's keys and values come from the prefix cache where it holds them (e.g. a check just written).
        `remember`: keep each prompt + continuation in the prefix cache, for a read that a later one extends (a
        step scorer reads step k + 1 after steps 1..k: it then computes only the new step's tokens).

        Every row's positions go through one token-score call per batch (on CUDA the fused kernel, which never
        holds the (T, V) logits; elsewhere its torch reference), not a log-softmax per row."""
        from ..kernels import token_logprobs as score_tokens  # not sampling.token_logprobs

        rows = [(self.encode(p), self.encode(c)) for p, c in zip(prompts, continuations)]
        for i, (p, c) in enumerate(rows):
            if len(p) + len(c) > self.max_model_len:
                raise PromptTooLongError(i, len(p) + len(c), self.max_model_len)
        body, head = self.model.get_decoder(), self.model.get_output_embeddings()
        out = []
        for start in range(0, len(rows), self.max_batch_rows):
            part = rows[start : start + self.max_batch_rows]
            # At most len(p) - 1 cached tokens: the logits that predict the continuation must be computed.
            sequences = [p + c for p, c in part]
            result, mask, _ = self._forward_prompts(body, sequences, reusable=[len(p) - 1 for p, _ in part])
            if remember and self.prefix_cache is not None:
                self._remember_reads(getattr(result, self._cache_name), mask, sequences)
            lengths = [len(c) for _, c in part]
            hidden = self.continuation_positions(result.last_hidden_state, lengths)  # (T, D), T = sum(lengths)
            targets = torch.tensor([t for _, c in part for t in c], dtype=torch.long, device=self.device)  # (T,)
            logp = score_tokens(hidden, head.weight, targets, getattr(head, "bias", None)).tolist()
            at = 0
            for n in lengths:
                out.append(logp[at : at + n])
                at += n
        return out

    def _remember_reads(self, cache, mask: torch.Tensor, sequences: list[list[int]]) -> None:
        """Store each row's keys and values (the real columns of `mask` `# (U, P + R)`) under its token ids."""
        layers = [(layer.keys, layer.values) for layer in cache.layers]  # (U, H, P + R, D) each
        for row, ids in enumerate(sequences):
            columns = mask[row].nonzero().squeeze(-1)  # (len(ids),)
            if len(columns) == len(ids):
                self.prefix_cache.put(
                    ids, [(k[row].index_select(1, columns), v[row].index_select(1, columns)) for k, v in layers]
                )

    @staticmethod
    def continuation_positions(hidden: torch.Tensor, lengths: Sequence[int]) -> torch.Tensor:
        """The hidden states that predict each row's last `lengths[b]` tokens, all rows flattened `# (T, D)`.

        hidden `# (U, R, D)` is left-padded, so row b's continuation is its last lengths[b] columns and the
        state predicting its j-th token sits at column R - lengths[b] - 1 + j (the prompt's last token first).
        """
        width = hidden.shape[1]
        n = torch.tensor(lengths, dtype=torch.long, device=hidden.device)  # (U,)
        row_start = torch.arange(len(lengths), device=hidden.device) * width + width - n - 1  # (U,)
        first = torch.cumsum(n, 0) - n  # (U,) each row's first index in the flat output
        index = torch.repeat_interleave(row_start - first, n) + torch.arange(int(n.sum()), device=hidden.device)
        return hidden.reshape(-1, hidden.shape[-1]).index_select(0, index)  # (T, D)


def _eos_ids(model, tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(gen_eos)
    return ids
