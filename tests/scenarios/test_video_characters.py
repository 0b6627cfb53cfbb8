"""``videos --characters`` (issue 49 item 3) with the fixture character pack (tests/oad_fixture.py:
a 2-bone leg installed where the ``human`` class looks, scaled to 1.70 m, and copied to where the
pack-only ``horse`` looks, scaled to 2.10 m; nothing downloaded).

The DSI labels stay exact (same questions and answers with and without characters), every frame
records the character's clip and phase, the dataset card carries the CC-BY-SA attribution, a
dataset made without ``--characters`` is byte-identical whether or not the pack is installed, and
the mirrored world with a mirrored character renders the hflip variant."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from oad_fixture import ACTOR_XML, HUMAN_ACTOR, install_pack, pmd_bytes

from sceneforge import cli
from sceneforge.assets_manifest.characters.model import SPECIES
from sceneforge.core.errors import ConfigError
from sceneforge.engine.client import RenderClient
from sceneforge.engine.world import Actor, Camera, Transform, look_at_rotation
from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.videos import characters as chars
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos import rigs
from sceneforge.scenarios.videos import scenario as videos
from sceneforge.scenarios.videos.video_io import apply_aug

BASE = {
    "env": "city",
    "n": 2,
    "seed": 3,
    "subjects": ["human"],
    "motion": {"n_frames": 6, "fps": 6.0, "patterns": ["cam_static-obj_translate", "cam_rotate-obj_translate"]},
}


@pytest.fixture(scope="module")
def pack_cache(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("pack")
    root = install_pack(tmp / "cache", tmp)
    # the pack-only "horse": the leg again, with a prop point on its knee bone holding a second
    # leg as its "spear" (weapon_R: an optional prop, drawn only with props on)
    (root / "art/meshes/skeletal/test_leg_props.dae.cached.pmd").write_bytes(
        pmd_bytes(props=[("weapon_R", (0.6, 0.5, 0.0), (0.0, 0.0, 0.0, 1.0), 1)])
    )
    horse = root / "art" / "actors" / SPECIES["horse"][0][0]  # a class the asset library does not have
    horse.parent.mkdir(parents=True, exist_ok=True)
    horse.write_text(
        ACTOR_XML.replace("skeletal/test_leg.dae", "skeletal/test_leg_props.dae").replace(
            "</mesh>", '</mesh>\n      <props><prop actor="props/test_spear.xml" attachpoint="weapon_R"/></props>'
        )
    )
    spear = root / "art" / "actors" / "props" / "test_spear.xml"
    spear.parent.mkdir(parents=True, exist_ok=True)
    spear.write_text((root / "art" / "actors" / HUMAN_ACTOR.removeprefix("art/actors/")).read_text())
    return tmp / "cache"


HORSE = {**BASE, "subjects": ["human", "horse"]}


def test_a_pack_only_subject_is_refused_in_one_line_without_characters_or_the_pack(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "empty"))
    for cfg, needs in ((HORSE, "add --characters"), ({**HORSE, "characters": True}, "need the character pack")):
        with pytest.raises(ConfigError) as e:
            videos.load_context(videos.VideoConfig.from_dict(cfg))
        msg = str(e.value)
        assert "subjects ['horse']" in msg and needs in msg and "sceneforge assets install characters" in msg and "\n" not in msg
    with pytest.raises(ConfigError, match=r"subjects \['unicorn'\] have no asset .* with --characters also: .*horse"):
        videos.load_context(videos.VideoConfig.from_dict({**BASE, "subjects": ["unicorn"], "characters": True}))
    # the CLI: exit 2, one line on stderr, nothing written
    out = tmp_path / "v"
    argv = ["videos", "--env", "city", "--n", "1", "--out", str(out), "--config", str(tmp_path / "v.yaml")]
    (tmp_path / "v.yaml").write_text("subjects: [human, horse, wolf, deer]\n")
    assert cli.main(argv) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and "subjects ['horse', 'wolf']" in err[0] and "--characters" in err[0], err
    assert not out.exists()


def test_a_pack_only_subject_is_a_character_of_its_real_size(with_pack):
    ctx = videos.load_context(videos.VideoConfig.from_dict({**HORSE, "characters": True, "distractors": 1}))
    assert "character:horse" in ctx.subject_ids and "proc_human_walker" in ctx.subject_ids
    assert ctx.lib.info("character:horse").cls == "horse" and ctx.lib.by_class("horse")[0].id == "character:horse"
    length, width, height = ctx.lib.size_cm("character:horse")
    assert height == pytest.approx(SPECIES["horse"][1], rel=1e-3) and 0 < width <= length < height  # the leg prism, 2.10 m tall
    assert ("character:horse", "horse", (length, width, height)) in ctx.mover_pool  # a distractor too
    assert ctx.lib.licenses(["character:horse", "proc_human_walker"]) == ["cc-by-sa-3.0", "cc0-1.0"]
    assert ctx.lib.has_share_alike(["character:horse"]) and not ctx.lib.has_share_alike(["proc_human_walker"])
    # without a pack-only class the library is the asset library itself (default bytes unchanged)
    assert type(videos.load_context(videos.VideoConfig.from_dict({**BASE, "characters": True})).lib).__name__ == "AssetLibrary"


def test_characters_are_opt_in_and_validated(with_pack):
    assert "characters" not in videos.plan(BASE).config  # default jobs keep their identity
    assert videos.plan(BASE).fingerprint != videos.plan({**BASE, "characters": True}).fingerprint
    for bad, match in (
        ({"characters": "yes"}, "characters must be true or false"),
        ({"characters": True, "articulation": True}, "cannot be combined"),
        ({"characters": True, "ground_truth": ["flow"]}, "flow is not available with characters"),
    ):
        with pytest.raises(ConfigError, match=match):
            videos.VideoConfig.from_dict({**BASE, **bad})


def test_characters_without_the_pack_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "empty"))
    with pytest.raises(ConfigError) as e:
        videos.load_context(videos.VideoConfig.from_dict({**BASE, "characters": True}))
    assert "sceneforge assets install characters" in str(e.value) and "\n" not in str(e.value)


def test_a_character_plan_follows_the_track(with_pack):
    ctx = videos.load_context(videos.VideoConfig.from_dict({**BASE, "characters": True}))
    lib, motions = videos.character_pack(ctx)
    t = np.arange(12) / 6.0
    loc = np.column_stack([120.0 * t, np.zeros(12), np.zeros(12)])
    loc[6:] = loc[5]  # walks, then stands
    plan = chars.plan(lib, motions, "human", loc, np.zeros(12), 6.0, np.random.default_rng(0))
    assert plan.clips[:5] == ["run"] * 5  # the fixture's walk bends in place: only its run's foot travels
    run = motions("human", plan.variant, "run")
    # while moving the phase advances by the distance over the clip's stride; standing, it stops
    assert plan.phases[4] - plan.phases[1] == pytest.approx(3 * 120.0 / 6.0 / run.stride_cm, rel=1e-6)
    assert plan.phases[-1] == plan.phases[-2]
    assert plan.asset_id(0).startswith("character:human:")
    # turning in place (90 deg/s) steps round: a moving clip whose phase advances, not idle
    turn = chars.plan(lib, motions, "human", np.zeros((12, 3)), 90.0 * t, 6.0, np.random.default_rng(0))
    assert "idle" not in turn.clips and turn.phases[-1] > turn.phases[0]


@pytest.mark.render
def test_videos_with_characters_keep_every_answer_and_credit_the_art(pack_server, with_pack, tmp_path):
    runs = {}
    for name, cfg in (("chars", {**BASE, "characters": True}), ("rigid", BASE)):
        out = tmp_path / name
        res = videos.run(cfg, Shard(0, (0, 1)), out, server=pack_server.address)
        assert res.done == [0, 1], res.failed
        videos.finalize(cfg, out)
        runs[name] = [json.loads((out / "records" / f"{i:06d}.json").read_text()) for i in range(2)]
    for rec, rigid in zip(runs["chars"], runs["rigid"]):
        assert rec["rows"] == rigid["rows"] and rec["questions"] == rigid["questions"]
        assert rec["subject_location"] == rigid["subject_location"] and "characters" in rec["features"]
        assert rec["characters"]["subject"]["class"] == "human" and rec["characters"]["subject"]["license"] == "cc-by-sa-3.0"
        assert "characters" not in rigid
    frames = [json.loads(x) for x in (tmp_path / "chars" / "gt" / "000000" / "frames.jsonl").read_text().splitlines()]
    subj = [o for f in frames for o in f["objects"] if o["name"] == "subject"]
    assert subj and all(o["character"]["class"] == "human" for o in subj)
    assert len({o["character"]["phase"] for o in subj}) > 1  # it walks
    card = json.loads((tmp_path / "chars" / videos.CARD_FILE).read_text())
    assert card["share_alike"] is True and "Wildfire Games" in card["characters"]["attribution"]
    assert "CC-BY-SA" in card["characters"]["notice"] and card["characters"]["clips"] == [0, 1]
    assert "characters" not in json.loads((tmp_path / "rigid" / videos.CARD_FILE).read_text())


@pytest.mark.render
def test_a_pack_only_subject_makes_exact_clips(pack_server, with_pack, tmp_path):
    """``subjects: [horse]`` with characters: every clip's subject is the skinned horse; its
    answers are the ones its track gives (dsi recomputed), every frame names it and its pose."""
    cfg = {**BASE, "subjects": ["horse"], "characters": True}
    res = videos.run(cfg, Shard(0, (0, 1)), tmp_path, server=pack_server.address)
    assert res.done == [0, 1], res.failed
    videos.finalize(cfg, tmp_path)
    ctx = videos.load_context(videos.VideoConfig.from_dict(cfg))
    for i in (0, 1):
        rec = json.loads((tmp_path / "records" / f"{i:06d}.json").read_text())
        assert rec["subject_asset"] == "character:horse" and rec["subject_class"] == "horse"
        assert rec["subject_size_cm"][2] == pytest.approx(210.0, rel=1e-3)
        assert rec["characters"]["subject"]["class"] == "horse" and "horse" in rec["questions"][0]["question"]
        rng = videos.clip_rng(ctx.cfg, "city", i)
        assert rng.choice(ctx.subject_ids) == "character:horse" and rec["render_attempts"] == 1
        clip = videos.sample_clip(ctx, rng, rec["pattern"], "character:horse", Counter())  # the track, re-drawn
        made = {"clip": clip, "asset_id": "character:horse", "attempts": 1, "scenery": [], "vis": []}
        assert rec["rows"] == videos.clip_record(ctx, i, made)["rows"]  # the answers are the track's
        frames = [json.loads(x) for x in (tmp_path / "gt" / f"{i:06d}" / "frames.jsonl").read_text().splitlines()]
        subj = [o for f in frames for o in f["objects"] if o["name"] == "subject"]
        assert len(subj) == 6 and all(o["asset"] == "character:horse" and o["character"]["class"] == "horse" for o in subj)
    card = json.loads((tmp_path / videos.CARD_FILE).read_text())
    assert card["share_alike"] is True and "cc-by-sa-3.0" in card["licenses"] and card["characters"]["clips"] == [0, 1]


@pytest.mark.render
def test_a_characters_set_without_any_character_class_finishes(pack_server, with_pack, tmp_path):
    """``characters: true`` on subjects the pack has no class for: rigid clips, a clean dataset
    (clips.parquet writes the empty ``characters`` of every clip) and no CC-BY-SA section."""
    cfg = {**BASE, "subjects": ["taxi"], "characters": True}
    assert videos.run(cfg, Shard(0, (0, 1)), tmp_path, server=pack_server.address).done == [0, 1]
    videos.finalize(cfg, tmp_path)
    import pandas as pd

    assert list(pd.read_parquet(tmp_path / "clips.parquet")["characters"]) == ["{}", "{}"]
    assert "characters" not in json.loads((tmp_path / videos.CARD_FILE).read_text())


@pytest.mark.render
def test_default_output_is_byte_identical_with_or_without_the_pack(pack_server, server, tmp_path):
    def files(out):
        return {
            p.relative_to(out).as_posix(): p.read_bytes()
            for p in sorted(out.rglob("*"))
            if p.is_file() and ".farm" not in p.parts
        }

    got = {}
    for name, srv in (("pack", pack_server), ("none", server)):
        out = tmp_path / name
        assert videos.run(BASE, Shard(0, (0, 1)), out, server=srv.address).done == [0, 1]
        videos.finalize(BASE, out)
        got[name] = files(out)
    assert got["pack"].keys() == got["none"].keys() and any(k.endswith(".mp4") for k in got["pack"])
    assert all(got["pack"][k] == got["none"][k] for k in got["pack"]), [
        k for k in got["pack"] if got["pack"][k] != got["none"][k]
    ]


@pytest.mark.render
@pytest.mark.parametrize("cls, asset", [("human", "proc_human_walker"), ("horse", "character:horse")])
def test_mirror_world_with_a_character_equals_the_hflip_variant(pack_server, with_pack, cls, asset):
    """A mirrored character is the mirrored mesh (its transform reflected, local Y scale -1):
    the mirrored world renders the hflip frames' masks (a library class and a pack-only one)."""
    ctx = videos.load_context(videos.VideoConfig.from_dict({**HORSE, "characters": True}))
    world = ctx.env.world
    world["ground"].update(texture="flat", relief_amplitude=0.0)
    rng = np.random.default_rng(2)
    clip = videos.sample_clip(ctx, rng, "cam_static-obj_translate", asset, Counter())
    lib, motions = videos.character_pack(ctx)
    plan = chars.plan(lib, motions, cls, clip.subject.location, clip.subject.yaw, clip.fps, rng)
    origin, plane = mo.mirror_plane(clip)
    with RenderClient(pack_server.address, timeout=120) as c:

        def render(mirror):
            c.set_world(videos.mirror_world(world, plane) if mirror else world)
            c.reset()
            clip_ = mo.hflip_motion(clip) if mirror else clip
            out = []
            for t in range(clip.n_frames):
                tf = plan.transform(clip.subject, t)
                if mirror:
                    m = rigs.mirror_transform(tf, origin, plane)
                    tf = Transform(m.location, m.rotation, (1.0, -1.0, 1.0))
                if t == 0:
                    c.spawn([Actor("subject", plan.asset_id(0), tf)])
                else:
                    c.set_poses({"subject": {"location": tf.location, "rotation": tf.rotation, "scale": tf.scale}})
                c.set_character_poses({"subject": {"clip": plan.clips[t], "phase": float(plan.phases[t])}})
                out.append(c.render(0, ("object_mask",), camera=mo.camera_at(clip_, t, ctx.fov, ctx.size, ctx.size)))
            return np.stack([o["object_mask"] for o in out])

        std, mir = render(False), render(True)
    flip = apply_aug(std, "hflip")
    on = flip.max(-1) > 0
    assert on.sum() > 50
    assert (flip == mir).all(-1).mean() >= 0.999
    assert (std == mir).all(-1).mean() < (flip == mir).all(-1).mean()  # unflipped differs: the check can fail


