"""Environments: the five SpaRRTa envs load with their triples and sampling, clutter is deterministic
and stays in its ring, bad YAML is reported with file/line/field, and every env renders."""

from __future__ import annotations

import math
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest

from sceneforge.assets_manifest import AssetLibrary
from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.world.environments import list_envs, load_env

SPARRTA_TRIPLES = {
    "desert": [("rock", "truck"), ("cactus", "camel"), ("barrel", "camel")],
    "forest": [("tree", "rock"), ("tent", "bear"), ("rock", "fox")],
    "winter_town": [("tree", "truck"), ("snowman", "husky"), ("tree", "deer")],
    "bridge": [("tree", "truck"), ("trash_bin", "bike"), ("trash_bin", "vespa")],
    "city": [("cone", "vespa"), ("fire_hydrant", "taxi"), ("cone", "bike")],
}
DOCS = Path(__file__).resolve().parents[2] / "docs" / "environments.md"


@pytest.fixture(scope="module")
def lib():
    return AssetLibrary.procedural()


def test_five_shipped_envs():
    assert list_envs() == sorted(SPARRTA_TRIPLES)


@pytest.mark.parametrize("name", sorted(SPARRTA_TRIPLES))
def test_triples_and_sampling_match_sparrta(name):
    env = load_env(name)
    assert [(t.source_class, t.target_class) for t in env.triples] == SPARRTA_TRIPLES[name]
    assert all(t.viewpoint_class == "human" for t in env.triples)
    s = env.sampling
    assert (s.sigma_cm, s.max_pair_dist_cm, s.cam_xy_range_cm, s.cam_height_range_cm[1]) == (500, 1000, 2500, 1500)
    assert s.fov_deg == pytest.approx(2 * math.degrees(math.atan(25 / 50)), abs=0.01)
    assert (s.image_size, s.margin_ego_deg, s.margin_allo_deg, s.min_visible_ratio) == (224, 15, 10, 0.8)
    w = env.world
    assert w["env"] == name and set(w) == {"env", "sun", "sky", "ground", "fog", "look"}
    from dataclasses import fields

    from sceneforge.engine.world_dict import WORLD_SECTIONS, world_from_dict

    for section, cls in WORLD_SECTIONS.items():  # one schema: engine.world's field names
        assert set(w[section]) == {f.name for f in fields(cls)}
    assert world_from_dict(w)["ground"] == env.ground


@pytest.mark.parametrize("name", sorted(SPARRTA_TRIPLES))
def test_clutter_deterministic_in_ring_and_clear_of_keep_out(name, lib):
    env = load_env(name, library=lib)
    keep = [(0.0, 0.0, 900.0), (1500.0, -300.0, 400.0)]
    a = env.clutter(np.random.default_rng(7), keep_out=keep)
    b = env.clutter(np.random.default_rng(7), keep_out=keep)
    assert a == b and len(a) > 0
    assert a != env.clutter(np.random.default_rng(8), keep_out=keep)
    assert len({x.name for x in a}) == len(a) and all(x.name.startswith("clutter_") for x in a)
    landmarks = {lm.location_cm for lm in env.spec.landmarks}
    outer = max(g.ring_cm[1] for g in env.spec.clutter)
    for actor in a:
        x, y, _ = actor.transform.location
        fp = lib.footprint(actor.asset_id) * actor.transform.scale[0]
        r = float(np.max(np.hypot(fp[:, 0], fp[:, 1])))
        if (x, y) in landmarks:
            continue
        assert math.hypot(x, y) <= outer + 1e-6
        for kx, ky, kr in keep:
            assert math.hypot(x - kx, y - ky) >= kr + r, (actor.name, actor.asset_id)


def test_clutter_sits_on_the_terrain(lib):
    env = load_env("desert", library=lib)
    for a in env.clutter(np.random.default_rng(1)):
        x, y, z = a.transform.location
        assert z <= float(env.ground.height(x, y)) + 1e-6


