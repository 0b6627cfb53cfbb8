"""scenarios/world/look.py: per-sample look draws declared in the environment YAML (pure, no rendering)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world_dict import world_from_dict
from sceneforge.scenarios.world.environments import load_env
from sceneforge.scenarios.world.look import ORDER, LookRandomization, card_worlds, draw_look, draw_values, server_world


def test_draws_are_deterministic_in_range_and_valid_worlds():
    env = load_env("forest")
    a = draw_look(env, np.random.default_rng(3))
    assert a == draw_look(env, np.random.default_rng(3))
    assert a != draw_look(env, np.random.default_rng(4))
    r = env.spec.randomize
    for seed in range(20):
        w = draw_look(env, np.random.default_rng(seed))
        assert r.sun_pitch[0] <= w["sun"]["pitch"] <= r.sun_pitch[1]
        assert r.fog_density[0] <= w["fog"]["density"] <= r.fog_density[1]
        assert w["sky"]["hdri"] in r.hdri
        world_from_dict(server_world(w))  # the server accepts every draw


def test_keys_do_not_shift_each_others_draws():
    rng_a, rng_b = np.random.default_rng(1), np.random.default_rng(1)
    few = draw_values(LookRandomization(exposure_ev=(-1, 1)), rng_a)
    many = draw_values(LookRandomization(sun_pitch=(10, 80), hdri=["a", "b"], exposure_ev=(-1, 1)), rng_b)
    assert few["exposure_ev"] == many["exposure_ev"]
    assert rng_a.random() == rng_b.random()  # same amount of randomness consumed
    assert len(ORDER) == len(LookRandomization.model_fields)


def test_fov_goes_to_the_camera_not_the_server():
    env = load_env("city")
    env.spec.randomize = LookRandomization(fov_deg=(40, 60))
    w = draw_look(env, np.random.default_rng(0))
    assert 40 <= w["camera"]["fov_deg"] <= 60 and "camera" not in server_world(w)


def test_card_worlds_name_every_hdri_choice():
    from sceneforge.assets_manifest.looks import looks_in

    env = load_env("bridge")
    assert set(looks_in(card_worlds(env))["hdris"]) == {h for h in env.spec.randomize.hdri if h}


def test_bad_randomize_section_is_one_clear_error(tmp_path):
    src = (load_env("desert").path).read_text()
    p = tmp_path / "bad.yaml"
    ranged = re.compile(r"exposure_ev: \[[^\]]*\]")  # the randomize section's range
    assert "randomize:" in src and len(ranged.findall(src)) == 1
    p.write_text(ranged.sub("exposure_ev: [2, -2]", src))
    with pytest.raises(ConfigError, match="randomize"):
        load_env(p)
    p.write_text(ranged.sub("exposure: [0, 1]", src))
    with pytest.raises(ConfigError, match="exposure"):
        load_env(p)