def test_character_props_are_off_in_modern_environments_unless_asked(with_pack, tmp_path):
    from sceneforge.scenarios.world.environments import list_envs, load_env

    assert not any(load_env(name).spec.character_props for name in list_envs())  # every shipped env is modern
    cfg = {**HORSE, "characters": True}
    assert "character_props" not in videos.plan(cfg).config  # auto, the default: jobs keep their identity
    assert videos.VideoConfig.from_dict({**cfg, "character_props": True}).character_props == "on"  # YAML's `on`
    for bad, match in (
        ({**HORSE, "character_props": "on"}, "character_props on needs characters: true"),
        ({**cfg, "character_props": "sometimes"}, "character_props must be one of"),
    ):
        with pytest.raises(ConfigError, match=match):
            videos.VideoConfig.from_dict(bad)
    # an environment that allows them (character_props: true in its YAML), e.g. an ancient town
    city = Path(videos.__file__).parents[1] / "envs" / "city.yaml"
    ancient = tmp_path / "ancient.yaml"
    ancient.write_text(city.read_text().replace("name: city", "name: ancient") + "character_props: true\n")

    def drawn(extra: dict) -> dict:
        ctx = videos.load_context(videos.VideoConfig.from_dict({**cfg, "subjects": ["horse"], **extra}))
        clip = videos.sample_clip(ctx, np.random.default_rng(0), "cam_static-obj_translate", "character:horse", Counter())
        return videos._characters(ctx, 0, clip, "character:horse", [])["subject"]

    assert not drawn({}).props and not drawn({}).asset_id(0).endswith(":props")  # the City: no spears
    assert drawn({"env": str(ancient)}).props and drawn({"env": str(ancient)}).asset_id(0).endswith(":props")
    assert not drawn({"env": str(ancient), "character_props": "off"}).props
    assert drawn({"character_props": "on"}).to_record()["props"] is True