def test_density_ordering_desert_sparse_city_cluttered(lib):
    def mean_count(name):
        env = load_env(name, library=lib)
        return np.mean([len(env.clutter(np.random.default_rng(s))) for s in range(3)])

    counts = {n: mean_count(n) for n in SPARRTA_TRIPLES}
    assert counts["desert"] == min(counts.values())
    assert counts["desert"] < counts["winter_town"] < counts["city"]
    assert counts["desert"] < counts["bridge"] < counts["city"]


def test_style_tags_pick_snowy_variants(lib):
    env = load_env("winter_town", library=lib)
    assert all("snow" in lib.info(i).tags for i in env.variants("tree"))
    forest = load_env("forest", library=lib).variants("tree")  # style_tags: [forest]: no snowy pines
    assert len(forest) >= 2 and all("snow" not in lib.info(i).tags for i in forest)
    assert load_env("desert", library=lib).variants("tree") == [i.id for i in lib.by_class("tree")]


def _user_env_yaml() -> str:
    """The example environment from docs/environments.md (the first ```yaml block)."""
    text = DOCS.read_text()
    return re.search(r"```yaml\n(.*?)```", text, re.S).group(1)


def test_user_env_from_docs_loads(tmp_path, lib):
    p = tmp_path / "harbour.yaml"
    p.write_text(_user_env_yaml())
    env = load_env(p, library=lib)
    assert env.name == "harbour" and env.triples and env.clutter(np.random.default_rng(0))


def _bad(tmp_path, text: str) -> str:
    p = tmp_path / "bad.yaml"
    p.write_text(textwrap.dedent(text))
    with pytest.raises(ConfigError) as ei:
        load_env(p)
    return str(ei.value)


def test_bad_env_files(tmp_path):
    base = "name: x\ntriples:\n  - {id: a, source: rock, target: truck}\n"
    msg = _bad(tmp_path, base + "sampling: {sigma_cm: -5}\n")
    assert "bad.yaml:4:" in msg and "sampling.sigma_cm" in msg
    msg = _bad(tmp_path, base.replace("truck", "spaceship"))
    assert "bad.yaml" in msg and "spaceship" in msg and "unknown class" in msg
    msg = _bad(tmp_path, base + "clutter:\n  - {classes: [rock], count: [5, 2]}\n")
    assert "clutter[0]" in msg and "count" in msg
    msg = _bad(tmp_path, base + "ground: {colour: [1, 2, 3]}\n")
    assert "ground.colour" in msg
    assert "bad YAML" in _bad(tmp_path, base + "sun: {pitch: [\n")
    assert "triples" in _bad(tmp_path, "name: x\n")
    with pytest.raises(ConfigError, match="unknown environment 'moon'"):
        load_env("moon")


@pytest.mark.render
@pytest.mark.parametrize("name", sorted(SPARRTA_TRIPLES))
def test_every_env_renders_with_clutter(name, lib):
    from sceneforge.commands.envs import preview_scene, render_views

    env = load_env(name, library=lib)
    scene = preview_scene(env, seed=0, views=1)
    assert len(scene.actors) > 3
    (img,) = render_views(env, views=1, size=96)
    assert img.shape == (96, 96, 3) and img.dtype == np.uint8
    sky = img[:5].reshape(-1, 3).mean(axis=0)
    ground = np.percentile(img[-32:].reshape(-1, 3), 90, axis=0)  # sunlit ground, not shadows
    assert np.abs(sky - ground).sum() > 20, "sky and ground should differ"
    want = np.asarray(env.spec.ground.color, float)
    if env.world["ground"].get("surface"):  # a textured surface brings its own colour
        want = lib.surface(env.world["ground"]["surface"]).albedo.reshape(-1, 3).mean(axis=0)
    # hue within 0.05 of the env colour after the PBR look (texture tones, sky light, ACES saturation)
    assert np.allclose(ground / ground.sum(), want / want.sum(), atol=0.05), "ground hue comes from the env"


@pytest.mark.render
def test_user_env_from_docs_renders(tmp_path, lib):
    from sceneforge.commands.envs import render_views

    p = tmp_path / "harbour.yaml"
    p.write_text(_user_env_yaml())
    (img,) = render_views(load_env(p, library=lib), views=1, size=64)
    assert img.std() > 5


