"""`tts serve`: test-time scaling behind an OpenAI-compatible HTTP API.

A thin layer over `Engine.solve` (docs/serve.md): `schema` turns a request body into a validated `SolveRequest`
(or an OpenAI-shaped error naming the field and the value), `batcher` gathers concurrent requests with the same
sampling settings into one `Engine.solve` call on one worker thread, `responses` turns the engine's records
into OpenAI responses and stream chunks, `app` is the HTTP layer (FastAPI on uvicorn) and `cli` the command.

Only this package imports fastapi and uvicorn (`pip install -e .[serve]`); importing `tts_engine` does not.
"""

from .options import ServeConfig

__all__ = ["ServeConfig", "create_app"]


def create_app(*args, **kwargs):
    """The ASGI app (see `tts_engine.serve.app.create_app`); imported on use so that `ServeConfig` loads without
    fastapi."""
    from .app import create_app as _create_app

    return _create_app(*args, **kwargs)
