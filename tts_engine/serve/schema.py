"""Request bodies -> validated `SolveRequest`s, or an `ApiError` in OpenAI's error shape that names the field and
the value ("n must be an integer in [1, 64], got 100").

Every check happens here, before a request joins a batch, so a bad request never reaches the engine beside
other clients' problems. Standard OpenAI fields keep their meaning; the test-time scaling parameters live in
the `tts` object (what the official client sends as `extra_body={"tts": {...}}`), or as a strategy prefix of
the model name ("<strategy>:tts-default") for clients that cannot send extra fields.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from dataclasses import dataclass
from typing import Any

from ..config import RunConfig
from ..params import SamplingParams
from ..pipeline.aggregate import AGGREGATIONS
from ..settings import is_int

ROLES = ("system", "developer", "user", "assistant", "tool", "function")
RUN_FIELDS = tuple(f.name for f in dataclasses.fields(RunConfig))
"""The run's settings a request may set in `tts` (`RunConfig`: declared, defaulted and checked there)."""
TTS_FIELDS = (*RUN_FIELDS, "n", "aggregation", "score_kind", "return_candidates")
"""Keys of the `tts` object besides the chosen strategy's own settings (AdaptiveConfig / SearchConfig fields)."""


class ApiError(Exception):
    """A request the server refuses: HTTP status plus OpenAI's {"error": {message, type, param, code}}."""

    def __init__(
        self,
        message: str,
        *,
        param: str | None = None,
        code: str | None = "invalid_value",
        status: int = 400,
        kind: str = "invalid_request_error",
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.message, self.param, self.code, self.status, self.kind = message, param, code, status, kind
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.kind, "param": self.param, "code": self.code}}


@dataclass(frozen=True)
class SolveRequest:
    """One validated request: its problems, how to sample them and how to answer."""

    kind: str
    """"chat" (/v1/chat/completions) or "completion" (/v1/completions)."""
    model: str
    """The model name as the client sent it (echoed in the response)."""
    texts: tuple[str, ...]
    """Problem texts: the last user turn (chat) or each prompt (completions)."""
    run: RunConfig
    """The run's settings: the strategy, and when a choice abstains."""
    params: SamplingParams
    """How each problem's samples are drawn: the request's fields over the server's defaults (n is tts.n; stop
    strings are added to the model's own)."""
    config: Any
    """The strategy's settings object (its registered settings type) or None."""
    samples: int
    """Samples one problem holds at most (the strategy's declared `samples`)."""
    vote: str
    """The aggregation key that picks the answer: majority, weighted:<kind> or best_of_n:<kind>."""
    pick_kind: str | None
    """The score kind that picks a class's sample (its text is the message content)."""
    answers: int
    """Choices per problem: the top answer classes (the standard `n`)."""
    return_candidates: bool
    stream: bool
    include_usage: bool

    @property
    def batch_key(self) -> tuple:
        """Requests with equal keys can share one Engine.solve call (a budget is per request: a batch of k requests
        shares k budgets)."""
        config = json.dumps(dataclasses.asdict(self.config), sort_keys=True) if self.config is not None else None
        return (
            self.run.strategy,
            self.run.budget_tokens,
            json.dumps(dataclasses.asdict(self.params), sort_keys=True),
            config,
        )

    @property
    def rows_per_problem(self) -> int:
        return max(self.params.n, self.samples)


@dataclass
class Defaults:
    """What a request gets for every field it leaves out, and the server's caps (from `tts serve`'s options)."""

    model_name: str
    run: RunConfig
    """The run's settings: the strategy, and when a choice abstains."""
    params: SamplingParams
    """The server's sampling settings (`tts serve`'s SamplingParams options); a request overrides n, temperature,
    top_p, max tokens, seed and stop."""
    aggregation: str
    score_kind: dict[str, str | None]
    """Strategy -> default kind of weighted / best_of_n (None: no verifier; majority then picks by likelihood)."""
    score_kinds: dict[str, tuple[str, ...]]
    """Strategy -> the kinds its records carry (`tts_engine.strategies.record_kinds`): what a request may name."""
    return_candidates: bool
    configs: dict[str, Any]
    """Strategy-settings type name -> the server's default instance."""
    strategies: dict[str, Any]
    """Strategy name -> its registry entry (`tts_engine.strategies.StrategyEntry`)."""
    max_samples: int
    max_tokens: int
    max_prompts: int


