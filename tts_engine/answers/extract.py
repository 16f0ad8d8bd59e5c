"""Final-answer extraction from a solution text: the last \\boxed{...}, else an "answer is ..." phrase.

Every function here runs in time linear in the text and never raises: solutions are model output,
and a bad sample must not crash a batch.
"""

from __future__ import annotations

import re

BOX_COMMANDS = ("\\boxed", "\\fbox")
"""LaTeX commands whose argument is the final answer."""

MAX_BOX_CHARS = 100_000
"""A box whose content runs longer than this is no answer (None): the scan for its closing brace stops
there, which bounds the cost of hostile inputs (real final answers are a few dozen characters)."""

_SPACES = re.compile(r"[ \t]*")
_BARE_TOKEN = re.compile(r"[^\s$]*")
_BRACE_OR_ESCAPE = re.compile(r"\\.|[{}]", re.DOTALL)
_ANSWER_PHRASE = re.compile(r"\banswer\b[ \t]*(?:is\b[ \t]*:?|:)[ \t]*", re.IGNORECASE)
_TRAILING = " \t.;,"


def extract_answer(text: str) -> str | None:
    """The final answer of a solution, or None when it has none.

    1. The content of the last `\\boxed{...}` / `\\fbox{...}` (nested braces; `\\{` and `\\}` are
       literal braces and do not nest), or the token after `\\boxed ` written without braces.
       When that last box is never closed (a truncated sample), or its content runs past
       MAX_BOX_CHARS, the answer is None: an earlier box is an intermediate result, not the final answer.
    2. Else the text after the last "answer is" / "answer:" on its line, trimmed of a trailing
       period and of `$`/`**` wrappers.
    3. Else None. An empty answer is None too.
    """
    if not isinstance(text, str):
        return None
    start = _last_box_argument_start(text)
    if start is not None:
        return _nonempty(_box_argument(text, start))
    return _nonempty(_answer_phrase(text))


def _last_box_argument_start(text: str) -> int | None:
    """Index just after the last box command that is a whole command name, or None."""
    best = None
    for command in BOX_COMMANDS:
        end = len(text)
        while True:
            i = text.rfind(command, 0, end)
            if i < 0:
                break
            after = i + len(command)
            if after >= len(text) or not text[after].isalpha():  # "\boxedfoo" is another command
                best = after if best is None or after > best else best
                break
            end = i
    return best


def _box_argument(text: str, start: int) -> str | None:
    """The braced (or bare-token) argument that starts at `start`, or None if it never closes
    (within MAX_BOX_CHARS)."""
    i = _SPACES.match(text, start).end()
    if i >= len(text):
        return None
    if text[i] != "{":
        return _bare_token(text, i)
    depth = 0
    for match in _BRACE_OR_ESCAPE.finditer(text, i, min(len(text), i + MAX_BOX_CHARS + 2)):
        token = match.group(0)
        if token == "{":
            depth += 1
        elif token == "}":
            depth -= 1
            if depth == 0:
                return text[i + 1 : match.start()]
        # an escaped character (\{, \}, \\) never opens or closes a group
    return None


def _bare_token(text: str, i: int) -> str | None:
    """`\\boxed 5$` -> "5": the run of characters up to whitespace, `$` or the end."""
    return _BARE_TOKEN.match(text, i).group(0).rstrip(_TRAILING)


def _answer_phrase(text: str) -> str | None:
    last = None
    for last in _ANSWER_PHRASE.finditer(text):
        pass
    if last is None:
        return None
    line_end = text.find("\n", last.end())
    line = text[last.end() : line_end if line_end >= 0 else len(text)]
    return _strip_wrappers(line)


def _strip_wrappers(answer: str) -> str:
    answer = answer.strip().rstrip(_TRAILING)
    for left, right in (("**", "**"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if len(answer) >= len(left) + len(right) and answer.startswith(left) and answer.endswith(right):
            answer = answer[len(left) : len(answer) - len(right)].strip().rstrip(_TRAILING)
    return answer


def _nonempty(answer: str | None) -> str | None:
    if answer is None:
        return None
    answer = answer.strip()
    return answer or None
