"""Issue 39 item 8 (environment files): values that crashed the sampler with a traceback, were
accepted silently, or took minutes are one ConfigError line naming file:line and field."""

from __future__ import annotations

import time

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.world.environments import MAX_ENV_ACTORS, MAX_ENV_FILE_BYTES, load_env

TRIPLE = "triples:\n  - {id: a, source: rock, target: truck}\n"


def _load(tmp_path, body: str):
    f = tmp_path / "e.yaml"
    f.write_text("name: e\n" + body + TRIPLE)
    return load_env(f)


@pytest.mark.parametrize(
    "body, says",
    [
        ("clutter:\n  - {classes: [rock], count: 3, ring_cm: [0, 1e300]}\n", "clutter[0]: ring_cm [0.0, 1e+300]"),
        ("clutter:\n  - {classes: [rock], count: 3, ring_cm: [0, .inf]}\n", "clutter[0].ring_cm[1]: Input should be a finite"),
        ("zones: {z: [[0, 0, .nan, 100]]}\n", "zones.z[0][2]: Input should be a finite"),
        ("lines: {l: [[0, 0, .nan, 100]]}\n", "lines.l[0][2]: Input should be a finite"),
        ("zones: {z: [[0, 0, 1e300, 100]]}\n", "zones.z"),
        ("landmarks:\n  - {class: rock, location_cm: [1e300, 0]}\n", "location_cm"),
        ("sampling: {sigma_cm: .inf}\n", "sampling.sigma_cm: Input should be a finite"),
        ("clutter:\n  - {classes: [rock], count: 100000000}\n", f"at most {MAX_ENV_ACTORS} per sample"),
    ],
)
def test_unbounded_env_values_are_one_line(tmp_path, body, says):
    with pytest.raises(ConfigError) as ei:
        _load(tmp_path, body)
    msg = str(ei.value)
    assert "e.yaml:" in msg and says in msg and "\n" not in msg


def test_landmark_count_is_capped_without_parsing_for_minutes(tmp_path):
    many = "".join(f"  - {{class: rock, location_cm: [{i}, 0]}}\n" for i in range(MAX_ENV_ACTORS + 1))
    with pytest.raises(ConfigError, match=f"{MAX_ENV_ACTORS + 1} landmarks"):
        _load(tmp_path, "landmarks:\n" + many)
    huge = "".join(f"  - {{class: rock, location_cm: [{i}, 0]}}\n" for i in range(70000))  # ~3 MB: 30 s before
    t0 = time.perf_counter()
    with pytest.raises(ConfigError, match=f"at most {MAX_ENV_FILE_BYTES}"):
        _load(tmp_path, "landmarks:\n" + huge)
    assert time.perf_counter() - t0 < 5
