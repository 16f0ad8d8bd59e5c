"""What a non-editable install ships: every package of the source tree, under the tts_engine namespace."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")  # Python 3.11+
ROOT = Path(__file__).resolve().parents[1]


def test_every_package_folder_is_listed_for_the_wheel():
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join([name, *init.parent.relative_to(ROOT / folder).parts])
        for name, folder in tool["package-dir"].items()
        for init in (ROOT / folder).rglob("__init__.py")
    }
    missing = on_disk - set(tool["packages"])
    assert not missing, f"packages missing from pyproject.toml's [tool.setuptools] packages: {sorted(missing)}"
