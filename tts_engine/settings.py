"""One settings mechanism for every command: a config dataclass becomes click options.

Each field is one option: `--field-name`, its type from the annotation (`Literal[...]` -> a choice, `bool` ->
`--x/--no-x`, `list[int]` -> comma-separated, `dict` -> repeatable KEY=VALUE), its help from the docstring
under the field, its default shown. Values come from the dataclass defaults, then a `--config FILE` (JSON or
YAML), then the options given on the command line (nanoGPT's configurator order). Adding an option to a
command is adding one field with its docstring. Extra flags or CLI-only fields go in the field's metadata
with `setting(...)`.

Errors: the `tts` group turns a bad setting (ValueError, a missing file, a missing optional package) raised
anywhere in a command into one line `Error: ...` (`tts -v` shows the traceback instead).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import json
import re
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Callable, Literal

import click

SETTING_ERRORS = (ValueError, OSError, ImportError)
"""Exceptions a command turns into a one-line error (bad values, missing files, missing optional packages)."""


def setting(
    default: Any = dataclasses.MISSING,
    *,
    flags: tuple[str, ...] = (),
    choices: tuple[str, ...] = (),
    cli: bool = True,
    default_factory: Any = dataclasses.MISSING,
    flag: str | None = None,
    deprecated: tuple[str, ...] = (),
) -> Any:
    """A dataclass field with command-line metadata: extra `flags` (other spellings, e.g. the singular of a
    repeatable option), `choices` (when they live in a registry rather than a Literal), `cli=False` (config file
    only), `flag` (the option's name when it is not the field's), `deprecated` (old names that still work for a
    release, with a warning)."""
    metadata = {"flags": tuple(flags), "choices": tuple(choices), "cli": cli, "flag": flag, "deprecated": deprecated}
    if default_factory is not dataclasses.MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


# --- value checks -------------------------------------------------------------------------------------------
def is_int(value: Any) -> bool:
    """An integer that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_int(name: str, value: Any, least: int = 1) -> int:
    """`value` when it is an integer >= `least`, else a ValueError naming the setting and the value."""
    if not is_int(value) or value < least:
        raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    return value


def check_probability(name: str, value: float | None) -> float | None:
    """`value` (None allowed: not set) when it is a number in [0, 1], else a ValueError naming the setting."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {value!r}")
    return float(value)


# --- field docstrings ---------------------------------------------------------------------------------------
@functools.cache
def field_docs(cls: type) -> dict[str, str]:
    """Field name -> the docstring written under it, for `cls` and its dataclass bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body
        for node, after in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


# --- types --------------------------------------------------------------------------------------------------
def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _field_type(cls: type, name: str) -> Any:
    return _unwrap_optional(typing.get_type_hints(cls)[name])


