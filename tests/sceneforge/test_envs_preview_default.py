"""Issue 47 item 8: `envs preview` without --out writes ./env_preview/ENV_k.png, as its help and
docs/environments.md say (it was an undocumented directory), and says where."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.render
def test_the_default_out_is_env_preview_and_documented(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "envs", "preview", "desert", "--procedural", "--views", "2", "--size", "32"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "wrote 2 views to env_preview/"
    assert sorted(p.name for p in (tmp_path / "env_preview").iterdir()) == ["desert_0.png", "desert_1.png"]
    help_text = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", "envs", "preview", "--help"], capture_output=True, text=True
    ).stdout
    assert "default ./env_preview" in " ".join(help_text.split())
    assert "./env_preview/desert_0.png" in (ROOT / "docs" / "environments.md").read_text()
    assert "/env_preview/" in (ROOT / ".gitignore").read_text().splitlines()
