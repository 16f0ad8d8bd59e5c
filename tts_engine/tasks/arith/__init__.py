"""The chain-arithmetic task of the embedded default: its problems (`generator`), the text of its solutions
(`chain`) and the units-first recompute check its checkpoint serves (`recompute`, verify form `recompute`)."""

from . import recompute  # noqa: F401  (registers the recompute verify form and its score kind)