def parse_key_values(items: tuple[str, ...] | list[str], option: str = "--backend-option") -> dict[str, Any]:
    """KEY=VALUE pairs; values read as int, float, true/false or text; dashes in keys become underscores."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint=option)
        options[key.replace("-", "_")] = parse_scalar(value)
    return options


def parse_scalar(text: str) -> Any:
    """'true' -> True, '3' -> 3, '0.5' -> 0.5, anything else stays text."""
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


class CommaList(click.ParamType):
    """'1,2,3' -> [1, 2, 3] of one element type."""

    name = "list"

    def __init__(self, item: type):
        self.item = item

    def convert(self, value, param, ctx):
        if isinstance(value, list):
            return value
        try:
            return [self.item(part) for part in str(value).split(",") if part.strip()]
        except ValueError:
            self.fail(f"expected comma-separated {self.item.__name__} values such as 1,2,3, got {value!r}", param, ctx)


def _click_type(tp: Any, choices: tuple[str, ...]) -> dict[str, Any]:
    """click keyword arguments (type, multiple, is_flag) for one field type."""
    if choices:
        return {"type": click.Choice(choices)}
    if typing.get_origin(tp) is Literal:
        return {"type": click.Choice([str(a) for a in typing.get_args(tp)])}
    if tp is bool:
        return {"type": bool}
    if typing.get_origin(tp) is tuple:
        return {"type": (typing.get_args(tp) or (str,))[0], "multiple": True}
    if typing.get_origin(tp) is list:
        return {"type": CommaList((typing.get_args(tp) or (str,))[0])}
    if tp is dict or typing.get_origin(tp) is dict:
        return {"type": str, "multiple": True, "metavar": "KEY=VALUE"}
    if tp in (int, float, str):
        return {"type": tp}
    return {"type": str}


def _show(value: Any) -> str | None:
    if value is None or value in ({}, [], ()):
        return None
    if isinstance(value, list):
        return ",".join(map(str, value))
    return str(value)


def _default_of(f: dataclasses.Field, defaults: dict[str, Any]) -> Any:
    if f.name in defaults:
        return defaults[f.name]
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None


def cli_fields(cls: type, exclude: tuple[str, ...] = ()) -> list[dataclasses.Field]:
    """The fields of `cls` that are command-line options (nested dataclasses are config-file only)."""
    out = []
    for f in dataclasses.fields(cls):
        if f.name in exclude or not f.metadata.get("cli", True):
            continue
        if dataclasses.is_dataclass(_field_type(cls, f.name)):
            continue
        out.append(f)
    return out


def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def make_options(
    cls: type,
    *,
    exclude: tuple[str, ...] = (),
    defaults: dict[str, Any] | None = None,
    flags: dict[str, tuple[str, ...]] | None = None,
    deprecated: dict[str, tuple[str, ...]] | None = None,
) -> list:
    """One click.Option per field of `cls`. Their click default is None, so only options given on the
    command line override the config file; the help shows the dataclass (or `defaults`) value. `flags`:
    field -> extra option names (besides those in the field's metadata); `deprecated`: field -> old option
    names that still work, with a warning (`Command` rewrites them)."""
    defaults, flags, deprecated = defaults or {}, flags or {}, deprecated or {}
    docs = field_docs(cls)
    params = []
    for f in cli_fields(cls, exclude):
        kind = _click_type(_field_type(cls, f.name), f.metadata.get("choices", ()))
        default = _default_of(f, defaults)
        flag = f.metadata.get("flag") or option_name(f.name)
        if kind.get("type") is bool:  # off by default: a plain flag; on by default: --x/--no-x
            kind = {"is_flag": True}
            flag = flag if default is False else f"{flag}/--no-{flag[2:]}"
            default = None if default is False else default
        extra = [name for name in (*f.metadata.get("flags", ()), *flags.get(f.name, ())) if name != flag]
        shown = _show(default)
        text = docs.get(f.name, "") + (f"  [default: {shown}]" if shown is not None else "")
        option = click.Option([flag, *extra, f.name], default=None, help=text, **kind)
        option.deprecated_names = (*f.metadata.get("deprecated", ()), *deprecated.get(f.name, ()))
        params.append(option)
    return params


def options(
    cls: type,
    *,
    exclude: tuple[str, ...] = (),
    defaults: dict[str, Any] | None = None,
    flags: dict[str, tuple[str, ...]] | None = None,
    deprecated: dict[str, tuple[str, ...]] | None = None,
) -> Callable:
    """Decorator: add the options of `cls`'s fields to a click command (they arrive as keyword arguments
    named like the fields; pass them to `build`)."""

    def decorate(command: Callable) -> Callable:
        for param in reversed(
            make_options(cls, exclude=exclude, defaults=defaults, flags=flags, deprecated=deprecated)
        ):
            click.decorators._param_memo(command, param)
        return command

    return decorate


def config_option(command: Callable) -> Callable:
    """Decorator: `--config FILE`, a JSON or YAML file of settings (command-line options win)."""
    return click.option(
        "--config",
        "config_file",
        type=click.Path(exists=True, dir_okay=False),
        default=None,
        help="JSON or YAML file of settings (options given on the command line win).",
    )(command)


# --- building a config --------------------------------------------------------------------------------------
def read_config_file(path: str | Path) -> dict[str, Any]:
    """Settings from a JSON (.json) or YAML (.yaml, .yml) file holding one mapping."""
    path = Path(path)
    text = path.read_text(encoding="utf-8")
    if path.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as err:
            raise ValueError(f"{path}: invalid YAML: {str(err).splitlines()[0]}") from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{err.lineno}: invalid JSON: {err.msg}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of settings, got {type(data).__name__}")
    return data


def build(
    cls: type,
    given: dict[str, Any] | None = None,
    *,
    config_file: str | Path | None = None,
    defaults: dict[str, Any] | None = None,
) -> Any:
    """An instance of `cls` from its defaults, then `defaults`, then the config file, then the `given` options
    that are not None (keys that are not fields of `cls` are ignored, so one command can build several configs
    from its keyword arguments). A bad value is a ValueError that names the option."""
    known = {f.name: f for f in dataclasses.fields(cls)}
    values = dict(defaults or {})
    from_file: dict[str, Any] = {}
    if config_file is not None:
        from_file = read_config_file(config_file)
        unknown = sorted(set(from_file) - set(known))
        if unknown:
            raise ValueError(f"{config_file}: unknown settings {unknown}; known: {sorted(known)}")
        values.update(from_file)
    on_line = {k: v for k, v in (given or {}).items() if k in known and v is not None and v != ()}
    values.update(on_line)
    in_file = {k for k in from_file if k not in on_line}  # settings whose value the file gave
    try:
        for name, value in list(values.items()):
            values[name] = _coerce(cls, known[name], value)
        return cls(**values)
    except ValueError as err:
        message = _name_the_option(str(err), known)
        named = next(
            (name for name in sorted(known, key=len, reverse=True) if re.search(rf"\b{name}\b", str(err))), None
        )
        raise ValueError(f"{config_file}: {message}" if named in in_file else message) from None
    except TypeError as err:
        raise ValueError(f"bad settings for {cls.__name__}: {err}") from None


def _coerce(cls: type, f: dataclasses.Field, value: Any) -> Any:
    """Nested dataclasses from mappings, KEY=VALUE items to dicts, tuples to lists."""
    tp = _field_type(cls, f.name)
    if dataclasses.is_dataclass(tp) and isinstance(value, dict):
        return build(tp, value)
    if (tp is dict or typing.get_origin(tp) is dict) and isinstance(value, (tuple, list)):
        return parse_key_values(value, option_name(f.name)) if value else None
    if isinstance(value, tuple):
        return list(value)
    return value


def _name_the_option(message: str, known: dict[str, Any]) -> str:
    """'group_size must be >= 2' -> 'invalid value for --group-size: group_size must be >= 2'."""
    for name in sorted(known, key=len, reverse=True):
        if re.search(rf"\b{re.escape(name)}\b", message):
            return f"invalid value for {option_name(name)}: {message}"
    return message


# --- one error handler --------------------------------------------------------------------------------------
class OneLineErrors:
    """Mixin for click commands and groups: a bad setting raised inside the command (or any subcommand)
    becomes `Error: <one line>` and exit status 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except SETTING_ERRORS as err:
            root = ctx.find_root()
            if (root.params or {}).get("verbose"):
                raise
            raise click.ClickException(one_line(err)) from err