# --- typed field readers -----------------------------------------------------------------------------------
def _show(value: Any) -> str:
    text = json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def read_int(body: dict, name: str, low: int, high: int | None, default: Any, param: str | None = None) -> Any:
    value = body.get(name)
    if value is None:  # absent or null: the default (OpenAI's reading of null)
        return default
    bound = f"in [{low}, {high}]" if high is not None else f">= {low}"
    if not is_int(value) or value < low or (high is not None and value > high):
        raise ApiError(f"{param or name} must be an integer {bound}, got {_show(value)}", param=param or name)
    return value


def read_float(
    body: dict, name: str, low: float, high: float, default: Any, *, open_low: bool = False, param: str | None = None
) -> Any:
    value = body.get(name)
    param = param or name
    if value is None:  # absent or null: the default (OpenAI's reading of null)
        return default
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value > high or value < low or (open_low and value == low):
        bound = f"({low}, {high}]" if open_low else f"[{low}, {high}]"
        raise ApiError(f"{param} must be a number in {bound}, got {_show(value)}", param=param)
    return float(value)


def read_bool(body: dict, name: str, default: bool, param: str | None = None) -> bool:
    value = body.get(name, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ApiError(f"{param or name} must be true or false, got {_show(value)}", param=param or name)
    return value


def read_object(body: dict, name: str) -> dict:
    value = body.get(name)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError(f"{name} must be an object, got {_show(value)}", param=name)
    return value


def read_stop(body: dict) -> tuple[str, ...]:
    """`stop`: a string or a list of at most 4 non-empty strings (OpenAI's rule)."""
    value = body.get("stop")
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or len(items) > 4 or not all(isinstance(s, str) and s for s in items):
        raise ApiError(f"stop must be a non-empty string or a list of at most 4, got {_show(value)}", param="stop")
    return tuple(sorted(set(items)))


# --- problems ----------------------------------------------------------------------------------------------
def content_text(content: Any, where: str) -> str:
    """A message's content as text: a string, or a list of {"type": "text", "text": ...} parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and content:
        texts = []
        for k, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise ApiError(
                    f"{where}[{k}] must be a text part {{'type': 'text', 'text': ...}}, got {_show(part)}",
                    param=where,
                )
            texts.append(part["text"])
        return "".join(texts)
    raise ApiError(f"{where} must be a string or a list of text parts, got {_show(content)}", param=where)


def chat_problem(body: dict) -> str:
    """The problem of a chat request: its last user turn (the model's own template supplies the rest)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ApiError(f"messages must be a non-empty list of messages, got {_show(messages)}", param="messages")
    problem = None
    for i, message in enumerate(messages):
        if not isinstance(message, dict):
            raise ApiError(
                f"messages[{i}] must be an object with role and content, got {_show(message)}", param="messages"
            )
        role = message.get("role")
        if role not in ROLES:
            raise ApiError(f"messages[{i}].role must be one of {list(ROLES)}, got {_show(role)}", param="messages")
        if role == "user":
            problem = content_text(message.get("content"), f"messages[{i}].content")
    if problem is None:
        roles = [m.get("role") for m in messages]
        raise ApiError(
            f"messages has no user turn (roles {roles}): send the problem as a user message", param="messages"
        )
    return problem


def completion_problems(body: dict, max_prompts: int) -> list[str]:
    """The problems of a completions request: `prompt` as a string or a list of strings."""
    prompt = body.get("prompt")
    prompts = [prompt] if isinstance(prompt, str) else prompt
    if not isinstance(prompts, list) or not prompts or not all(isinstance(p, str) for p in prompts):
        raise ApiError(
            f"prompt must be a string or a non-empty list of strings (token ids are not accepted), got {_show(prompt)}",
            param="prompt",
        )
    if len(prompts) > max_prompts:
        raise ApiError(f"prompt lists {len(prompts)} prompts; this server takes at most {max_prompts}", param="prompt")
    return prompts


def check_problem(text: str, param: str) -> str:
    """A problem text the tokenizer can take: not blank, valid Unicode (JSON escapes can spell lone surrogates)."""
    if not text.strip():
        raise ApiError(f"{param} is empty: send the problem text", param=param)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        bad = text[err.start : err.end].encode("utf-8", "backslashreplace").decode()
        raise ApiError(
            f"{param} is not valid Unicode: a lone surrogate {bad} at character {err.start}", param=param
        ) from None
    return text


# --- the whole request -------------------------------------------------------------------------------------
def parse_request(body: Any, kind: str, defaults: Defaults) -> SolveRequest:
    """A chat ("chat") or completions ("completion") body -> a SolveRequest, or the ApiError naming what is wrong."""
    if not isinstance(body, dict):
        raise ApiError(f"the request body must be a JSON object, got {_show(body)}", param=None)
    prefix = model_strategy(body.get("model"), defaults)
    if kind == "chat":
        texts = [check_problem(chat_problem(body), "messages")]
    else:
        texts = [check_problem(t, "prompt") for t in completion_problems(body, defaults.max_prompts)]
    tts = read_object(body, "tts")
    strategy = tts_strategy(tts, prefix, defaults)
    n = read_int(tts, "n", 1, defaults.max_samples, defaults.params.n, param="tts.n")
    config = strategy_config(tts, strategy, n, defaults)
    vote, pick_kind = tts_vote(tts, strategy, defaults)
    max_new_tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    name = "max_completion_tokens" if "max_completion_tokens" in body else "max_tokens"
    max_new_tokens = read_int({name: max_new_tokens}, name, 1, defaults.max_tokens, None)
    stream_options = read_object(body, "stream_options")
    samples = defaults.strategies[strategy].samples(n, config)
    params = dataclasses.replace(
        defaults.params,
        n=n,
        temperature=read_float(body, "temperature", 0.0, 2.0, defaults.params.temperature),
        top_p=read_float(body, "top_p", 0.0, 1.0, defaults.params.top_p, open_low=True),
        max_new_tokens=max_new_tokens or defaults.params.max_new_tokens,
        seed=read_int(body, "seed", -(2**63), 2**63 - 1, defaults.params.seed),
        stop=list(read_stop(body)),
    )
    return SolveRequest(
        kind=kind,
        model=body["model"],
        texts=tuple(texts),
        run=run_settings(tts, strategy, defaults),
        params=params,
        config=config,
        samples=samples,
        vote=vote,
        pick_kind=pick_kind,
        answers=read_int(body, "n", 1, max(n, samples), 1),
        return_candidates=read_bool(
            tts, "return_candidates", defaults.return_candidates, param="tts.return_candidates"
        ),
        stream=read_bool(body, "stream", False),
        include_usage=read_bool(stream_options, "include_usage", False, param="stream_options.include_usage"),
    )


def run_settings(tts: dict, strategy: str, defaults: Defaults) -> RunConfig:
    """The request's run settings: its `tts` values of RunConfig's fields over the server's, checked by RunConfig
    itself (a bad value is a 400 naming the field)."""
    given = {name: tts[name] for name in RUN_FIELDS if tts.get(name) is not None}
    try:
        return dataclasses.replace(defaults.run, **{**given, "strategy": strategy})
    except (ValueError, TypeError) as err:
        field = next((name for name in given if name in str(err)), None)
        raise ApiError(str(err), param=f"tts.{field}" if field else "tts") from None


def model_strategy(model: Any, defaults: Defaults) -> str | None:
    """The strategy a model name carries as a prefix ("<strategy>:tts-default" -> "<strategy>"); None for the bare name."""
    served = defaults.model_name
    if not isinstance(model, str) or not model:
        raise ApiError(f"model must be a string naming the model ({served!r}), got {_show(model)}", param="model")
    if model == served:
        return None
    prefix, sep, rest = model.partition(":")
    if sep and rest == served and prefix in defaults.strategies:
        return prefix
    raise ApiError(
        f"model {_show(model)} does not exist: this server serves {served!r}, or '<strategy>:{served}' with "
        f"<strategy> one of {sorted(defaults.strategies)}",
        param="model",
        code="model_not_found",
        status=404,
    )


def tts_strategy(tts: dict, prefix: str | None, defaults: Defaults) -> str:
    """tts.strategy, else the model name's prefix, else the server's default; unknown keys of `tts` fail here."""
    strategy = tts.get("strategy")
    if strategy is not None and (not isinstance(strategy, str) or strategy not in defaults.strategies):
        raise ApiError(
            f"tts.strategy must be one of {sorted(defaults.strategies)}, got {_show(strategy)}", param="tts.strategy"
        )
    if strategy and prefix and strategy != prefix:
        raise ApiError(
            f"tts.strategy {strategy!r} contradicts the model name's strategy {prefix!r}: send one of them",
            param="tts.strategy",
        )
    strategy = strategy or prefix or defaults.run.strategy
    own = request_fields(defaults.strategies[strategy])
    for key in tts:
        if key in TTS_FIELDS or key in own:
            continue
        owners = [s for s, e in sorted(defaults.strategies.items()) if key in request_fields(e)]
        where = f"a setting of {', '.join(owners)}" if owners else f"known: {sorted({*TTS_FIELDS, *own})}"
        raise ApiError(f"tts.{key}: strategy {strategy!r} takes no {key!r} ({where})", param=f"tts.{key}")
    return strategy


def request_fields(entry) -> dict[str, Any]:
    """Field name -> annotation of the settings a request may set for a strategy (its registry entry declares
    which; none for fixed)."""
    if entry.config_type is None:
        return {}
    hints = typing.get_type_hints(entry.config_type)
    return {name: hints.get(name) for name in entry.requestable()}


def strategy_config(tts: dict, strategy: str, n: int, defaults: Defaults) -> Any:
    """The server's settings of `strategy` with the request's overrides, validated by the dataclass itself."""
    entry = defaults.strategies[strategy]
    config_type = entry.config_type
    if config_type is None:
        return None
    types = request_fields(entry)
    given = {k: v for k, v in tts.items() if k in types}
    for key, value in given.items():
        check_json_type(value, types[key], f"tts.{key}")
    try:
        config = dataclasses.replace(defaults.configs[config_type.__name__], **given)
    except (ValueError, TypeError) as err:
        raise ApiError(str(err), param=_param_named(str(err), list(types))) from None
    try:
        entry.check_n(n, config)  # the strategy's declared rule on n
    except ValueError as err:
        raise ApiError(f"tts.n: {err}", param="tts.n") from None
    caps = {"samples": defaults.max_samples, "tokens": defaults.max_tokens}
    for key, cap_name in entry.request_caps:  # on what the request asks
        value, cap = given.get(key), caps[cap_name]
        if value is not None and max(value if isinstance(value, list) else [value], default=0) > cap:
            raise ApiError(f"tts.{key} may not pass {cap} on this server, got {_show(value)}", param=f"tts.{key}")
    return config


def check_json_type(value: Any, annotation: Any, param: str) -> None:
    """A JSON value against a settings field's annotation (int, float, bool, str, list[int], optional)."""
    args = typing.get_args(annotation)
    if value is None:
        if type(None) in args:
            return
        raise ApiError(f"{param} may not be null", param=param)
    base = next((a for a in args if a is not type(None)), annotation) if args and type(None) in args else annotation
    origin = typing.get_origin(base)
    expected = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
    if origin is list:
        item = (typing.get_args(base) or (Any,))[0]
        if not isinstance(value, list) or not all(_is(v, item) for v in value):
            raise ApiError(
                f"{param} must be a list of {expected.get(item, 'values')}s, got {_show(value)}", param=param
            )
    elif origin is typing.Literal:
        if value not in typing.get_args(base):
            raise ApiError(f"{param} must be one of {list(typing.get_args(base))}, got {_show(value)}", param=param)
    elif base in expected and not _is(value, base):
        raise ApiError(f"{param} must be {expected[base]}, got {_show(value)}", param=param)


def _is(value: Any, tp: Any) -> bool:
    if tp is bool:
        return isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    return tp is Any or not isinstance(tp, type) or isinstance(value, tp)


def _param_named(message: str, names: list[str]) -> str | None:
    for name in sorted(names, key=len, reverse=True):
        if re.search(rf"\b{re.escape(name)}\b", message):
            return f"tts.{name}"
    return None


def tts_vote(tts: dict, strategy: str, defaults: Defaults) -> tuple[str, str]:
    """(aggregation key, the score kind that picks a class's sample), among the kinds `strategy`'s records carry.
    `aggregation` may carry the kind itself ("weighted:likelihood")."""
    aggregation = tts.get("aggregation", defaults.aggregation)
    if not isinstance(aggregation, str):
        raise ApiError(
            f"tts.aggregation must be one of {sorted(AGGREGATIONS)}, got {_show(aggregation)}", param="tts.aggregation"
        )
    rule, _, kind = aggregation.partition(":")
    if rule not in AGGREGATIONS or (kind and rule == "majority"):
        raise ApiError(
            f"tts.aggregation must be one of {sorted(AGGREGATIONS)} (or weighted:<kind>, best_of_n:<kind>), "
            f"got {_show(aggregation)}",
            param="tts.aggregation",
        )
    kind = tts.get("score_kind") or kind or defaults.score_kind[strategy] or "likelihood"
    kinds = defaults.score_kinds[strategy]
    if not isinstance(kind, str) or kind not in kinds:
        raise ApiError(
            f"tts.score_kind must be one of {list(kinds)} (strategy {strategy}), got {_show(kind)}",
            param="tts.score_kind",
        )
    return ("majority" if rule == "majority" else f"{rule}:{kind}"), kind