@pytest.mark.render
def test_env_world_and_clutter_through_the_render_server(render_client):
    """The seam: env.world is accepted by `vset /sceneforge/world` and the clutter actors spawn
    and render through the real server (which loads the default asset library itself)."""
    from sceneforge.engine.world import Camera, look_at_rotation

    env = load_env("city")
    render_client.set_world(env.world)
    actors = env.clutter(np.random.default_rng(0), keep_out=[(0, 0, 1500)])
    render_client.spawn(actors)
    eye = (-1200.0, 0.0, 3000.0)
    render_client.set_camera(0, Camera(eye, look_at_rotation(eye, (2000.0, 0.0, 0.0)), 90.0, 96, 96))
    out = render_client.render(0, ("lit", "object_mask"))
    colours = {tuple(int(x) for x in c) for c in out["object_mask"].reshape(-1, 3)}
    spawned = {render_client.object_color(a.name) for a in actors}  # the server assigns mask colours
    assert len(colours & spawned) >= 2, "several clutter objects visible in the mask"


def _world_footprint(lib, actor):
    from sceneforge.scenarios.world.placement_bounds import footprint_polygon

    x, y, _ = actor.transform.location
    return footprint_polygon(lib.footprint(actor.asset_id), actor.transform.scale[0], x, y, actor.transform.rotation.yaw)


@pytest.mark.parametrize("library", ["procedural", "default"])
def test_city_zoning_keeps_roads_clear_and_lines_the_streets(library):
    """On the generated geometry: no building, lamp post, bench, tree... footprint touches a road
    (only the parked cars stand on it, in the kerb lane), furniture stands on the sidewalks, and
    most buildings face a street with their front on the frontage line."""
    from sceneforge.scenarios.world.zones import zone_geometry

    lib = AssetLibrary.procedural() if library == "procedural" else AssetLibrary.default()
    env = load_env("city", library=lib)
    road = zone_geometry(env.spec.zones["road"])
    carriageway = zone_geometry([[-9000, -500, 9000, 500], [-500, -9000, 500, 9000]])  # kerbs excluded
    sidewalk = zone_geometry(env.spec.zones["sidewalk"])
    fronts = 0
    for seed in range(3):
        actors = env.clutter(np.random.default_rng(seed), keep_out=[(0.0, 0.0, 900.0)])
        for a in actors[1:]:  # [0] is the street crossing itself
            cls, fp = lib.info(a.asset_id).cls, _world_footprint(lib, a)
            if cls == "car":
                assert carriageway.contains(fp), (seed, a.name, "a parked car off the road")
                continue
            assert not fp.intersects(road), (seed, a.name, cls, "stands on the road")
            if cls in ("lamp_post", "sign", "bench", "trash_bin", "bush", "tree"):
                assert sidewalk.contains(fp), (seed, a.name, cls, "off the sidewalk")
            if cls == "building":
                x, y, _ = a.transform.location
                to_road = np.array([-x, 0.0]) if abs(y) > abs(x) else np.array([0.0, -y])  # nearest street
                yaw = math.radians(a.transform.rotation.yaw)
                fronts += (
                    np.dot([math.cos(yaw), math.sin(yaw)], to_road / np.linalg.norm(to_road)) > 0.99
                    and abs(fp.distance(road) - 435.0) < 1.0
                )  # facade on the line
    assert fronts >= 3 * 20, fronts


def test_zone_and_line_names_are_checked(tmp_path):
    base = "name: x\ntriples:\n  - {id: a, source: rock, target: truck}\nzones: {road: [[0, 0, 10, 10]]}\n"
    msg = _bad(tmp_path, base + "clutter:\n  - {classes: [rock], count: 1, avoid: [roads]}\n")
    assert "clutter[0].avoid" in msg and "roads" in msg and "road" in msg
    msg = _bad(tmp_path, base + "clutter:\n  - {classes: [rock], count: 1, along: kerb}\n")
    assert "clutter[0].along" in msg and "kerb" in msg
    msg = _bad(tmp_path, base + "clutter:\n  - {classes: [rock], count: 1, facing: line}\n")
    assert "facing" in msg
    msg = _bad(tmp_path, base + "lines: {l: [[5, 5, 5, 5]]}\n")
    assert "zero length" in msg