def one_line(err: BaseException) -> str:
    """The message of an exception on one line (FileNotFoundError without its errno prefix)."""
    if isinstance(err, FileNotFoundError) and err.strerror and err.filename:
        text = f"no such file: {err.filename}"
    elif isinstance(err, ModuleNotFoundError) and err.name:
        text = f"{err.msg}; install it (e.g. `pip install {err.name.split('.')[0]}`) or choose another option"
    else:
        text = str(err) or type(err).__name__
    return " ".join(text.split())


class Command(OneLineErrors, click.Command):
    """A command whose bad settings are one-line errors even when it is invoked on its own (tests, scripts), and
    whose deprecated option names still work, with a warning."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, rename_deprecated(self.params, args))


def rename_deprecated(params: list, args: list[str]) -> list[str]:
    """`args` with every deprecated option name (`Option.deprecated_names`) replaced by the option's own name;
    a warning on stderr names each replacement."""
    renames = {old: p.opts[0] for p in params for old in getattr(p, "deprecated_names", ())}
    out = []
    for arg in args:
        name, sep, value = arg.partition("=")
        if name in renames:
            click.echo(f"warning: {name} is deprecated and will be removed; use {renames[name]}", err=True)
            arg = renames[name] + sep + value
        out.append(arg)
    return out


class Group(OneLineErrors, click.Group):
    """A group whose subcommands' bad settings are one-line errors."""
