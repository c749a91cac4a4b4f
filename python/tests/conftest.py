"""Shared fixtures: where the sgnn binary and the datasets are, and the project's way of
skipping (print `SKIPPED <what> (<why>, <how to enable>)` and pass, as the Rust tests do)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Callable

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

Skip = Callable[[str, str, str], None]


@pytest.fixture
def skipped(capsys: pytest.CaptureFixture[str]) -> Skip:
    """Prints the SKIPPED line past pytest's capture; the test then returns (and passes)."""
    def say(what: str, why: str, how: str) -> None:
        with capsys.disabled():
            print(f"\nSKIPPED {what} ({why}, {how})", flush=True)
    return say


def sgnn_bin() -> str | None:
    """$SGNN_BIN, else the release build, else the debug build of this checkout."""
    env = os.environ.get("SGNN_BIN")
    if env:
        return env
    for p in (ROOT / "target/release/sgnn", ROOT / "target/debug/sgnn"):
        if p.exists():
            return str(p)
    return None


def has(module: str) -> bool:
    """Whether `module` imports."""
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def datasets() -> Path:
    """$SGNN_DATASETS, else ../shared/datasets beside the checkout."""
    return Path(os.environ.get("SGNN_DATASETS", ROOT.parent / "shared" / "datasets"))


@pytest.fixture
def sgnn(skipped: Skip) -> str | None:
    """The sgnn binary, or None after a SKIPPED line."""
    b = sgnn_bin()
    if b is None:
        skipped("this test", "no sgnn binary",
                "cargo build --release -p sgnn -p sgnn-hostd -p softswitch, or set SGNN_BIN")
    return b