@pytest.mark.render
def test_props_are_part_of_their_character_in_the_mask(pack_server, with_pack):
    """With props the one instance id covers the body and its prop (hung on the knee bone: it
    moves with the pose), the figure's height is the body's either way."""
    from sceneforge.assets_manifest.characters.library import CharacterLibrary

    lib = CharacterLibrary.installed()
    bare, armed = lib.character("horse", 0, props=False), lib.character("horse", 0, props=True)
    assert len(armed.parts) == len(bare.parts) + 1 and armed.scale_cm == bare.scale_cm
    eye, target = (0.0, -450.0, 130.0), (0.0, 0.0, 120.0)
    cam = Camera(eye, look_at_rotation(eye, target), 50.0, 128, 128)
    with RenderClient(pack_server.address, timeout=120) as c:

        def mask(asset_id: str, phase: float) -> np.ndarray:
            c.reset()
            c.spawn([Actor("horse", asset_id, Transform((0.0, 0.0, 0.0)))])
            c.set_character_poses({"horse": {"clip": "walk", "phase": phase}})  # a new pose keeps the props
            m = c.render(0, ("object_mask",), camera=cam)["object_mask"]
            return m.reshape(-1, m.shape[-1])

        masks = {(p, ph): mask("character:horse:0:walk:0" + (":props" if p else ""), ph) for p in (0, 1) for ph in (0.0, 0.25)}
    ids = {k: {tuple(px) for px in m if px.any()} for k, m in masks.items()}
    assert all(len(i) == 1 for i in ids.values()) and ids[0, 0.0] == ids[1, 0.0]  # one id, the prop included
    on = {k: m.any(-1) for k, m in masks.items()}
    prop = {ph: on[1, ph] & ~on[0, ph] for ph in (0.0, 0.25)}  # the prop's own pixels
    assert all(prop[ph].sum() > 0.3 * on[0, ph].sum() for ph in prop), {k: int(v.sum()) for k, v in on.items()}
    assert (prop[0.0] != prop[0.25]).sum() > 10  # hung on the knee bone, it moves with the pose
