"""The HTTP layer: FastAPI routes over the batcher, OpenAI's error shape for everything that goes wrong.

Routes: POST /v1/chat/completions, POST /v1/completions, GET /v1/models (key required when one is set) and
GET /health (open). Bodies are read by hand (size cap, then JSON) so that every malformed body gets a message
naming what is wrong, never a framework's validation dump.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hmac
import json
import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from ..backends.base import TokenizerMethods
from ..inputs.prompts import build_prompt
from .batcher import Batcher, Job
from .responses import (
    ResponseIds,
    answer_chunk,
    full_response,
    progress_chunk,
    record_progress,
    usage_chunk,
)
from .schema import ApiError, Defaults, SolveRequest, parse_request

log = logging.getLogger(__name__)

DISCONNECT_POLL_S = 0.25
"""How often a waiting request checks whether its client is still there."""
DRAIN_BYTES = 64 * 2**20
"""Most bytes of an over-cap body read (and dropped) before its 413; past it the connection is dropped."""


class Server:
    """What the routes share: the engine's batcher, the request defaults and caps, the key, the context check."""

    def __init__(self, engine, defaults: Defaults, *, api_key: str | None, max_body_bytes: int, batcher: Batcher):
        self.engine, self.defaults, self.api_key = engine, defaults, api_key
        self.max_body_bytes = max_body_bytes
        self.batcher = batcher
        self.tokenizer = _own_tokenizer(engine.backend)

    def authorize(self, request: Request) -> None:
        if self.api_key is None:
            return
        given = request.headers.get("authorization", "")
        scheme, _, key = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(key.strip().encode(), self.api_key.encode()):
            raise ApiError(
                "incorrect API key provided" if given else "missing API key: send Authorization: Bearer KEY",
                code="invalid_api_key",
                status=401,
            )

    async def read_json(self, request: Request) -> Any:
        """The body as JSON, at most `max_body_bytes`; 413 past it, 400 when it is not JSON. A body over the cap
        is still read to its end (up to DRAIN_BYTES) so that the client, still sending, receives the 413 instead
        of a dropped connection."""
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > DRAIN_BYTES:
            raise _too_large(int(declared), self.max_body_bytes)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > DRAIN_BYTES:
                break
            if size <= self.max_body_bytes:
                chunks.append(chunk)
        if size > self.max_body_bytes:
            raise _too_large(size, self.max_body_bytes)
        try:
            return json.loads(b"".join(chunks))
        except (ValueError, RecursionError) as err:
            detail = str(err) if not isinstance(err, RecursionError) else "nested too deeply"
            raise ApiError(f"the request body is not valid JSON: {detail[:200]}", code="invalid_json") from None

    def check_context(self, request: SolveRequest) -> None:
        """Every prompt must leave room in the model's context for at least one generated token."""
        if self.tokenizer is None:
            return  # the engine's own check then refuses it (engine_error)
        limit = self.engine.backend.max_model_len
        param = "messages" if request.kind == "chat" else "prompt"
        for text in request.texts:
            prompt = build_prompt(self.engine.prompt_config, text, self.tokenizer)
            tokens = len(self.tokenizer.encode(prompt))
            if tokens >= limit:
                raise ApiError(
                    f"{param}: the prompt has {tokens} tokens but the model's context is {limit} tokens",
                    param=param,
                    code="context_length_exceeded",
                )


class _Tokenizer(TokenizerMethods):
    """A copy of the backend's tokenizer for the server's own checks: the worker thread uses the original."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer


def _own_tokenizer(backend) -> _Tokenizer | None:
    tokenizer = backend.tokenizer
    if tokenizer is None:
        return None
    try:
        return _Tokenizer(copy.deepcopy(tokenizer))
    except Exception:  # noqa: BLE001 - a tokenizer that cannot be copied: the engine checks instead
        return None


def _too_large(size: int, cap: int) -> ApiError:
    return ApiError(f"the request body has {size} bytes; this server takes at most {cap}", code=None, status=413)


def error_response(error: ApiError) -> Response:
    """The error as JSON, ASCII-escaped: a message may quote a client's lone surrogate, which UTF-8 cannot carry."""
    body = json.dumps(error.body())
    return Response(body, status_code=error.status, headers=error.headers, media_type="application/json")


