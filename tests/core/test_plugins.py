"""Plugins through entry points (issue 51 items 2-3): the example package's real entry points and
a plugin that raises on import, each installed as a distribution (a ``.dist-info`` folder on the
path of a fresh ``sceneforge`` process, which is all ``pip install`` adds for importlib.metadata).

No registry is patched: the processes find the plugins exactly as an installed package's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sceneforge.core import plugins

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "sceneforge-height"


def _dist(site: Path, name: str, version: str, entry_points: dict[str, dict[str, str]]) -> None:
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()) for group, eps in entry_points.items())
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The example plugin (its own pyproject's entry points) and a broken one, as distributions."""
    site = tmp_path_factory.mktemp("site")
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    _dist(site, project["name"], project["version"], project["entry-points"])
    (site / "broken_plugin.py").write_text('raise RuntimeError("broken on purpose")\n')
    _dist(
        site,
        "broken-plugin",
        "0.0.1",
        {"sceneforge.scenarios": {"broken": "broken_plugin:Scenario"}, "sceneforge.heads": {"brokenhead": "broken_plugin:Head"}},
    )
    return site


def _sceneforge(site: Path, *argv: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(EXAMPLE / "src"), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", *argv], capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout
    )


def test_sceneforge_plugins_lists_each_with_its_distribution_and_one_line_for_a_broken_one(site, tmp_path):
    run = _sceneforge(site, "plugins", cwd=tmp_path)
    assert run.returncode == 1, run.stderr[-2000:]  # something failed to load
    lines = run.stdout.strip().splitlines()
    height = [x for x in lines if " height " in x]
    mlp = [x for x in lines if " mlp " in x]
    broken = [x for x in lines if "broken" in x]
    assert len(height) == 1 and height[0].startswith("sceneforge.scenarios") and height[0].endswith(" ok")
    assert "sceneforge_height.scenario:Height" in height[0] and "[sceneforge-height 0.1.0]" in height[0]
    assert len(mlp) == 1 and mlp[0].startswith("sceneforge.heads") and mlp[0].endswith(" ok")
    assert len(broken) == 2 and all("FAILED: RuntimeError: broken on purpose" in x for x in broken)
    assert all("[broken-plugin 0.0.1]" in x for x in broken)


@pytest.mark.render
def test_a_broken_plugin_does_not_break_generate_and_the_example_scenario_runs(site, tmp_path):
    gen = _sceneforge(site, "generate", "--env", "desert", "--task", "ego", "--n", "1", "--out", "d", "--quiet", cwd=tmp_path)
    assert gen.returncode == 0, gen.stderr[-2000:]
    assert (tmp_path / "d" / "samples.parquet").is_file()
    warned = [x for x in gen.stderr.splitlines() if "broken" in x]
    assert len(warned) == 1 and "skipped: RuntimeError: broken on purpose" in warned[0], gen.stderr[-2000:]

    run = _sceneforge(site, "run", "height", "--n", "2", "--out", "h", "--quiet", cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    job = json.loads((tmp_path / "h" / "job.json").read_text())
    assert job["scenario"] == "sceneforge_height.scenario"  # the plugin's own module: what workers import
    for i in range(2):
        rec = json.loads((tmp_path / "h" / "desert" / f"sample_{i:06d}.json").read_text())
        tops = {k: o["location"][2] + o["height_cm"] for k, o in rec["objects"].items()}
        assert rec["label"] == max(tops, key=tops.get) and abs(tops["a"] - tops["b"]) >= 30.0


def test_plugin_records_say_where_they_came_from():
    p = plugins.Plugin("sceneforge.heads", "mlp", "pkg.heads:MLP", "pkg 1.0")
    assert p.line().split() == ["sceneforge.heads", "mlp", "pkg.heads:MLP", "[pkg", "1.0]", "ok"]
    bad = plugins.Plugin("sceneforge.heads", "x", "pkg:x", "pkg 1.0", plugins.one_line(ValueError("no\nmore")))
    assert bad.line().endswith("FAILED: ValueError: no") and "\n" not in bad.line()
    assert set(plugins.GROUPS) == {
        "sceneforge.scenarios",
        "sceneforge.heads",
        "sceneforge.backbones",
        "sceneforge.renderers",
        "sceneforge.render_kinds",
    }
