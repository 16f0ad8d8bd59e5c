"""README.md stays a newcomer's page: at most 250 lines, its links resolve, and its Python runs as written.

Every ```python block of README runs in a fresh interpreter from an empty temporary folder and must exit 0. A
block that talks to `tts serve` at http://127.0.0.1:8000/v1 runs against a real `tts serve` (no options, as README
starts it) on a free loopback port. A `print(...)` line's expected output is the comment at its end (after two
spaces) or the comment line right below it; printed lines are compared with those, numbers with a decimal point
within 0.01, everything else exactly, so the outputs README shows are what the code prints now.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MAX_LINES = 250
TIMEOUT_S = 300  # each block; the bundled example takes 10-20 s on 2 idle cores
SERVER_URL = "http://127.0.0.1:8000/v1"
NUMBER = re.compile(r"-?\d+(?:\.\d+)?(?:e-?\d+)?")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, re.S | re.M)


def expected_prints(code: str) -> list[str | None]:
    """Each print line's expected output (its trailing `  # ...` or the `# ...` line under it), else None."""
    lines = code.splitlines()
    expected: list[str | None] = []
    for k, line in enumerate(lines):
        if not line.startswith("print("):
            continue
        if "  # " in line:
            expected.append(line.rsplit("  # ", 1)[1].strip())
        elif k + 1 < len(lines) and lines[k + 1].startswith("# "):
            expected.append(lines[k + 1][2:].strip())
        else:
            expected.append(None)
    return expected


def same_output(printed: str, expected: str) -> bool:
    """Equal text around the numbers; numbers with a decimal point within 0.01, the others equal."""
    if NUMBER.split(printed) != NUMBER.split(expected):
        return False
    got, want = NUMBER.findall(printed), NUMBER.findall(expected)
    if len(got) != len(want):
        return False
    for a, b in zip(got, want):
        if "." in a or "." in b or "e" in a or "e" in b:
            if abs(float(a) - float(b)) > 0.01:
                return False
        elif a != b:
            return False
    return True


def test_same_output_compares_text_exactly_and_decimals_loosely():
    assert same_output("174 0.990444 1.0 [('174', 0.873)]", "174 0.99 1.0 [('174', 0.875)]")
    assert not same_output("274 0.990444", "174 0.990444")
    assert not same_output("75 False 0.9", "75 True 0.9")
    assert not same_output("0.5", "0.9")
    assert expected_prints("x = 1\nprint(x)  # 1\nprint(2)\n# 2\nprint(3)\n") == ["1", "2", None]


def test_readme_is_at_most_250_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= MAX_LINES, f"README.md has {len(lines)} lines (at most {MAX_LINES}): move detail to docs/"


def test_readme_links_resolve():
    """Every relative link of README names a file (and, with #anchor, a heading of that markdown file)."""
    broken = []
    for target in LINK.findall(README.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = ROOT / path if path else README
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in heading_anchors(file.read_text()):
            broken.append(target)
    assert not broken, f"README links to what does not exist: {broken}"


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors of a markdown file's headings (lowercase, punctuation dropped, spaces to hyphens)."""
    anchors = set()
    for line in markdown.splitlines():
        match = re.match(r"#{1,6} (.*)", line)
        if match:
            text = re.sub(r"[^\w\- ]", "", match.group(1).strip().lower())
            anchors.add(text.replace(" ", "-"))
    return anchors


BLOCKS = python_blocks(README.read_text())


def test_readme_has_python_examples():
    assert BLOCKS, "README.md has no ```python block"


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=[f"block{k}" for k in range(len(BLOCKS))])
def test_readme_python_block_runs_as_written(index, tmp_path):
    code = BLOCKS[index]
    if SERVER_URL in code:
        pytest.importorskip("openai")
        pytest.importorskip("fastapi")
        pytest.importorskip("uvicorn")
        from tts_engine.serve.process import ServerProcess

        with ServerProcess([]) as server:
            stdout = run_block(code.replace(SERVER_URL, f"{server.url}/v1"), tmp_path)
    else:
        stdout = run_block(code, tmp_path)
    expected = expected_prints(code)
    printed = stdout.splitlines()
    assert len(printed) == len(expected), (
        f"block {index} printed {len(printed)} lines for {len(expected)} prints:\n{stdout}"
    )
    wrong = [
        f"  printed {got!r}\n  README  {want!r}"
        for got, want in zip(printed, expected)
        if want is not None and not same_output(got, want)
    ]
    assert not wrong, f"README block {index} shows outputs the code no longer prints:\n" + "\n".join(wrong)


def run_block(code: str, folder: Path) -> str:
    script = folder / "block.py"
    script.write_text(code)
    result = subprocess.run(
        [sys.executable, "-P", str(script)], cwd=folder, capture_output=True, text=True, timeout=TIMEOUT_S
    )
    assert result.returncode == 0, f"README block raised (exit {result.returncode}):\n{result.stderr[-4000:]}"
    return result.stdout
