"""DSI-Bench-style video datasets: the render-farm scenario (plan / run / finalize).

Per clip (global index i): an RNG from ``SeedSequence(seed, stable_key(env, "videos"), i)``
picks the motion pattern (``patterns[i % 9]``, so patterns are balanced), a subject asset and
the motion; cheap geometric rules reject candidates first (in view every frame, camera clear of
the subject, unambiguous and variant-consistent labels), then the clip is rendered and every
frame's mask is checked (visible/unoccluded ratio and bbox as the image datasets). The std
frames are encoded once per variant (hflip/reverse are array views, never re-rendered).

Output (``out_dir``)::

    videos/{aug}/{env}/{i:06d}.mp4     aug in std, hflip, reverse, reverse_hflip (H.264 yuv420p)
    graphs/{i:06d}.json                per-frame metric scene graphs (scenarios/videos/graphs.py)
    records/{i:06d}.json               per-clip record (written last: marks the clip complete)
    metadata/{aug}.csv                 DSI columns relative_path, question, options, GT, cate
    clips.parquet                      trajectories, intrinsics, per-frame visibility, answers
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sceneforge.assets_manifest.schema import KNOWN_CLASSES
from sceneforge.core.errors import ConfigError, PathSecurityError, PlacementError, SceneforgeError
from sceneforge.engine.world import Actor, Ground
from sceneforge.scenarios.contract import JobPlan, Scenario, ServerSpec, Shard, ShardResult
from sceneforge.scenarios.registry import register_scenario
from sceneforge.scenarios.videos.config import VideoConfig
from sceneforge.scenarios.videos import articulation, dsi
from sceneforge.scenarios.videos import characters as chars
from sceneforge.scenarios.videos import ground_truth as gt
from sceneforge.scenarios.videos import motion as mo
from sceneforge.scenarios.videos.frames import render_frame_loop
from sceneforge.scenarios.videos.movers import DISTRACTOR_STREAM, keep_out as keep_out_movers, sample_movers
from sceneforge.scenarios.videos.video_io import apply_aug, encode_mp4
from sceneforge.scenarios.world.look import LOOK_STREAM, card_worlds, draw_look, server_world
from sceneforge.core.version import __version__
from sceneforge.engine.client import RenderClient
from sceneforge.scenarios.output.writers import atomic_write_bytes, atomic_write_json
from sceneforge.scenarios.sampling.rejection import resample_while, sample_rng, visibility_failure
from sceneforge.scenarios.videos.graphs import frame_graphs
from sceneforge.scenarios.videos.gt_writer import write_clip_gt

log = logging.getLogger(__name__)
TASK = "videos"
SUBJECT = "subject"
# Classes that plausibly drive, walk or turn; the default subjects are the env triples' targets
# among these (a rock that drives away would make the questions absurd).
MOVABLE = ("truck", "car", "taxi", "bike", "vespa", "camel", "bear", "fox", "deer", "husky", "human")
ANCHOR_CM = 600.0  # subject start within ±this of the env centre (clutter rings start ~18 m out)
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
CARD_FILE = "dataset_card.json"


@dataclass
class Context:
    """What every clip of a worker shares: env, asset library, resolved parameters."""

    cfg: VideoConfig
    env: object
    lib: object
    ground: Ground
    size: int
    fov: float
    min_ratio: float
    min_bbox: float
    subject_ids: list[str]
    mover_pool: list[tuple[str, str, tuple]] = None  # (asset, class, size) of movable assets (distractors)


def load_context(cfg: VideoConfig) -> Context:
    env = cfg.load_env()
    relative_path(env.name, 0)  # validate the name before any work
    lib = env.library
    s = env.sampling
    targets = [t.target_class for t in env.triples if t.target_class in MOVABLE]
    classes = cfg.subjects or tuple(dict.fromkeys(targets)) or MOVABLE
    missing = [c for c in classes if not lib.by_class(c)]
    pack, pack_only = None, ()
    if missing and cfg.subjects:
        pack, pack_only = _pack_subjects(cfg, lib.classes(), missing), tuple(missing)
        lib = chars.WithPackClasses(lib, pack, pack_only)
    ids = sorted(i.id for c in classes for i in lib.by_class(c))
    if not ids:
        raise ConfigError(f"videos config: no assets for subject classes {list(classes)}")
    pick = lambda ours, env_value: float(env_value if ours is None else ours)  # noqa: E731
    # distractors: the movable library classes, plus the pack-only classes named in subjects
    pool = [(i.id, c, tuple(float(v) for v in lib.size_cm(i.id))) for c in (*MOVABLE, *pack_only) for i in lib.by_class(c)]
    ctx = Context(
        cfg,
        env,
        lib,
        env.ground,
        int(pick(cfg.image_size, s.image_size)),
        pick(cfg.fov_deg, s.fov_deg),
        pick(cfg.min_visible_ratio, s.min_visible_ratio),
        pick(cfg.min_bbox_px, s.min_bbox_px),
        ids,
        sorted(pool),
    )
    if cfg.characters:
        character_pack(ctx, pack)  # no pack: one line before any work
    return ctx


def preflight(cfg: VideoConfig) -> None:
    """:func:`load_context`'s checks that need neither the asset library nor the default assets
    (which the CLI fetches on first use, AFTER this): subjects that no asset can ever have, a
    pack-only class without ``characters``, ``characters`` or a pack-only subject without the
    character pack (an opt-in install the fetch never touches). A class passes when the assets
    of either state have it (the manifests' classes: ``hut`` only once fetched; the library as it
    is now: ``street`` is procedural); ``plan`` then checks it on the library after the fetch. An
    environment with its own asset packs may add classes: its subjects are left to ``plan``."""
    missing = [c for c in cfg.subjects or () if c not in KNOWN_CLASSES]
    env = cfg.load_env() if missing else None
    if missing and not env.spec.assets:
        classes = sorted(set(KNOWN_CLASSES) | set(env.library.classes()))  # ~0.6 s, only for names outside the manifests
        missing = [c for c in missing if c not in classes]
    if missing and not env.spec.assets:
        _pack_subjects(cfg, classes, missing)
    elif cfg.characters and _character_package().installed() is None:
        raise ConfigError(NO_PACK)


NO_PACK = "characters: true needs the character pack: run `sceneforge assets install characters` first"


def _pack_subjects(cfg: VideoConfig, classes: list[str], missing: list[str]):
    """The installed character pack when every class of ``missing`` (``subjects`` without a
    library asset; ``classes``: the library's) is one of its classes and ``characters`` is on;
    ConfigError in one line naming the field, the classes and what to do otherwise."""
    pkg = _character_package()
    species = pkg.model.SPECIES  # the pack's classes, known without the pack
    unknown = [c for c in missing if c not in species]
    if unknown:
        raise ConfigError(
            f"videos config: subjects {unknown} have no asset (classes: {', '.join(classes)}; "
            f"with --characters also: {', '.join(c for c in sorted(species) if c not in classes)})"
        )
    if not cfg.characters:
        raise ConfigError(
            f"videos config: subjects {missing} exist only as skinned characters: add --characters (config characters: true) "
            "with the character pack installed (sceneforge assets install characters)"
        )
    pack = pkg.CharacterLibrary.installed()
    if pack is None:
        raise ConfigError(
            f"videos config: subjects {missing} need the character pack: run `sceneforge assets install characters` first"
        )
    absent = [c for c in missing if c not in pack.classes()]
    if absent:
        raise ConfigError(
            f"videos config: subjects {absent} are not in the installed character pack (has {', '.join(pack.classes())})"
        )
    return pack


def mirror_world(world: dict, plane_yaw: float) -> dict:
    """The world mirrored about a vertical plane of heading ``plane_yaw``: only the sun's
    azimuth changes (sky is azimuth-free; the mirror test uses a flat, untextured ground)."""
    out = json.loads(json.dumps(world))
    sun = out.setdefault("sun", {})
    sun["yaw"] = float(mo.mirror_yaw(sun.get("yaw", -30.0), plane_yaw))
    return out


# --- per clip ----------------------------------------------------------------------------------
def clip_rng(cfg: VideoConfig, env_name: str, index: int, stream: int = 0) -> np.random.Generator:
    return sample_rng(cfg.seed, env_name, TASK, "", index, stream)


def relative_path(env_name: str, index: int) -> str:
    """DSI's ``relative_path`` (joined onto ``videos/{aug}/``, so it carries the extension).
    The env name becomes a directory, so it must be a plain name (no path escapes)."""
    if not _SAFE_NAME.fullmatch(env_name):
        raise PathSecurityError(
            f"environment name {env_name!r} is not a plain name ([A-Za-z0-9_-]+); it would become a directory under videos/"
        )
    return f"{env_name}/{index:06d}.mp4"


def _rules(ctx: Context) -> list:
    th = dsi.Thresholds()
    return [
        ("out_of_view", lambda c: mo.min_edge_margin_px(c, ctx.fov, ctx.size, ctx.size) >= ctx.cfg.edge_margin_px),
        ("camera_too_close", lambda c: mo.min_clearance_cm(c) >= ctx.cfg.min_clearance_cm * c.spec.scale),
        ("object_label", lambda c: dsi.consistent(dsi.variant_answers(c, "obj", th))),
        ("camera_label", lambda c: dsi.excluded("cam", c) or dsi.consistent(dsi.variant_answers(c, "cam", th))),
    ]


def sample_clip(ctx: Context, rng: np.random.Generator, pattern: str, asset_id: str, counts: Counter) -> mo.ClipMotion:
    """Geometric rejection sampling of one clip's motion (no rendering)."""
    size = ctx.lib.size_cm(asset_id)
    scale = float(np.clip(max(size[0], size[1]) / 450.0, 0.25, 1.5))  # small animals: closer, slower
    cx, cy = ctx.env.sampling.centre_cm

    def draw(r: np.random.Generator) -> mo.ClipMotion:
        anchor = (cx + float(r.uniform(-ANCHOR_CM, ANCHOR_CM)), cy + float(r.uniform(-ANCHOR_CM, ANCHOR_CM)))
        spec = mo.sample_spec(r, ctx.cfg.motion, pattern, anchor, size, scale=scale)
        return mo.build_clip(spec, ctx.ground.height)

    return resample_while(draw, _rules(ctx), rng, ctx.cfg.max_tries, counts, what=f"clip {pattern}")


def render_frames(
    client,
    clip: mo.ClipMotion,
    subject: Actor,
    scenery: list[Actor],
    world: dict,
    fov: float,
    size: int,
    kinds: tuple[str, ...] = ("lit",),
    visibility: bool = True,
) -> tuple[dict, list]:
    """Render every frame of ``clip``: {kind: (T,...) array} and per-frame PixelCount of the
    subject (empty when ``visibility`` is False)."""
    frames, vis = render_clip(client, clip, subject, scenery, world, fov, size, kinds, visibility)
    return frames, [v[subject.name] for v in vis]


def render_clip(
    client,
    clip: mo.ClipMotion,
    subject: Actor,
    scenery: list[Actor],
    world: dict,
    fov: float,
    size: int,
    kinds: tuple[str, ...] = ("lit",),
    visibility: bool = True,
    movers: list = (),
) -> tuple[dict, list[dict]]:
    """:func:`render_frames` with distractor ``movers`` (scenarios/videos/movers.py) posed every
    frame; per-frame visibility is ``{name: PixelCount}`` of the subject and every mover. Spawn
    order: scenery, subject, movers (instance ids follow it)."""
    client.set_world(world)
    client.reset()  # the server's images are a pure function of the scene: no history to clear
    client.spawn([*scenery, subject, *(Actor(m.name, m.asset_id, m.transform(0)) for m in movers)])
    names = [subject.name, *(m.name for m in movers)]

    def pose_at(t: int) -> None:
        poses = {subject.name: {"location": tuple(clip.subject.location[t]), "rotation": clip.subject.rotator(t)}}
        for m in movers:
            poses[m.name] = {"location": tuple(m.track.location[t]), "rotation": m.track.rotator(t)}
        client.set_poses(poses)

    count_at = (lambda t: client.visibility(0, names)) if visibility else None
    return render_frame_loop(client, clip, fov, size, kinds, pose_at, count_at)


def visibility_rule(ctx: Context, vis: list) -> str | None:
    for pc in vis:
        fail = visibility_failure({SUBJECT: pc}, [SUBJECT], ctx.min_ratio, ctx.min_bbox)
        if fail:
            return fail
    return None


def make_clip(ctx: Context, client, index: int, counts: Counter) -> dict:
    """Sample, render and check one clip; returns the frames and the record fields."""
    rng = clip_rng(ctx.cfg, ctx.env.name, index)
    # the clip's look (issue 14): one draw per clip from its own stream, recorded in the clip record
    world = draw_look(ctx.env, clip_rng(ctx.cfg, ctx.env.name, index, LOOK_STREAM))
    fov = float(world.get("camera", {}).get("fov_deg", ctx.fov))
    pattern = ctx.cfg.motion.patterns[index % len(ctx.cfg.motion.patterns)]
    asset_id = str(rng.choice(ctx.subject_ids))
    mover_rng = clip_rng(ctx.cfg, ctx.env.name, index, DISTRACTOR_STREAM)
    kinds = ("lit", *gt.render_kinds(ctx.cfg.ground_truth))
    fail = None
    for attempt in range(ctx.cfg.max_render_tries):
        try:
            clip = sample_clip(ctx, rng, pattern, asset_id, counts)
        except PlacementError as e:
            # this subject cannot make this motion here (e.g. a small animal: its short path leaves
            # the DSI labels inconsistent under the flips): draw another subject from the same
            # stream. Clips that succeeded before are unchanged (this only runs after a failure).
            if len(set(ctx.subject_ids)) == 1:
                raise
            fail = e.rule or "motion"
            counts["subject_redrawn"] += 1
            asset_id = str(rng.choice(ctx.subject_ids))
            continue
        subject = Actor(SUBJECT, asset_id, mo.subject_transform(clip, 0))
        movers = _distractors(ctx, mover_rng, clip, asset_id, fov)
        keep = mo.keep_out(clip) + (keep_out_movers(movers) if movers else [])
        scenery = ctx.env.clutter(rng, keep_out=keep) if ctx.cfg.clutter else []
        posed = _articulated(ctx, index, clip, asset_id, movers)
        drawn = _characters(ctx, index, clip, asset_id, movers)
        if posed:  # opt-in articulation: subject and movers drawn as posed rigs (scenarios/videos/articulation.py)
            frames, vis_all, owners = articulation.render_clip(
                client, clip, subject, scenery, server_world(world), fov, ctx.size, kinds, movers=movers, posed=posed
            )
        elif drawn:  # opt-in characters: skinned people and animals (scenarios/videos/characters.py)
            frames, vis_all = chars.render_clip(
                client, clip, subject, scenery, server_world(world), fov, ctx.size, kinds, movers, drawn
            )
        else:
            frames, vis_all = render_clip(
                client, clip, subject, scenery, server_world(world), fov, ctx.size, kinds, movers=movers
            )
        vis = [v[SUBJECT] for v in vis_all]
        fail = visibility_rule(ctx, vis)
        if fail is None:
            made = {
                "clip": clip,
                "frames": frames["lit"],
                "vis": vis,
                "asset_id": asset_id,
                "attempts": attempt + 1,
                "scenery": scenery,
                "world": world,
                "fov": fov,
                "movers": movers,
                "vis_all": vis_all,
                "dense": frames,
            }
            if drawn:
                made["characters"] = drawn
            return {**made, "posed": posed, "spawn_owners": owners} if posed else made
        counts[fail] += 1
    raise PlacementError(
        f"clip {index}: subject not visible enough in {ctx.cfg.max_render_tries} rendered attempts (last rule: {fail})",
        rule=fail,
        tries=ctx.cfg.max_render_tries,
    )


def _distractors(ctx: Context, rng: np.random.Generator, clip: mo.ClipMotion, asset_id: str, fov: float) -> list:
    """Distractor movers (none unless ``distractors`` > 0), never of the subject's class."""
    if not ctx.cfg.distractors:
        return []
    cls = ctx.lib.info(asset_id).cls
    pool = [c for c in ctx.mover_pool if c[1] != cls]
    return sample_movers(
        rng,
        clip,
        ctx.cfg.distractors,
        pool,
        ctx.cfg.motion.obj_speed_cms,
        ctx.ground.height,
        fov,
        motions=ctx.cfg.distractor_motions,
    )


def _articulated(ctx: Context, index: int, clip: mo.ClipMotion, asset_id: str, movers: list) -> dict:
    """{actor name: PosedRig} of the subject and movers whose class has a rig; {} unless
    ``articulation`` is on. Gait phases come from the clip's ``RIG_STREAM``."""
    if not ctx.cfg.articulation:
        return {}
    rng = clip_rng(ctx.cfg, ctx.env.name, index, articulation.RIG_STREAM)
    posed = {SUBJECT: articulation.subject_rig(ctx.lib, asset_id, clip, ctx.ground.height, rng)}
    for m in movers:
        posed[m.name] = articulation.mover_rig(ctx.lib, m, clip.fps, ctx.ground.height, rng)
    return {k: v for k, v in posed.items() if v is not None}


def _character_package():
    """``assets_manifest.characters`` (CharacterLibrary, analyse, model), imported only when a
    job uses characters (the asset package pulls in trimesh)."""
    import sceneforge.assets_manifest.characters as pkg  # the asset package: only with characters (its library loads .model)

    return pkg


def character_pack(ctx: Context, lib=None):
    """(CharacterLibrary, motion analysis of (class, variant, clip), cached) of the installed
    character pack (``lib`` when already loaded); ConfigError in one line when ``characters`` is
    on and the pack is missing."""
    if getattr(ctx, "_character_pack", None) is None:
        pkg = _character_package()
        analyse = pkg.analyse
        lib = lib or pkg.CharacterLibrary.installed()
        if lib is None:
            raise ConfigError(NO_PACK)
        cache: dict = {}

        def motions(cls: str, variant: int, clip: str):
            key = (cls, variant, clip)
            if key not in cache:
                cache[key] = analyse(lib.character(cls, variant), clip)
            return cache[key]

        object.__setattr__(ctx, "_character_pack", (lib, motions))
    return ctx._character_pack


def _characters(ctx: Context, index: int, clip: mo.ClipMotion, asset_id: str, movers: list) -> dict:
    """{actor name: CharacterTrack} of the subject and movers whose class the character pack has;
    {} unless ``characters`` is on. Variants and phases come from the clip's CHARACTER_STREAM."""
    if not ctx.cfg.characters:
        return {}
    lib, motions = character_pack(ctx)
    rng = clip_rng(ctx.cfg, ctx.env.name, index, chars.CHARACTER_STREAM)
    have = set(lib.classes())
    props = chars.props_on(ctx.cfg.character_props, getattr(ctx.env.spec, "character_props", False))
    out = {}
    cls = ctx.lib.info(asset_id).cls
    if cls in have:
        out[SUBJECT] = chars.plan(lib, motions, cls, clip.subject.location, clip.subject.yaw, clip.fps, rng, props)
    for m in movers:
        if m.cls in have:
            out[m.name] = chars.plan(lib, motions, m.cls, m.track.location, m.track.yaw, clip.fps, rng, props)
    return out


def features(cfg: VideoConfig, clip: mo.ClipMotion) -> list[str]:
    """The opt-in features a clip uses (issue 38), for its record; [] for DSI's own clips."""
    out = [] if clip.pattern in mo.PATTERNS else [f"pattern:{clip.pattern}"]
    if cfg.motion.shake_cm or cfg.motion.shake_deg:
        out.append("shake")
    if cfg.distractors:
        out.append("distractors")
    if cfg.articulation:
        out.append("articulated")
    if cfg.characters:
        out.append("characters")
    return out + [f"gt:{g}" for g in cfg.ground_truth]


def clip_record(ctx: Context, index: int, made: dict) -> dict:
    """The JSON record of a clip: DSI rows for each variant + everything clips.parquet holds."""
    clip, cls = made["clip"], ctx.lib.info(made["asset_id"]).cls
    qs, skipped = dsi.make_questions(
        clip, cls.replace("_", " "), clip_rng(ctx.cfg, ctx.env.name, index, 1), kinds=ctx.cfg.questions
    )
    rel = relative_path(ctx.env.name, index)
    fov = made.get("fov", ctx.fov)
    cam = mo.camera_at(clip, 0, fov, ctx.size, ctx.size)
    return {
        "index": index,
        "relative_path": rel,
        "env": ctx.env.name,
        "pattern": clip.pattern,
        "subject_asset": made["asset_id"],
        "subject_class": cls,
        "subject_size_cm": list(clip.subject_size),
        "fps": clip.fps,
        "n_frames": clip.n_frames,
        "width": ctx.size,
        "height": ctx.size,
        "hfov_deg": fov,
        "focal_px": cam.focal_px,
        "render_attempts": made["attempts"],
        "world": made.get("world"),
        "n_scenery": len(made["scenery"]),
        "scenery_assets": sorted({a.asset_id for a in made["scenery"]}),
        "camera_location": clip.camera.location.tolist(),
        "camera_yaw": clip.camera.yaw.tolist(),
        "camera_pitch": clip.camera.pitch.tolist(),
        "subject_location": clip.subject.location.tolist(),
        "subject_yaw": clip.subject.yaw.tolist(),
        "visible_px": [pc.visible for pc in made["vis"]],
        "unoccluded_px": [pc.unoccluded for pc in made["vis"]],
        "bbox": [list(pc.bbox) for pc in made["vis"]],
        "spec": clip.spec.to_dict(),
        "skipped_questions": skipped,
        "questions": [
            {"cate": q.cate, "kind": q.kind, "question": q.text, "options": list(q.options), "answers": q.answers} for q in qs
        ],
        "rows": {aug: dsi.csv_rows(rel, qs, aug) for aug in dsi.AUGS},
        **_extras(ctx, made),
    }


def _extras(ctx: Context, made: dict) -> dict:
    """Record fields of the opt-in features only (DSI's own clips keep their exact record)."""
    clip, out = made["clip"], {}
    flags = features(ctx.cfg, clip)
    if flags:
        out["features"] = flags
    if clip.zoom is not None:
        fov = made.get("fov", ctx.fov)
        out["focal_px_per_frame"] = [mo.camera_at(clip, t, fov, ctx.size, ctx.size).focal_px for t in range(clip.n_frames)]
    if ctx.cfg.distractors:
        out["distractors"] = [m.to_record() for m in made.get("movers", [])]
    if ctx.cfg.articulation:  # rig, palette and gait per articulated actor; per-frame parts in gt/frames.jsonl
        out["articulation"] = articulation.record(made.get("posed") or {})
    if ctx.cfg.characters:  # which actors are skinned characters (CC-BY-SA art); per-frame clip/phase in gt/frames.jsonl
        out["characters"] = chars.record(made.get("characters") or {}, character_pack(ctx)[0].info)
    return out


# --- the farm contract ---------------------------------------------------------------------------
def plan(config: dict) -> JobPlan:
    """Validate and fingerprint (resume refuses a different config)."""
    cfg = VideoConfig.from_dict(config)
    load_context(cfg)  # env, subjects and names checked before any worker starts
    return JobPlan(cfg.n, plan_digest(cfg), f"{cfg.n} DSI-style clips in env {cfg.env} (seed {cfg.seed})", config=cfg.to_dict())


def server_spec(config: dict) -> ServerSpec:
    """Servers serve the default library + the environment's own asset packs."""
    cfg = VideoConfig.from_dict(config)
    return ServerSpec(assets=tuple(cfg.load_env().asset_packs()), renderer=cfg.renderer or "gl")


def plan_digest(cfg: VideoConfig) -> str:
    return cfg.fingerprint()


def _paths(out_dir: Path, env_name: str, index: int) -> tuple[Path, dict[str, Path]]:
    rel = relative_path(env_name, index)
    return out_dir / "records" / f"{index:06d}.json", {a: out_dir / "videos" / a / rel for a in dsi.AUGS}


def is_complete(out_dir: Path, env_name: str, index: int) -> bool:
    rec, vids = _paths(out_dir, env_name, index)
    return rec.is_file() and all(p.is_file() for p in vids.values())


def write_clip(out_dir: Path, record: dict, frames: np.ndarray) -> None:
    """Four mp4s (variants are transforms of the std frames), then the record (marks done)."""
    rec_path, vids = _paths(out_dir, record["env"], record["index"])
    for aug, path in vids.items():
        encode_mp4(apply_aug(frames, aug), path, record["fps"])
    atomic_write_json(rec_path, record)


def write_graphs(ctx: Context, out_dir: Path, index: int, made: dict) -> None:
    """Per-frame metric scene graphs of the clip (scenarios/videos/graphs.py)."""
    g = frame_graphs(
        ctx.lib,
        made["clip"],
        SUBJECT,
        made["asset_id"],
        made["scenery"],
        made["vis"],
        server_world(made["world"]),
        made["fov"],
        ctx.size,
    )
    atomic_write_json(out_dir / "graphs" / f"{index:06d}.json", g)


def write_ground_truth(ctx: Context, out_dir: Path, index: int, made: dict) -> None:
    """Per-frame poses and boxes (always), masks / depth / flow on request: ground_truth.py."""
    write_clip_gt(ctx, out_dir / "gt" / f"{index:06d}", made, SUBJECT)


def run(config: dict, shard: Shard, out_dir: Path, *, server: str) -> ShardResult:
    """Render the clips of ``shard`` with the render server at ``server``; skip complete ones."""
    cfg, out_dir = VideoConfig.from_dict(config), Path(out_dir)
    ctx = load_context(cfg)
    result, counts, t0 = ShardResult(shard.shard_id), Counter(), time.perf_counter()
    with RenderClient(server) as client:
        for index in shard.indices:
            if is_complete(out_dir, ctx.env.name, index):
                result.skipped.append(index)
                continue
            try:
                made = make_clip(ctx, client, index, counts)
                write_graphs(ctx, out_dir, index, made)  # before the record: the record marks done
                write_ground_truth(ctx, out_dir, index, made)
                write_clip(out_dir, clip_record(ctx, index, made), made["frames"])
                result.done.append(index)
                log.debug("clip %d done (%s, %d render attempt(s))", index, made["clip"].pattern, made["attempts"])
            except PlacementError as e:
                log.warning("clip %d failed: %s", index, e)
                result.failed[index] = str(e)
    result.rejections, result.seconds = dict(counts), time.perf_counter() - t0
    return result


def finalize(config: dict, out_dir: Path) -> dict:
    """Merge records in index order: metadata/{aug}.csv, clips.parquet and the dataset card."""
    cfg, out_dir = VideoConfig.from_dict(config), Path(out_dir)
    ctx = load_context(cfg)
    records = [_read_record(out_dir, ctx.env.name, i) for i in range(cfg.n)]
    for stale in out_dir.rglob(".*.tmp*"):  # temp files of killed workers; never a final name
        stale.unlink(missing_ok=True)
    for aug in dsi.AUGS:
        rows = [r for rec in records for r in rec["rows"][aug]]
        atomic_write_bytes(out_dir / "metadata" / f"{aug}.csv", dsi.csv_text(rows).encode("utf-8"))
    atomic_write_bytes(out_dir / "clips.parquet", dsi.clips_parquet(records))
    stats = dsi.dataset_stats(records)
    atomic_write_json(out_dir / CARD_FILE, dataset_card(ctx, records, stats))
    return stats


@register_scenario
class Videos(Scenario):
    """The ``videos`` scenario: the steps above on the config parsed once (scenarios.contract)."""

    NAME = "videos"
    Config = VideoConfig
    PATH = "scenarios.videos"  # what job.json of every videos dataset says (resume compares it)

    def plan(self) -> JobPlan:
        return plan(self.config)

    def preflight(self) -> None:
        preflight(self.config)

    def server_spec(self) -> ServerSpec:
        return server_spec(self.config)

    def run(self, shard: Shard, out_dir: Path, *, server: str) -> ShardResult:
        return run(self.config, shard, out_dir, server=server)

    def finalize(self, out_dir: Path) -> dict:
        return finalize(self.config, out_dir)


def dataset_card(ctx: Context, records: list[dict], stats: dict) -> dict:
    """What the dataset is, how it was made, and the credits every used asset requires."""
    ids = sorted({r["subject_asset"] for r in records} | {a for r in records for a in r["scenery_assets"]})
    return {
        "generator": f"sceneforge {__version__}",
        "format": "DSI-Bench (videos/{aug}/{relative_path}, metadata/{aug}.csv) + clips.parquet",
        "config": ctx.cfg.to_dict(),
        "fingerprint": plan_digest(ctx.cfg),
        "variants": list(dsi.AUGS),
        "categories": dict(enumerate(dsi.CATE_NAMES)),
        "question_templates": dsi.TEMPLATES,
        "answer_spaces": dsi.SPACES,
        **dsi.card_tables(ctx.cfg.motion.patterns),
        "label_transforms": {a: dict(sorted(m.items())) for a, m in dsi.AUG_MAPS.items()},
        "stats": stats,
        "licenses": ctx.lib.licenses(ids),
        "share_alike": ctx.lib.has_share_alike(ids),
        "attributions": ctx.lib.attributions(ids),
        "textures_and_hdris": _looks(ctx),
        **_character_credits(ctx, records),
    }


def _character_credits(ctx: Context, records: list[dict]) -> dict:
    """The dataset card's character licence (only when some clip shows a character)."""
    shown = [r["index"] for r in records if r.get("characters")]
    if not shown:
        return {}
    from sceneforge.assets_manifest.characters.pack import attribution, dataset_notice  # the card of a character set only

    info = character_pack(ctx)[0].info
    return {
        "share_alike": True,
        "characters": {
            "license": "CC-BY-SA-3.0",
            "attribution": attribution(info),
            "notice": dataset_notice(info),
            "clips": shown,
        },
    }


def _looks(ctx) -> list[dict]:
    """Licence and credit of every HDRI/texture the environment can show (dataset card)."""
    from sceneforge.assets_manifest.looks import looks_in  # trimesh/scipy, ~0.6 s: only the dataset card needs the asset library

    return ctx.lib.look_attributions(**looks_in(card_worlds(ctx.env)))


def _read_record(out_dir: Path, env_name: str, index: int) -> dict:
    rec, _ = _paths(out_dir, env_name, index)
    if not is_complete(out_dir, env_name, index):
        raise SceneforgeError(f"finalize: clip {index} is not complete ({rec} or its videos missing)")
    return json.loads(rec.read_text())
