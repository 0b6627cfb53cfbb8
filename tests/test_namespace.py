"""The library installs under ``sceneforge.*`` only (setup.py; issue 35 item 1): a user's own
top-level ``core``, ``engine``, ``scenarios``... neither shadows ours nor is shadowed.

The throwaway packages come first on ``PYTHONPATH``, ahead of site-packages (a stronger shadow
than installing them beside us), and every one of them fails on import: the demo, its render
server subprocess and two local farm workers must never load them.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

LIBRARY = ("core", "engine", "scenarios", "probing", "renderfarm", "assets_manifest")
CLI = "import sys; from sceneforge.cli import main; sys.exit(main())"


@pytest.fixture
def shadowed(tmp_path):
    site = tmp_path / "user_site"
    for name in LIBRARY:
        (site / name).mkdir(parents=True)
        message = f"the user's own {name!r} was imported, not sceneforge's"
        (site / name / "__init__.py").write_text(f"raise ImportError({message!r})\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    run_dir = tmp_path / "cwd"
    run_dir.mkdir()
    return env, run_dir


def _sceneforge(args, env, cwd):
    return subprocess.run([sys.executable, "-c", CLI, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)


def test_the_shadow_is_real(shadowed):
    env, cwd = shadowed
    p = subprocess.run([sys.executable, "-c", "import engine"], env=env, cwd=cwd, capture_output=True, text=True)
    assert p.returncode != 0 and "the user's own 'engine'" in p.stderr


@pytest.mark.render
def test_demo_and_farm_workers_ignore_a_users_own_core_and_engine(shadowed):
    env, cwd = shadowed
    p = _sceneforge(["demo", "--n", "2", "--out", "demo", "--quiet", "--no-fetch"], env, cwd)
    assert p.returncode == 0, p.stderr[-2000:]
    assert (cwd / "demo" / "samples.parquet").is_file()
    p = _sceneforge(
        ["generate", "--env", "desert", "--task", "ego", "--n", "4", "--out", "gen", "--workers", "2", "--quiet", "--no-fetch"],
        env,
        cwd,
    )
    assert p.returncode == 0, p.stderr[-2000:]
    assert "user's own" not in p.stderr
