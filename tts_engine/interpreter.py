"""How the engine starts a Python child process: the launcher's interpreter, so the same installation."""

import sys

PYTHON = (sys.executable, "-P")
"""`-P` keeps the child's working folder off its import path: run from a checkout, the root's kernels/ folder
would otherwise shadow the `kernels` distribution that transformers imports."""
