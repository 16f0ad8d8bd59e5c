"""`tts serve`: the engine behind an OpenAI-compatible HTTP API, with the same engine options as `tts solve`."""

from __future__ import annotations

import click

from ..cli.options import SAMPLING_EXCLUDE, StrategyCommand
from ..config import EngineConfig
from ..params import SOLVE_DEFAULTS, SamplingParams
from ..settings import build, options
from .options import ServeConfig


@click.command(cls=StrategyCommand)
@options(EngineConfig)
@options(SamplingParams, exclude=SAMPLING_EXCLUDE, defaults=SOLVE_DEFAULTS)
@options(ServeConfig)
def serve(**settings):
    """Serve test-time scaling behind an OpenAI-compatible API: POST /v1/chat/completions and /v1/completions,
    GET /v1/models and /health (docs/serve.md). The sampling and strategy options are the defaults of requests
    that do not set them."""
    import uvicorn

    from ..engine import Engine
    from .app import create_app, make_server

    serve_options = build(ServeConfig, settings)
    from ..strategies.registry import config_types

    params = build(SamplingParams, settings, defaults=SOLVE_DEFAULTS)
    configs = {cls.__name__: build(cls, settings) for cls in config_types()}
    engine_config = build(EngineConfig, settings)
    engine = Engine(config=engine_config)
    click.get_current_context().call_on_close(engine.close)  # after uvicorn's SIGTERM/Ctrl-C shutdown, or an error
    name = serve_options.model_name(engine_config.model)
    server = make_server(engine, serve_options, params, configs, name)
    host, port = serve_options.host, serve_options.port
    click.echo(
        f"model: {engine.model_label} ({engine.backend.num_parameters:,} parameters), served as {name!r}", err=True
    )
    click.echo(
        f"listening on http://{host}:{port}/v1 (key {'required' if serve_options.api_key else 'not required'})",
        err=True,
    )
    uvicorn.run(create_app(server), host=host, port=port, log_level=serve_options.log_level)
