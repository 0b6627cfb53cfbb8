"""``generate --characters`` (issue 49 item 4) with the fixture character pack (tests/oad_fixture.py:
a 2-bone leg installed where the ``human`` class looks, 1.70 m tall, and here also where ``camel``
looks, 2.10 m; nothing downloaded).

The camel target and the allo viewpoint figure are drawn as posed characters: each mask is the skinned mesh, its pose
and facing are in the params, the labels recomputed from the stored positions equal the written
ones, the card carries the CC-BY-SA attribution; a dataset made without ``--characters`` is
byte-identical whether or not the pack is installed; no pack is one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from PIL import Image, ImageDraw
from oad_fixture import HUMAN_ACTOR, install_pack
from sparrta_helpers import generate, mask_of, tree_hashes

from sceneforge.core.errors import ConfigError
from sceneforge.engine.world import Camera, Rotator
from sceneforge.scenarios.sampling.relations import relation
from sceneforge.scenarios.sparrta import scenario as sparrta
from sceneforge.scenarios.sparrta.characters import PHASES, CharacterShapes, load_pack
from sceneforge.scenarios.sparrta.config import parse_config

BASE = {"envs": ["desert"], "triples": ["cactus_camel"], "tasks": ["ego", "allo"], "n": 4, "seed": 5, "masks": True}


@pytest.fixture(scope="module")
def pack_cache(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    root = install_pack(tmp / "cache", tmp)
    camel = root / "art" / "actors" / "fauna" / "camel.xml"  # the fixture's figure where "camel" looks too
    camel.write_bytes((root / "art" / "actors" / HUMAN_ACTOR.removeprefix("art/actors/")).read_bytes())
    return tmp / "cache"


def test_characters_are_opt_in_and_validated(with_pack):
    assert "characters" not in sparrta.plan(BASE).config  # default jobs keep their identity
    assert sparrta.plan(BASE).fingerprint != sparrta.plan({**BASE, "characters": True}).fingerprint
    with pytest.raises(ConfigError, match="characters must be true or false"):
        parse_config({**BASE, "characters": "yes"})


def test_character_props_are_off_in_the_shipped_environments_unless_asked(with_pack):
    from sceneforge.scenarios.sampling.shapes import ShapeCache
    from sceneforge.scenarios.sparrta.characters import params_block, parse
    from sceneforge.scenarios.world.environments import load_env

    cfg = {**BASE, "characters": True}
    assert "character_props" not in sparrta.plan(cfg).config  # auto, the default: jobs keep their identity
    assert parse_config({**cfg, "character_props": True}).character_props == "on"  # YAML's `on`
    with pytest.raises(ConfigError, match="character_props needs characters: true"):
        parse_config({**BASE, "character_props": "on"})
    env = load_env("desert")
    assert not env.spec.character_props  # modern: auto draws no props here
    base = ShapeCache(env.library)
    bare = CharacterShapes(base, load_pack()).pick(np.random.default_rng(0), "human")
    armed = CharacterShapes(base, load_pack(), props=True).pick(np.random.default_rng(0), "human")
    assert armed.asset_id == bare.asset_id + ":props" and parse(armed.asset_id) == parse(bare.asset_id)

    class Placed:
        shape, yaw = armed, 30.0

    assert params_block({"human": Placed})["human"]["props"] is True


def test_characters_without_the_pack_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ConfigError) as e:
        sparrta.plan({**BASE, "characters": True})
    assert "sceneforge assets install characters" in str(e.value) and "\n" not in str(e.value)


def test_a_class_without_a_character_keeps_its_asset(with_pack):
    from sceneforge.scenarios.sampling.shapes import ShapeCache
    from sceneforge.scenarios.world.environments import load_env

    env = load_env("desert")
    shapes = CharacterShapes(ShapeCache(env.library), load_pack())
    rock = shapes.pick(np.random.default_rng(0), "rock")
    assert rock.asset_id == ShapeCache(env.library).pick(np.random.default_rng(0), "rock").asset_id
    poses = {shapes.pick(np.random.default_rng(s), "human").asset_id for s in range(6)}
    assert all(p.startswith("character:human:0:walk:") for p in poses) and len(poses) > 1  # sampled mid-walk phases
    fig = shapes(next(iter(poses)))
    _, _, variant, clip, k = fig.asset_id.split(":")
    mesh = load_pack().mesh("human", int(variant), clip, int(k) / PHASES).vertices  # the posed mesh's own box
    assert fig.cls == "human" and fig.height == pytest.approx(float(mesh[:, 2].max())) and 80.0 < fig.height <= 171.0
    assert shapes.lib.info(fig.asset_id).cls == "human" and shapes.lib.size_cm(fig.asset_id)[2] == pytest.approx(fig.height)


def _camera(p: dict, size: int) -> Camera:
    c = p["camera"]
    loc = tuple(c["location"][k] for k in "xyz")
    rot = Rotator(c["rotation"]["pitch"], c["rotation"]["yaw"], c["rotation"]["roll"])
    return Camera(loc, rot, c["intrinsics"]["hfov_deg"], size, size)


def _silhouette(mesh, loc: dict, facing_deg: float, cam: Camera, shape) -> np.ndarray:
    """The posed mesh's triangles, placed (yaw ``facing_deg``) and projected, filled: where it may be drawn."""
    v = np.asarray(mesh.vertices, float)
    h = math.radians(facing_deg)
    world = np.column_stack(
        [
            loc["x"] + v[:, 0] * math.cos(h) - v[:, 1] * math.sin(h),
            loc["y"] + v[:, 0] * math.sin(h) + v[:, 1] * math.cos(h),
            loc["z"] + v[:, 2],
        ]
    )
    uv, depth = cam.project(world)
    assert (depth > 0).all()
    img = Image.new("1", (shape[1], shape[0]))
    draw = ImageDraw.Draw(img)
    for f in np.asarray(mesh.faces):
        draw.polygon([tuple(uv[i] - 0.5) for i in f], fill=1, outline=1)
    return np.asarray(img, bool)


