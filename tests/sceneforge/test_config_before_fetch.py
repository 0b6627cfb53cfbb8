"""A bad config is refused before the first-use asset fetch (issue 49): with an empty asset cache,
`videos`/`generate`/`vqa`/`demo` used to download ~180 MB of default assets and only then refuse
an unknown subject or a missing character pack. Each case here must exit 2 with one line, leave
the cache and the output directory unmade, and never call the fetch's tools (apt-get, npm are
replaced by scripts that leave a mark; proxies point at a closed port, so a regression fails
fast instead of downloading). In-process CLI, nothing rendered."""

from __future__ import annotations

import os
import stat

import pytest

from sceneforge import cli
from sceneforge.scenarios.videos.config import VideoConfig
from sceneforge.scenarios.videos.scenario import Videos


@pytest.fixture
def empty_cache(tmp_path, monkeypatch):
    """An empty SCENEFORGE_CACHE with the first-use fetch ON, and fetch tools that leave a mark."""
    bin_dir, marks = tmp_path / "bin", tmp_path / "called"
    bin_dir.mkdir()
    for tool in ("apt-get", "npm"):
        path = bin_dir / tool
        path.write_text(f"#!/bin/sh\necho {tool} >> '{marks}'\nexit 100\n")
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(var, "http://127.0.0.1:9")
    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SCENEFORGE_NO_FETCH", raising=False)
    return tmp_path


def _refused(capsys, root, argv: list[str]) -> str:
    out = root / "out"
    assert cli.main([*argv, "--out", str(out), "--quiet"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1, err  # the error alone: no "first use: fetching ..." line before it
    assert not (root / "cache").exists(), sorted(p.name for p in (root / "cache").rglob("*"))
    assert not out.exists() and not (root / "called").exists()
    return err[0]


def _videos_config(root, text: str) -> list[str]:
    path = root / "v.yaml"
    path.write_text(f"env: forest\n{text}\n")
    return ["videos", "--config", str(path), "--n", "2"]


@pytest.mark.parametrize(
    "config, expected",
    [
        ("subjects: [unicorn]", "subjects ['unicorn'] have no asset"),
        ("subjects: [horse]", "subjects ['horse'] exist only as skinned characters: add --characters"),
        ("subjects: [horse]\ncharacters: true", "subjects ['horse'] need the character pack"),
        ("subjects: [human, deer]\ncharacters: true", "characters: true needs the character pack"),
        ("motion: {fps: 0}", "motion.fps must be in (0, 240], got 0"),
    ],
)
def test_videos_refuses_before_fetching(capsys, empty_cache, config, expected):
    line = _refused(capsys, empty_cache, _videos_config(empty_cache, config))
    assert line.startswith("sceneforge videos: error:") and expected in line


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["generate", "--env", "desert", "--n", "2", "--characters"], "characters: true needs the character pack"),
        (["vqa", "--env", "nowhere", "--n", "2"], "unknown environment 'nowhere'"),
        (["demo", "--env", "nowhere"], "unknown environment 'nowhere'"),
        (["demo", "--n", "0"], "n must be an integer"),
    ],
)
def test_other_commands_refuse_before_fetching(capsys, empty_cache, argv, expected):
    assert expected in _refused(capsys, empty_cache, argv)


def test_preflight_passes_classes_either_asset_state_has(empty_cache):
    """Not too eager: `hut` exists only once the real assets are fetched, `street` only in the
    procedural pack; both pass before the fetch (plan checks them on the library after it)."""
    cfg = VideoConfig.from_dict({"env": "forest", "n": 1, "subjects": ["human", "hut", "street"]})
    Videos(cfg).preflight()
    assert not (empty_cache / "cache").exists()