def create_app(server: Server) -> FastAPI:
    """The ASGI app; the batcher's worker starts with the app and stops with it."""

    @contextlib.asynccontextmanager
    async def lifespan(app):
        server.batcher.start()
        try:
            yield
        finally:
            await asyncio.to_thread(server.batcher.close)
            if hasattr(server.engine, "close"):  # stop vLLM before uvicorn re-raises SIGTERM/SIGINT
                await asyncio.to_thread(server.engine.close)

    app = FastAPI(title="tts serve", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    app.state.server = server

    @app.exception_handler(ApiError)
    async def api_error(request: Request, error: ApiError):
        return error_response(error)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        code = {404: "not_found", 405: "method_not_allowed"}.get(error.status_code)
        message = f"{request.method} {request.url.path}: {error.detail}"
        return error_response(ApiError(message, code=code, status=error.status_code))

    @app.exception_handler(Exception)
    async def server_error(request: Request, error: Exception):
        log.exception("unhandled error", exc_info=error)
        return error_response(
            ApiError(f"internal error: {type(error).__name__}", code=None, status=500, kind="server_error")
        )

    @app.get("/health")
    async def health():
        return {"status": "ok", "model": server.defaults.model_name, **server.batcher.snapshot()}

    @app.get("/v1/models")
    async def models(request: Request):
        server.authorize(request)
        name = server.defaults.model_name
        names = [name] + [f"{s}:{name}" for s in sorted(server.defaults.strategies)]
        data = [{"id": n, "object": "model", "created": 0, "owned_by": "tts-engine"} for n in names]
        return {"object": "list", "data": data}

    @app.post("/v1/chat/completions")
    async def chat(request: Request):
        return await answer(server, request, "chat")

    @app.post("/v1/completions")
    async def completions(request: Request):
        return await answer(server, request, "completion")

    return app


async def answer(server: Server, http: Request, kind: str) -> Response:
    """Validate, queue, and answer one request (a JSON body, or server-sent events when stream is true)."""
    server.authorize(http)
    request = parse_request(await server.read_json(http), kind, server.defaults)
    server.check_context(request)
    job = Job(request, loop=asyncio.get_running_loop())
    server.batcher.submit(job)
    watcher = asyncio.create_task(watch_client(server, http, job))
    ids = ResponseIds(request)
    if request.stream:
        return StreamingResponse(stream(server, job, ids, watcher), media_type="text/event-stream")
    try:
        records = await collect(job)
    finally:
        watcher.cancel()
        if not job.finished:
            server.batcher.cancel(job)
    if records is None:
        return Response(status_code=499)  # nobody reads it: the client is gone
    return JSONResponse(full_response(ids, records))


async def watch_client(server: Server, http: Request, job: Job) -> None:
    """Cancel the job when its client disconnects (its queued rows are freed; its coroutine is told)."""
    while not job.finished:
        if await http.is_disconnected():
            server.batcher.cancel(job)
            job.events.put_nowait({"type": "gone"})
            return
        await asyncio.sleep(DISCONNECT_POLL_S)


async def collect(job: Job) -> list[dict[str, Any]] | None:
    """The job's records in input order; None when the client went away; raises the job's ApiError."""
    while True:
        event = await job.events.get()
        if event["type"] == "error":
            raise event["error"]
        if event["type"] == "gone":
            return None
        if event["type"] == "done":
            return [job.records[k] for k in range(len(job.request.texts))]


def sse(data: dict[str, Any] | str) -> bytes:
    payload = data.encode() if isinstance(data, str) else json.dumps(data).encode()
    return b"data: " + payload + b"\n\n"


async def stream(server: Server, job: Job, ids: ResponseIds, watcher: asyncio.Task):
    """Server-sent events: progress chunks, each problem's answer chunk as it finishes, usage, [DONE]."""
    request = ids.request
    try:
        while True:
            event = await job.events.get()
            kind = event["type"]
            if kind == "progress":
                yield sse(progress_chunk(ids, event))
            elif kind == "record":
                yield sse(progress_chunk(ids, record_progress(event["index"], event["record"], request)))
                yield sse(answer_chunk(ids, event["index"], event["record"]))
            elif kind == "error":
                yield sse(event["error"].body())
                return
            elif kind == "gone":
                return
            elif kind == "done":
                if request.include_usage:
                    yield sse(usage_chunk(ids, [job.records[k] for k in range(len(request.texts))]))
                yield sse("[DONE]")
                return
    except ApiError as error:  # e.g. a score kind this strategy's records lack
        yield sse(error.body())
    finally:
        watcher.cancel()
        if not job.finished:
            server.batcher.cancel(job)


def make_server(engine, options, params, configs: dict[str, Any], model_name: str) -> Server:
    """The server state for `engine`: request defaults from `tts serve`'s options (`ServeConfig`, the sampling
    defaults `params`, the strategies' default settings `configs` by type name; a registered strategy's settings
    missing there get their defaults). Strategies, their settings and their score kinds come from the registry."""
    from ..config import RunConfig
    from ..strategies.registry import config_types, record_kinds, strategies

    entries = strategies()
    configs = {cls.__name__: configs.get(cls.__name__) or cls() for cls in config_types()}
    own = {name: configs[e.config_type.__name__] if e.config_type else None for name, e in entries.items()}
    parts = engine.parts  # what a strategy's declarations see of the engine
    kinds = {name: record_kinds(parts, name, own[name], params.top_logprobs) for name in entries}
    if options.score_kind is not None and options.score_kind not in kinds[options.strategy]:
        raise ValueError(
            f"invalid value for --score-kind: must be one of {list(kinds[options.strategy])}, got {options.score_kind!r}"
        )
    score_kind = {
        name: options.score_kind if options.score_kind in kinds[name] else (e.headline(parts, own[name]) or None)
        for name, e in entries.items()
    }
    defaults = Defaults(
        model_name=model_name,
        run=RunConfig.of(options),
        params=params,
        aggregation=options.aggregation,
        score_kind=score_kind,
        score_kinds=kinds,
        return_candidates=options.return_candidates,
        configs=configs,
        strategies=entries,
        max_samples=options.max_request_samples,
        max_tokens=options.max_request_tokens,
        max_prompts=options.max_request_prompts,
    )
    batcher = Batcher(
        engine,
        max_queue=options.max_queue,
        max_batch_rows=options.max_batch_rows,
        batch_wait_s=options.batch_wait_ms / 1000,
        batch_wait_share=options.batch_wait_share,
    )
    return Server(engine, defaults, api_key=options.api_key, max_body_bytes=options.max_body_bytes, batcher=batcher)