@pytest.mark.parametrize("name", sorted(SPARRTA_TRIPLES))
def test_every_group_keeps_its_zones_and_ring(name, lib):
    """Whatever an environment declares (``avoid``, ``within``, ring) holds for every object it
    generates: nothing of the bridge park stands in the river, no dune leaves its ring, and
    objects placed along a line (rotated footprints) never overlap each other unless their group
    says ``overlap`` (the desert's dunes)."""
    from shapely.ops import unary_union

    from sceneforge.scenarios.world.zones import zone_geometry

    env = load_env(name, library=lib)
    zones = {k: zone_geometry(v) for k, v in env.spec.zones.items()}

    def obeys(g, a, fp) -> bool:
        x, y, _ = a.transform.location
        return (
            g.ring_cm[0] - 1e-6 <= math.hypot(x, y) <= g.ring_cm[1] + 1e-6
            and not any(fp.intersects(zones[z]) for z in g.avoid)
            and (not g.within or unary_union([zones[z] for z in g.within]).contains(fp))
        )

    for seed in range(2):
        lined = []
        for a in env.clutter(np.random.default_rng(seed))[len(env.spec.landmarks) :]:
            cls, fp = lib.info(a.asset_id).cls, _world_footprint(lib, a)
            groups = [g for g in env.spec.clutter if cls in g.classes or a.asset_id in g.classes]
            assert any(obeys(g, a, fp) for g in groups), (name, seed, a.name, cls)
            if any(g.along and not g.overlap for g in groups):
                lined.append(fp)
        for i, p in enumerate(lined):
            assert not any(p.overlaps(q) or p.within(q) for q in lined[i + 1 :]), (name, seed, i)


def test_ground_colour_beside_a_surface_warns_and_fallback_colour_is_the_stand_in(tmp_path, caplog):
    """A red ``color`` beside ``surface: sand`` is not drawn (the sand is): one warning line
    naming the environment, the colour and the surface (it was silently ignored: issue 33, item
    6). ``fallback_color`` says the same colour is only the stand-in's, with no warning; shipped
    environments say so and load silently."""
    base = "name: redsand\ntriples:\n  - {id: a, source: rock, target: truck}\n"
    p = tmp_path / "redsand.yaml"
    p.write_text(base + "ground: {color: [200, 20, 20], texture: sand, surface: sand}\n")
    with caplog.at_level("WARNING", logger="sceneforge.scenarios.world.environments"):
        env = load_env(p)
    lines = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(lines) == 1 and "redsand" in lines[0] and "[200, 20, 20]" in lines[0] and "'sand'" in lines[0]
    assert env.ground.color == (200, 20, 20) and env.ground.surface == "sand"
    caplog.clear()
    p.write_text(base + "ground: {fallback_color: [200, 20, 20], texture: sand, surface: sand}\n")
    with caplog.at_level("WARNING", logger="sceneforge.scenarios.world.environments"):
        env = load_env(p)
        for name in SPARRTA_TRIPLES:
            load_env(name)
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    assert env.ground.color == (200, 20, 20)  # the procedural stand-in's colour
    assert "fallback_color" in _bad(tmp_path, base + "ground: {fallback_color: [1, 2, 3]}\n")
    assert "not both" in _bad(tmp_path, base + "ground: {color: [1, 2, 3], fallback_color: [1, 2, 3], surface: sand}\n")


def test_shipped_envs_keep_their_ground_colours():
    """The shipped files' move from ``color`` to ``fallback_color`` changes no value."""
    want = {
        "desert": (214, 186, 140),
        "bridge": (104, 122, 80),
        "city": (118, 118, 122),
        "forest": (86, 112, 60),
        "winter_town": (232, 236, 242),
    }
    assert {n: tuple(load_env(n).ground.color) for n in want} == want
