"""A small generated relation dataset for the explorer tests, and the system browser's launcher.

A uniquely named module (not ``conftest``) so other test directories' helpers cannot shadow it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sceneforge.renderfarm import run_job

CHROMIUM = "/usr/bin/chromium"
# nothing downloaded, nothing phoned home: the system browser, headless, no GPU
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
INSTALL = "apt-get install -y chromium && pip install -e '.[test]'  (playwright; never `playwright install`)"

CONFIG = {"envs": ["desert"], "tasks": ["ego", "allo"], "n": 6, "seed": 0, "masks": True, "depth": True}


def generate_small(out: Path, server: str) -> Path:
    """12 desert samples (ego + allo) with masks and depth, through the inline runner."""
    summary = run_job("sparrta", dict(CONFIG), out, backend="inline", server=server, progress=False)
    assert not summary["failed"], summary["failed"]
    return out


def browser():
    """A Playwright context manager and the launch kwargs, or a skip naming the install command."""
    if not (os.path.exists(CHROMIUM) or shutil.which("chromium")):
        pytest.skip(f"no system chromium: {INSTALL}")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip(f"no playwright: {INSTALL}")
    return sync_playwright, {
        "executable_path": CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium"),
        "args": CHROMIUM_ARGS,
    }