def _grow(m: np.ndarray) -> np.ndarray:
    out = m.copy()
    for ax in (0, 1):
        for d in (-1, 1):
            out |= np.roll(m, d, axis=ax)
    return out


@pytest.mark.render
def test_generate_with_characters_draws_the_figure_and_keeps_the_labels(pack_server, with_pack, tmp_path):
    out = tmp_path / "chars"
    generate({**BASE, "characters": True}, out, server=pack_server.address)
    df = pd.read_parquet(out / "samples.parquet")
    lib = load_pack()
    assert len(df) == 8
    for _, r in df.iterrows():
        obs = (r.camera_x, r.camera_y) if r.task == "ego" else (r.human_x, r.human_y)
        assert relation(obs, (r.source_x, r.source_y), (r.target_x, r.target_y), r.margin_deg) == r.label
        p = json.loads((out / r.params_file).read_text())
        drawn = {"target", "human"} if r.task == "allo" else {"target"}
        assert set(p["characters"]) == drawn and p["assets"]["source"] == r.source_asset  # the cactus keeps its asset
        assert p["target_label"] == "Camel" and not p["assets"]["source"].startswith("character:")
        for name, cls in (("target", "camel"), ("human", "human")):
            if name not in drawn:
                continue
            fig, asset = p["characters"][name], p["assets"][name]
            assert fig["class"] == cls and fig["license"] == "cc-by-sa-3.0"
            assert fig["facing_deg"] == p["actors"][f"/sceneforge/actors/{name}"]["rotation"]["yaw"]
            assert asset == f"character:{cls}:{fig['variant']}:{fig['clip']}:{round(fig['phase'] * PHASES)}"
            # its mask is the posed skinned mesh: inside the mesh's own projected triangles (1 px slack), covering them
            loc = p["actors"][f"/sceneforge/actors/{name}"]["location"]
            mesh = lib.mesh(cls, fig["variant"], fig["clip"], fig["phase"])
            m = mask_of(out, r, name)
            sil = _silhouette(mesh, loc, fig["facing_deg"], _camera(p, m.shape[1]), m.shape)
            assert m.sum() > 10 and not (m & ~_grow(sil)).any()
            assert m.sum() >= 0.3 * sil.sum()  # occluders aside (the visibility rule keeps most of it)
    card = json.loads((out / "dataset_card.json").read_text())
    assert "Wildfire Games" in card["characters"]["attribution"] and card["characters"]["samples"] == 8
    assert "CC-BY-SA" in card["characters"]["notice"] and "CC-BY-SA-3.0" in card["licenses"]


@pytest.mark.render
def test_default_output_is_byte_identical_with_or_without_the_pack(pack_server, server, tmp_path):
    got = {}
    for name, srv in (("pack", pack_server), ("none", server)):
        generate(BASE, tmp_path / name, server=srv.address)
        got[name] = tree_hashes(tmp_path / name)
    assert got["pack"] == got["none"] and any(k.endswith(".png") for k in got["pack"])
    card = json.loads((tmp_path / "pack" / "dataset_card.json").read_text())
    assert "characters" not in card and not any(a.startswith("character:") for a in card["assets"])
