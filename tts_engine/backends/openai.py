"""The `openai` backend: any OpenAI-compatible completions server (`vllm serve`, SGLang) over HTTP.

One `/v1/completions` request per prompt asks for its N samples (`n=N`); up to `max_concurrency` requests are
in flight at once (a thread pool). Transient failures (HTTP 429 and 5xx, refused or dropped connections,
timeouts) are retried with exponential backoff; 401/403 (API key) and 404 (model) fail at once with a message
that says how to fix them. Only the standard library is used (urllib).

Records. Token ids come from the server when it returns them (vLLM's `return_token_ids` extension), else from
a local tokenizer (`tokenizer=PATH`, or the environment variable TTS_OPENAI_TOKENIZER, or `model` itself when
it is a local checkpoint), else from the server's `/tokenize` endpoint (vLLM). Chat templates need the local
tokenizer: without one, prompts use the plain template. Token log-probs are
the server's `token_logprobs`: vLLM serves raw (temperature 1) log-probs unless started with another
`--logprobs-mode`. With `top_logprobs=k` the request asks `logprobs=k` (the server's cap must allow it: vLLM
`--max-logprobs`, OpenAI 5) and each token's confidence is -mean of the k largest of `top_logprobs`
(`Sample.confidences`, DeepConf).

Verifier scores. `yes_no_logprobs` sends one `max_tokens=1` request per prompt with `logprobs=20` and, as a
vLLM extension, `logprob_token_ids=[yes, no]` (exact log-probs of both tokens, whatever their rank). A server
that ignores the extension returns only the top 20: a verdict token missing from them gets the upper bound
log P(token) <= min(log p_20th, log(1 - sum of the top-20 probabilities)) (it is rarer than every listed token
and than all of the unlisted mass together); the bound is logged once per call. `continuation_logprobs`
(teacher-forced log P(continuation | prompt), for the re-solving verifier) sends prompt + continuation as
token ids with `echo` and `logprobs=0`, and sums the echoed log-probs of the continuation's tokens.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import os
import random
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable, Sequence

from ..params import SamplingParams
from .base import BackendBase, PromptFailedError, PromptTooLongError, Sample, token_confidence
from .vllm import checkpoint_num_parameters, prompt_seed

log = logging.getLogger(__name__)

RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
TOP_LOGPROBS = 20
"""Top log-probs asked for a verdict step: the usual server cap (vLLM's default `max_logprobs`)."""
CONTEXT_ERROR_WORDS = ("maximum context length", "context length", "too long", "max_model_len")


class ServerError(RuntimeError):
    """The server answered with an error that retrying will not fix, or kept failing after every retry."""

    def __init__(self, message: str, status: int | None = None, request_failed: bool = False):
        super().__init__(message)
        self.status = status
        """The HTTP status, or None when the server never answered."""
        self.request_failed = request_failed
        """The server is there but this request kept failing (timeouts, 5xx) after every retry: the request's
        failure, not the run's (an unreachable server or a refusal is the run's)."""


# --- request building and response parsing (pure) ---------------------------------------------------------
def build_completion_body(
    model: str, prompt: str, params: SamplingParams, *, max_tokens: int, vllm_extensions: bool
) -> dict[str, Any]:
    """The JSON body of one prompt's N samples (greedy asks for one: servers refuse n > 1 when greedy)."""
    body: dict[str, Any] = {
        "model": model,
        "prompt": prompt,
        "n": 1 if params.greedy else params.n,
        "max_tokens": max_tokens,
        "temperature": params.temperature,
        "top_p": 1.0 if params.greedy else params.top_p,
        "logprobs": max(1, params.top_logprobs),
    }
    if params.stop_below is not None:
        raise ValueError(
            "stop_below is checked inside the hf backend's decoding loop only; on openai the deepconf strategy "
            "stops samples by chunked continuation"
        )
    seed = prompt_seed(params.seed, prompt)
    if seed is not None:
        body["seed"] = seed
    if params.stop:
        body["stop"] = list(params.stop)
    if vllm_extensions:
        body["return_token_ids"] = True
        if params.top_logprobs:
            body["return_tokens_as_token_ids"] = True  # distinct tokens that decode alike stay distinct top-k keys
    return body


def build_verdict_body(model: str, prompt: str, yes_id: int, no_id: int, *, vllm_extensions: bool) -> dict:
    """The JSON body of one verdict step: the next token's log-probs, nothing generated beyond it."""
    body = {"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0, "logprobs": TOP_LOGPROBS}
    if vllm_extensions:
        body.update(logprob_token_ids=[yes_id, no_id], return_tokens_as_token_ids=True)
    return body


def build_continuation_body(model: str, token_ids: Sequence[int]) -> dict:
    """A request that scores its own prompt (token ids): echoed with each token's log-prob, one token generated."""
    return {"model": model, "prompt": list(token_ids), "max_tokens": 1, "temperature": 0.0, "echo": True, "logprobs": 0}


def parse_continuation(response: dict, start: int, count: int) -> list[float]:
    """The echoed log-probs of prompt positions start .. start+count-1 (the continuation)."""
    choices = response.get("choices") or []
    echoed = ((choices[0].get("logprobs") or {}).get("token_logprobs") or []) if choices else []
    values = echoed[start : start + count]
    if len(values) < count or any(v is None for v in values):
        raise ServerError(
            "the server echoed no prompt log-probs for a continuation (it must support `echo` with `logprobs`)"
        )
    return [float(v) for v in values]


def choice_confidences(choice: dict, top_k: int) -> list[float]:
    """Token confidence of each generated position, -mean of its k largest log-probs, from a choice's
    `logprobs.top_logprobs` (one {token: log-prob} map per position; a server may add the sampled token); []
    when `top_k` is 0 or the server sent none."""
    tops = (choice.get("logprobs") or {}).get("top_logprobs") or []
    if not top_k or not tops:
        return []
    return [token_confidence(sorted((float(v) for v in (top or {}).values()), reverse=True)[:top_k]) for top in tops]


def parse_choice(choice: dict, num_prompt_tokens: int, tokenize: Callable[[str], list[int]], top_k: int = 0) -> Sample:
    """One completion choice as a Sample; token ids from the server, else `tokenize(text)`."""
    text = choice.get("text") or ""
    token_ids = choice.get("token_ids")
    if token_ids is None:
        token_ids = tokenize(text)
    lp = (choice.get("logprobs") or {}).get("token_logprobs") or []
    logprobs = [math.nan if v is None else float(v) for v in lp]
    reason = choice.get("finish_reason")
    return Sample(
        text=text,
        token_ids=[int(t) for t in token_ids],
        finish_reason=reason if reason in ("stop", "length") else "length",
        logprobs=logprobs,
        confidences=choice_confidences(choice, top_k),
        num_prompt_tokens=num_prompt_tokens,
    )


def parse_completion(response: dict, n: int, tokenize: Callable[[str], list[int]], top_k: int = 0) -> list[Sample]:
    """The `n` Samples of one completions response in choice order (a single greedy choice repeated)."""
    choices = sorted(response.get("choices") or [], key=lambda c: c.get("index", 0))
    first = choices[0] if choices else {}
    if first.get("prompt_token_ids") is not None:
        num_prompt_tokens = len(first["prompt_token_ids"])
    else:
        num_prompt_tokens = int((response.get("usage") or {}).get("prompt_tokens", 0))
    samples = [parse_choice(c, num_prompt_tokens, tokenize, top_k) for c in choices]
    if len(samples) == 1 and n > 1:
        samples += [parse_choice(first, num_prompt_tokens, tokenize, top_k) for _ in range(n - 1)]
    if len(samples) != n:
        raise ServerError(f"the server returned {len(samples)} choices for a request of n={n}")
    return samples


def token_logprob_or_bound(top: dict[str, float], keys: Sequence[str]) -> tuple[float, bool]:
    """log P of the token named by any of `keys` in a top-logprobs map, else its upper bound; (value, exact)."""
    for key in keys:
        if key in top:
            return float(top[key]), True
    if not top:
        return 0.0, False
    values = list(top.values())
    rest = 1.0 - sum(math.exp(v) for v in values)
    bound = min(min(values), math.log(rest) if rest > 0 else -math.inf)
    return bound, False


def parse_verdict(response: dict, yes_keys: Sequence[str], no_keys: Sequence[str]) -> tuple[float, float, bool]:
    """(log P(yes), log P(no), exact) from a verdict response's first-position top log-probs."""
    choices = response.get("choices") or []
    tops = ((choices[0].get("logprobs") or {}).get("top_logprobs") or []) if choices else []
    if not tops or tops[0] is None:
        raise ServerError(
            "the server returned no top log-probs for the verdict step "
            "(it must support the completions `logprobs` parameter)"
        )
    logp_yes, exact_yes = token_logprob_or_bound(tops[0], yes_keys)
    logp_no, exact_no = token_logprob_or_bound(tops[0], no_keys)
    return logp_yes, logp_no, exact_yes and exact_no


def retry_delay(attempt: int, backoff: float, max_backoff: float, retry_after: str | None = None) -> float:
    """Seconds before retry `attempt` (0-based): the server's Retry-After if given, else backoff x 2^attempt
    with jitter, capped."""
    if retry_after:
        try:
            return min(float(retry_after), max_backoff)
        except ValueError:
            pass
    return min(backoff * 2**attempt, max_backoff) * random.uniform(0.5, 1.0)


# --- HTTP ----------------------------------------------------------------------------------------------------
class _Transient(Exception):
    """A failure worth retrying."""

    def __init__(self, message: str, retry_after: str | None = None, unreachable: bool = False):
        super().__init__(message)
        self.retry_after, self.unreachable = retry_after, unreachable


class HttpClient:
    """JSON over HTTP with retries, backoff and a per-request timeout."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        model: str,
        *,
        timeout: float,
        max_retries: int,
        backoff: float,
        max_backoff: float,
    ):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff

    def reachable(self, timeout: float = 5.0) -> None:
        """A ValueError at once when nothing listens at the base URL (connection refused, no such host): that is a
        setting to fix, not a failure to retry. Any answer, an error status included, counts as reachable."""
        try:
            with urllib.request.urlopen(self.url("/v1/models"), timeout=min(timeout, self.timeout)):
                return
        except urllib.error.HTTPError:
            return
        except (TimeoutError, socket.timeout):  # something listens: a busy server may answer later
            return
        except (urllib.error.URLError, ConnectionError, OSError) as err:
            reason = getattr(err, "reason", err)
            if isinstance(reason, (TimeoutError, socket.timeout)):
                return
            raise ValueError(
                f"no server answers at {self.base_url} ({reason}): start it, or point the openai backend at it "
                "(--backend-option base_url=http://HOST:PORT/v1, or OPENAI_BASE_URL)"
            ) from None

    def url(self, path: str) -> str:
        """`path` under the server's root: the base URL without its `/v1` (vLLM's `/tokenize` lives there)."""
        return self.base_url.removesuffix("/v1") + path

    def request(self, path: str, body: dict | None = None) -> dict:
        """POST `body` (GET if None) and return the decoded JSON, retrying transient failures."""
        for attempt in range(self.max_retries + 1):
            try:
                return self._once(path, body)
            except _Transient as err:
                if attempt == self.max_retries:
                    raise ServerError(
                        f"{self.url(path)} failed after {attempt + 1} attempts: {err} "
                        "(is the server up and the timeout long enough?)",
                        request_failed=not err.unreachable,
                    ) from err
                delay = retry_delay(attempt, self.backoff, self.max_backoff, err.retry_after)
                log.warning("%s: %s; retry %d/%d in %.2fs", path, err, attempt + 1, self.max_retries, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _once(self, path: str, body: dict | None) -> dict:
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url(path), data=data, headers=headers, method="GET" if body is None else "POST"
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as err:
            raise self._http_error(path, err) from err
        except (TimeoutError, socket.timeout) as err:
            raise _Transient(f"no answer within {self.timeout}s") from err
        except (urllib.error.URLError, ConnectionError, http.client.HTTPException) as err:
            raise _Transient(f"connection failed: {getattr(err, 'reason', err)}", unreachable=True) from err

    def _http_error(self, path: str, err: urllib.error.HTTPError) -> Exception:
        detail = _error_message(err)
        if err.code in RETRY_STATUSES:
            return _Transient(f"HTTP {err.code}: {detail}", err.headers.get("Retry-After"))
        if err.code in (401, 403):
            return ServerError(
                f"{self.url(path)} refused the API key (HTTP {err.code}: {detail}); pass the "
                "server's key as api_key or set OPENAI_API_KEY",
                err.code,
            )
        if err.code == 404:
            return ServerError(
                f"{self.url(path)} answered 404 ({detail}): model {self.model!r} is not served "
                f"there, or the base URL is wrong; check the names at {self.url('/v1/models')} and "
                "that base_url is the server's root or ends with /v1",
                err.code,
            )
        return ServerError(f"{self.url(path)} rejected the request (HTTP {err.code}: {detail})", err.code)


def _error_message(err: urllib.error.HTTPError) -> str:
    try:
        payload = json.loads(err.read() or b"{}")
    except (ValueError, OSError):
        return err.reason or ""
    inner = payload.get("error", payload)
    if isinstance(inner, dict):
        return str(inner.get("message") or inner)
    return str(inner)


# --- the backend -------------------------------------------------------------------------------------------
class OpenAIBackend(BackendBase):
    """A remote OpenAI-compatible completions server behind the Backend protocol; outputs in input order."""

    name = "openai"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        tokenizer: str | None = None,
        max_concurrency: int = 16,
        timeout: float = 600.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        max_model_len: int | None = None,
        num_parameters: int | None = None,
        vllm_extensions: bool = True,
    ):
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {max_concurrency}")
        if timeout <= 0:
            raise ValueError(f"timeout must be > 0, got {timeout}")
        if max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {max_retries}")
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or "http://127.0.0.1:8000/v1"
        self.model = str(model)
        self.client = HttpClient(
            base_url,
            api_key or os.environ.get("OPENAI_API_KEY"),
            self.model,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
        )
        self.max_concurrency = max_concurrency
        self.vllm_extensions = vllm_extensions
        tokenizer = (
            tokenizer
            or os.environ.get("TTS_OPENAI_TOKENIZER")
            or (self.model if (Path(self.model) / "config.json").is_file() else None)
        )
        self.tokenizer_path = tokenizer
        self.tokenizer = _load_tokenizer(tokenizer) if tokenizer else None
        self._max_model_len = max_model_len
        self._num_parameters = num_parameters
        self.client.reachable()

    # --- protocol helpers -----------------------------------------------------------------------------------
    @property
    def num_parameters(self) -> int:
        """Given, else counted from a local checkpoint (model or tokenizer path), else 0 (unknown)."""
        if self._num_parameters is None:
            self._num_parameters = 0
            for path in (self.model, self.tokenizer_path):
                if path and Path(path).is_dir() and any(Path(path).glob("*.safetensors")):
                    self._num_parameters = checkpoint_num_parameters(path)
                    break
            else:
                log.warning("openai backend: parameter count unknown (pass num_parameters=); FLOPs will read 0")
        return self._num_parameters

    @property
    def max_model_len(self) -> int:
        """Given, else the server's (vLLM lists `max_model_len` at /v1/models), else unbounded."""
        if self._max_model_len is None:
            models = self.client.request("/v1/models").get("data") or []
            lens = [m.get("max_model_len") for m in models if m.get("id") == self.model]
            self._max_model_len = int(lens[0]) if lens and lens[0] else 1 << 30
        return self._max_model_len

    def encode(self, text: str) -> list[int]:
        if self.tokenizer is not None:
            return self.tokenizer.encode(text, add_special_tokens=False)
        body = {"model": self.model, "prompt": text, "add_special_tokens": False}
        return list(self.client.request("/tokenize", body)["tokens"])

    def decode(self, token_ids: Sequence[int]) -> str:
        if self.tokenizer is not None:
            return self.tokenizer.decode(list(token_ids), skip_special_tokens=True)
        return self.client.request("/detokenize", {"model": self.model, "tokens": list(token_ids)})["prompt"]

    def apply_chat_template(self, messages: list[dict[str, str]]) -> str | None:
        """The local tokenizer's chat template; None without a local tokenizer or template."""
        if self.tokenizer is None or not getattr(self.tokenizer, "chat_template", None):
            return None
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    # --- requests -------------------------------------------------------------------------------------------
    def _map(self, fn, items: Sequence) -> list:
        """`fn(index, item)` over items with at most max_concurrency in flight; results in input order."""
        if len(items) <= 1 or self.max_concurrency == 1:
            return [fn(i, x) for i, x in enumerate(items)]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items))) as pool:
            return list(pool.map(fn, range(len(items)), items))

    def _post(self, index: int, prompt: str, body: dict) -> dict:
        """POST a completions body; a context-length refusal is retried once with `max_tokens` cut to the
        room the prompt leaves, or becomes PromptTooLongError when the prompt itself does not fit. A request the
        server still fails after the client's retries (5xx, no answer in time) is this prompt's PromptFailedError;
        an unreachable server or any other refusal (a wrong model name, a bad setting) is a ServerError that ends
        the run."""
        try:
            return self.client.request("/v1/completions", body)
        except ServerError as err:
            if err.request_failed:
                raise PromptFailedError(index, str(err)) from err
            if not (err.status == 400 and any(w in str(err).lower() for w in CONTEXT_ERROR_WORDS)):
                raise
            num_tokens = len(self.encode(prompt))
            room = self.max_model_len - num_tokens
            if room < 1 or room >= body["max_tokens"]:
                raise PromptTooLongError(index, num_tokens, self.max_model_len) from err
            return self.client.request("/v1/completions", {**body, "max_tokens": room})

    def generate(self, prompts: Sequence[str], params: SamplingParams) -> list[list[Sample]]:
        """`params.n` samples for each prompt, in input order: one request per prompt."""

        def one(index: int, prompt: str) -> list[Sample]:
            body = build_completion_body(
                self.model, prompt, params, max_tokens=params.max_new_tokens, vllm_extensions=self.vllm_extensions
            )
            return parse_completion(self._post(index, prompt, body), params.n, self.encode, params.top_logprobs)

        return self._map(one, list(prompts))

    def yes_no_logprobs(self, prompts: Sequence[str], yes_id: int, no_id: int) -> list[tuple[float, float]]:
        """log P(Yes), log P(No) at the next token (exact with vLLM; else top-20 with the documented bound)."""
        yes_keys = self._token_keys(yes_id)
        no_keys = self._token_keys(no_id)

        def one(index: int, prompt: str) -> tuple[float, float, bool]:
            body = build_verdict_body(self.model, prompt, yes_id, no_id, vllm_extensions=self.vllm_extensions)
            return parse_verdict(self._post(index, prompt, body), yes_keys, no_keys)

        results = self._map(one, list(prompts))
        bounded = sum(1 for *_, exact in results if not exact)
        if bounded:
            log.warning(
                "%d of %d verdicts had Yes/No outside the server's top %d log-probs: upper bound used",
                bounded,
                len(results),
                TOP_LOGPROBS,
            )
        return [(ly, ln) for ly, ln, _ in results]

    def continuation_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[float]:
        """log P(continuation | prompt) of each pair: the sum of its tokens' log-probs, teacher-forced."""
        return [sum(row) for row in self.continuation_token_logprobs(prompts, continuations)]

    def continuation_token_logprobs(self, prompts: Sequence[str], continuations: Sequence[str]) -> list[list[float]]:
        """log P(token | prompt and the continuation before it) of every continuation token, teacher-forced."""

        def one(index: int, pair: tuple[str, str]) -> list[float]:
            prompt_ids, continuation_ids = self.encode(pair[0]), self.encode(pair[1])
            body = build_continuation_body(self.model, prompt_ids + continuation_ids)
            return parse_continuation(self._post(index, pair[0], body), len(prompt_ids), len(continuation_ids))

        return self._map(one, list(zip(prompts, continuations)))

    def _token_keys(self, token_id: int) -> list[str]:
        """How a server may name a token in top log-probs: `token_id:N` (vLLM) or its decoded text."""
        keys = [f"token_id:{token_id}"]
        try:
            keys.append(self.decode([token_id]))
        except ServerError:
            pass
        return keys


def _load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path)
