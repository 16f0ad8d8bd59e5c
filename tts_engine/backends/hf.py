"""The `hf` backend: transformers + torch, CPU or GPU. The embedded default and what tests use."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Sequence

import torch

from ..params import SamplingParams
from ..sampling import left_pad, raw_logprobs, row_seed, sample_tokens, token_logprobs, top_k_confidence
from .base import PromptTooLongError, Sample, TokenizerMethods, window_confidence
from .prefix_cache import PrefixCache


class HFBackend(TokenizerMethods):
    """Batched sampling with a KV cache: each prompt is prefilled once and its cache copied to its N rows.

    Finished sequences keep their keys and values in a prefix cache (`prefix_cache_tokens`; 0 turns it off),
    so a verification prompt that extends a just-generated solution computes only its new tokens.
    """

    name = "hf"

    def __init__(
        self,
        model,
        tokenizer=None,
        *,
        device: str | None = None,
        dtype: str | None = None,
        max_batch_rows: int = 256,
        prefix_cache_tokens: int = 262_144,
    ):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if max_batch_rows < 1:
            raise ValueError(f"max_batch_rows must be >= 1, got {max_batch_rows}")
        if prefix_cache_tokens < 0:
            raise ValueError(f"prefix_cache_tokens must be >= 0, got {prefix_cache_tokens}")
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
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        self.eos_ids = _eos_ids(model, tokenizer)
        # transformers renamed `past_key_values` to `cache` (5.2x); accept both.
        self._cache_name = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"

    # --- protocol helpers -------------------------------------------------------------------------------
    @property
    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    @property
    def max_model_len(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 1 << 30))

    # --- generation -------------------------------------------------------------------------------------
    @torch.inference_mode()
    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[list[Sample]]:
        """`params.n` samples for each prompt, in input order."""
        encoded = [self._encode_prompt(i, p, params.max_new_tokens) for i, p in enumerate(prompts)]
        rows = sorted(
            ((i, j) for i in range(len(prompts)) for j in range(params.n)),
            key=lambda r: (len(encoded[r[0]]), r[0], r[1]),
        )
        results: list[list[Sample | None]] = [[None] * params.n for _ in prompts]
        for start in range(0, len(rows), self.max_batch_rows):
            chunk = rows[start : start + self.max_batch_rows]
            for (i, j), sample in zip(chunk, self._generate_rows(chunk, prompts, encoded, params)):
                results[i][j] = sample
        return results  # type: ignore[return-value]

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
        expand = torch.tensor([slot[i] for i, _ in rows], device=self.device)  # (B,)
        cache.batch_select_indices(expand)
        logits, mask = logits[expand], mask[expand]  # (B, V), (B, T)
        generators = (
            None
            if params.greedy
            else [
                torch.Generator().manual_seed(
                    row_seed(params.seed, prompts[i], j)
                    if params.seed is not None
                    else int(torch.randint(0, 1 << 62, ()).item())
                )
                for i, j in rows
            ]
        )
        budgets = [min(params.max_new_tokens, self.max_model_len - len(encoded[i])) for i, _ in rows]
        samples = self._decode(rows, logits, mask, cache, generators, budgets, params, encoded)
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

    def _remember(self, cache, position: int, mask_row: torch.Tensor, ids: list[int]) -> None:
        """Keep the KV of the finished row at batch `position`: `ids` are the tokens the cache holds."""
        real = mask_row.nonzero().squeeze(-1)  # (L,)
        if self.prefix_cache is None or len(real) != len(ids):
            return
        layers = [
            (layer.keys[position].index_select(1, real), layer.values[position].index_select(1, real))
            for layer in cache.layers
        ]
        self.prefix_cache.put(ids, layers)

    def cached_prefix_tokens(self, prompts: Sequence[str]) -> list[int]:
        """How many of each prompt's first tokens the prefix cache holds now (0 without a cache)."""
        if self.prefix_cache is None:
            return [0] * len(prompts)
        return [self.prefix_cache.longest(self.encode(p)[:-1])[0] for p in prompts]

    def _decode(self, rows, logits, mask, cache, generators, budgets, params, encoded) -> list[Sample]:
        """Decode until every row stops; finished rows leave the batch (and the cache) at once."""
        tokens: list[list[int]] = [[] for _ in rows]
        logps: list[list[float]] = [[] for _ in rows]
        confs: list[list[float]] = [[] for _ in rows]
        reasons: list[str | None] = [None] * len(rows)
        active = list(range(len(rows)))  # batch position -> row
        stop_window = max((len(s) for s in params.stop), default=0) + 8
        k = params.top_logprobs
        thresholds = [params.stop_threshold(i) for i, _ in rows]  # per row: stop below this window confidence
        while active:
            gens = None if generators is None else [generators[r] for r in active]
            next_tok = sample_tokens(logits, params.temperature, params.top_p, gens)  # (A,)
            logp = raw_logprobs(logits)  # (A, V), once for both reads
            next_lp = token_logprobs(logp, next_tok)  # (A,)
            next_conf = top_k_confidence(logp, k).tolist() if k else [None] * len(active)  # (A,)
            keep = []
            for pos, (row, tok, lp) in enumerate(zip(active, next_tok.tolist(), next_lp.tolist())):
                tokens[row].append(tok)
                logps[row].append(lp)
                if k:
                    confs[row].append(next_conf[pos])
                reasons[row] = self._finish_reason(tokens[row], budgets[row], params.stop, stop_window)
                if reasons[row] is None and thresholds[row] is not None:
                    window = window_confidence(confs[row], params.confidence_window)
                    reasons[row] = "low_confidence" if window is not None and window < thresholds[row] else None
                if reasons[row] is None:
                    keep.append(pos)
                else:  # the cache holds the prompt and every generated token but this last one
                    self._remember(cache, pos, mask[pos], encoded[rows[row][0]] + tokens[row][:-1])
            if len(keep) < len(active):
                if not keep:
                    break
                index = torch.tensor(keep, device=self.device)
                cache.batch_select_indices(index)
                mask, next_tok = mask[index], next_tok[index]
                active = [active[k] for k in keep]
            mask = torch.cat([mask, mask.new_ones((len(active), 1))], dim=-1)  # (A, T + 1)
            positions = mask.sum(-1, keepdim=True) - 1  # (A, 1)
            out = self.model(
                input_ids=next_tok[:, None],
                attention_mask=mask,
                position_ids=positions,
                use_cache=True,
                **{self._cache_name: cache},
            )
            logits = out.logits[:, -1].float()
        return [
            self._to_sample(tokens[r], logps[r], reasons[r] or "length", params.stop, len(encoded[i]), confs[r])
            for r, (i, _) in enumerate(rows)
        ]

    def _finish_reason(self, tokens: list[int], budget: int, stop: list[str], window: int) -> str | None:
        if tokens[-1] in self.eos_ids:
            return "stop"
        if stop:
            tail = self.decode(tokens[-window:])
            if any(s in tail for s in stop):
                return "stop"
        return "length" if len(tokens) >= budget else None

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

    @torch.inference_mode()
    def yes_no_logprobs(self, prompts: Sequence[str], yes_id: int, no_id: int) -> list[tuple[float, float]]:
        """log P(Yes), log P(No) at each prompt's next position, via the fused verifier score op."""
        from ..kernels import fused_verifier_score

        if not prompts:
            return []
        hidden = self.final_hidden_states(prompts)  # (B, D)
        weight = self.model.get_output_embeddings().weight  # (V, D)
        logp_yes, logp_no = fused_verifier_score(hidden, weight, yes_id, no_id)
        return list(zip(logp_yes.tolist(), logp_no.tolist()))

    @torch.inference_mode()
    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[float]:
        """log P(continuation | prompt) of each pair: the sum of its tokens' log-probs, teacher-forced."""
        return [sum(row) for row in self.continuation_token_logprobs(prompts, continuations)]

    def continuation_token_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """log P(token | prompt and the continuation before it) of every continuation token, teacher-forced. The
        prompt's keys and values come from the prefix cache where it holds them (e.g. a check just written)."""
        rows = [(self.encode(p), self.encode(c)) for p, c in zip(prompts, continuations)]
        for i, (p, c) in enumerate(rows):
            if len(p) + len(c) > self.max_model_len:
                raise PromptTooLongError(i, len(p) + len(c), self.max_model_len)
        body, head = self.model.get_decoder(), self.model.get_output_embeddings()
        out = []
        for start in range(0, len(rows), self.max_batch_rows):
            part = rows[start : start + self.max_batch_rows]
            # At most len(p) - 1 cached tokens: the logits that predict the continuation must be computed.
            result, _, _ = self._forward_prompts(body, [p + c for p, c in part], reusable=[len(p) - 1 for p, _ in part])
            hidden = result.last_hidden_state  # (U, R, D): each row's uncached tokens, left-padded to R
            for b, (p, c) in enumerate(part):
                first = hidden.shape[1] - len(c) - 1  # column of the prompt's last token
                logp = torch.log_softmax(head(hidden[b, first : first + len(c)]).float(), dim=-1)  # (C, V)
                out.append(logp.gather(1, torch.tensor(c, device=self.device)[:, None])[:, 0].tolist())
        return out


def _eos_ids(model, tokenizer) -> set[int]:
    ids = {tokenizer.eos_token_id} if tokenizer.eos_token_id is not None else set()
    gen_eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(gen_eos, int):
        ids.add(gen_eos)
    elif gen_eos:
        ids.update(gen_eos)
    return ids
