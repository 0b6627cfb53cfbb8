"""SpaRRTa-style egocentric / allocentric relation datasets, as a render-farm scenario.

Implements the contract of :mod:`scenarios.contract`::

    plan(config) -> JobPlan            validate, count samples, fingerprint the config
    run(config, shard, out_dir, *, server) -> ShardResult   make the shard's samples
    finalize(config, out_dir) -> dict  table + splits + dataset card, in index order
    server_spec(config) -> ServerSpec  asset packs + licences every server must serve

Sample ``i`` of an (env, task, triple) unit has its label fixed up front (labels rotate along
the (env, task) group, so classes are balanced ±1) and its own RNG from
``(seed, env, task, triple, i)``; the sampler retries until a valid sample *with that label*
exists. Output is therefore independent of shard boundaries and worker count.

Example (the runner claims ``out``, starts the server with :func:`server_spec`'s arguments)::

    from sceneforge.renderfarm import run_job
    run_job("sparrta", {"envs": ["desert"], "tasks": ["ego"], "n": 8}, out, backend="inline")
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path

from sceneforge.core.errors import PlacementError
from sceneforge.scenarios.contract import JobPlan, Scenario, ServerSpec, Shard, ShardResult
from sceneforge.scenarios.pipeline.background import BackgroundWriter
from sceneforge.scenarios.pipeline.lookahead import Lookahead, OnceCache, responsive
from sceneforge.scenarios.pipeline.shard import run_shard
from sceneforge.scenarios.registry import register_scenario
from sceneforge.scenarios.sampling.rejection import sample_rng, visibility_failure
from sceneforge.scenarios.sparrta.early import EarlyRequest
from sceneforge.scenarios.sparrta.requests import PARKED_Z, ServerRequests  # noqa: F401 - PARKED_Z: the scenario's name
from sceneforge.scenarios.sparrta.graph import sample_graph
from sceneforge.scenarios.sparrta.config import SparrtaConfig, Unit, locate, parse_config
from sceneforge.scenarios.sparrta.setting import (
    HARD_SAMPLE_FACTOR,  # noqa: F401 - re-exported: the scenario's names
    attempt_setting,
    load_env_cached,
    scene_budget,  # noqa: F401 - re-exported: the scenario's names
    sample_setting,
    setting_for,
    units_of,
)
from sceneforge.scenarios.sparrta.record import build_params, build_row, file_names, load_record, objects_of, write_sample
from sceneforge.scenarios.sparrta.candidates import Ahead, discard_replies, draw_candidates, usable_views
from sceneforge.scenarios.sparrta.scene import Group, Setting, build_group
from sceneforge.scenarios.sampling.shapes import ShapeCache
from sceneforge.scenarios.sparrta import characters as sparrta_characters
from sceneforge.scenarios.sampling.consistency import PERCEPTUAL_RULE, ego_bearing_disagrees, ego_label_disagrees
from sceneforge.scenarios.world.look import LOOK_STREAM, draw_look, server_world
from sceneforge.core.paths import confined
from sceneforge.scenarios.output.writers import dumps
from sceneforge.scenarios.sparrta.card import collect, finalize_dataset, with_splits
from sceneforge.scenarios.sparrta.layout import export_sparrta

log = logging.getLogger(__name__)
# Rules that reject most candidates by design (drawing until the wanted label appears).
CONDITIONING = ("label", "ambiguity", "proposal", "scene_unusable", "quota")
LOOKAHEAD = 8  # samples whose first steps (scene group, first views) are prepared ahead (lookahead.py):
# two scene groups' worth (samples_per_scene = 4). The server runs up to EARLY_DEPTH
# samples ahead of the main thread, so with one group's worth the next group was
# built only once the server had finished the current one (it then idled ~50 ms)
QUEUE_DEPTH = 3  # a sample's candidates in flight on the server at once (1: one at a time); the
# lookahead draws each sample's first QUEUE_DEPTH. The server skips those behind
# one that passed, so a deeper queue costs client draws, not renders
EARLY_DEPTH = 4  # the next samples whose first candidates are queued on the server (early.py)
SWITCH_EARLY = True  # the next new scene group is queued behind this sample's queued candidates
# before one has passed (when all fail, both groups are shown again;
# sceneforge servers only)


# --- contract -------------------------------------------------------------------------------------
def plan(config: dict) -> JobPlan:
    cfg = parse_config(config)
    if cfg.characters:  # no pack: one line before any work
        sparrta_characters.load_pack()
    units = units_of(cfg)
    n = sum(u.n for u in units)
    desc = f"{n} SpaRRTa samples: {', '.join(sorted({u.env for u in units}))} × {', '.join(cfg.tasks)}"
    return JobPlan(n_samples=n, fingerprint=cfg.fingerprint(), description=desc, config=cfg.to_dict())


def preflight(config: dict) -> None:
    """What the CLI checks before the first-use asset fetch (scenarios.contract): with
    ``characters``, the character pack (an opt-in install the fetch never touches)."""
    if parse_config(config).characters:
        sparrta_characters.load_pack()


def server_spec(config: dict) -> ServerSpec:
    """Servers serve the default library + every selected environment's asset packs, filtered
    by the config's licences (passed as server arguments, so sampler and server agree)."""
    cfg = parse_config(config)
    packs: list[str] = []
    for name in {u.env for u in units_of(cfg)}:
        packs += [p for p in load_env_cached(cfg, name).asset_packs() if p not in packs]
    return ServerSpec(assets=tuple(sorted(packs)), licenses=cfg.licenses, renderer=cfg.renderer or "gl")


def run(config: dict, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
    """Make the shard's samples in index order, skipping complete ones (the kit's shard skeleton,
    :func:`scenarios.pipeline.shard.run_shard`). A sample that exhausts its placement budget
    (:func:`scene_budget`) is reported failed and the others still run."""
    cfg = parse_config(config)
    units = units_of(cfg)
    out = Path(out_dir)
    return run_shard(
        shard,
        server,
        complete=lambda idx: bool(load_record(out, *locate(units, idx))),
        maker=lambda client, todo: ShardMaker(Session(cfg, client, out), units),
        progress=progress,
        lookahead=LOOKAHEAD,
    )


@register_scenario
class Sparrta(Scenario):
    """The ``sparrta`` scenario: the steps above on the config parsed once (scenarios.contract)."""

    NAME = "sparrta"
    Config = SparrtaConfig
    PATH = "scenarios.sparrta"  # what job.json of every SpaRRTa dataset says (resume compares it)

    def plan(self) -> JobPlan:
        return plan(self.config)

    def preflight(self) -> None:
        preflight(self.config)

    def server_spec(self) -> ServerSpec:
        return server_spec(self.config)

    def run(self, shard: Shard, out_dir: Path, *, server: str, progress=None) -> ShardResult:
        return run(self.config, shard, out_dir, server=server, progress=progress)

    def finalize(self, out_dir: Path) -> dict:
        return finalize(self.config, out_dir)

    def wds_samples(self, out_dir: Path):
        return wds_samples(self.config, out_dir)


class ShardMaker:
    """The session as the shard skeleton's maker: while entered, the background writer, the
    lookahead thread (the next ``LOOKAHEAD`` samples' first steps, pure functions of their index:
    no effect on bytes) and the helpers' priority run; all files are on disk when it exits."""

    def __init__(self, session: "Session", units: list[Unit]):
        self.session, self.units = session, units
        self._stack = contextlib.ExitStack()

    def __enter__(self) -> "ShardMaker":
        for cm in (self.session.writer, self.session.lookahead, responsive()):
            self._stack.enter_context(cm)
        return self

    def __exit__(self, *exc) -> None:
        try:
            if exc[0] is None:
                self.session.settle()
        finally:
            self._stack.__exit__(*exc)

    def make_sample(self, idx: int, upcoming) -> dict:
        ahead = [locate(self.units, j) for j in upcoming]
        self.session.want(ahead)
        return self.session.make(*locate(self.units, idx), ahead)


def finalize(config: dict, out_dir: Path) -> dict:
    """Table (``samples.parquet`` + ``metadata.csv``) with splits, and ``dataset_card.json``."""
    cfg = parse_config(config)
    stats = finalize_dataset(cfg, units_of(cfg), Path(out_dir))
    if cfg.layout == "sparrta":  # SpaRRTa's own layout beside ours: SPARRTA_DATA_ROOT=OUT/sparrta
        stats["sparrta_layout"] = export_sparrta(Path(out_dir), Path(out_dir) / "sparrta", replace=True)
    return stats


def wds_samples(config: dict, out_dir: Path):
    """For ``--format wds`` (renderfarm/wds.py): per sample, in global index order, the image,
    its table row (with ``split``) as ``json``, SpaRRTa's ``params.json`` and, when made, the
    instance mask (``mask.png``) and depth (``depth.npy``); the key is the global index."""
    cfg, out = parse_config(config), Path(out_dir)
    for row in with_splits(collect(cfg, units_of(cfg), out), cfg.samples_per_scene, cfg.split_pattern):
        members = {
            cfg.image_format: confined(out, row["file_name"]),
            "json": dumps(row).encode(),
            "params.json": confined(out, row["params_file"]),
        }
        for kind, ext in (("mask_file", "mask.png"), ("depth_file", "depth.npy")):
            if row.get(kind):
                members[ext] = confined(out, row[kind])
        yield f"{row['index']:08d}", members


class Session(ServerRequests):
    """One worker's state: its server connection, the scene currently on the server, caches."""

    def __init__(self, cfg: SparrtaConfig, client, out: Path):
        self.cfg, self.client, self.out = cfg, client, out
        self._shapes: dict[str, ShapeCache] = {}
        self._pack = sparrta_characters.load_pack() if cfg.characters else None  # opt-in skinned characters
        self._load_env = lambda name: load_env_cached(cfg, name)
        self._envs: dict = {}
        self._groups = OnceCache(16)  # scene groups: built once, by the main or the lookahead thread
        self._world = None
        self._look: dict = {}
        self._sent_look: dict | None = None
        self._scene_key = None
        self._colors: dict[tuple, dict[str, tuple[int, int, int]]] = {}  # per scene group: the server's
        # colours kept for the groups shown last (requests.colors_of): a group shown for a sample
        # queued ahead must outlast every attempt of the samples before it (each attempt after the
        # first is its own group) and the other queued samples' groups
        self.colors_kept = (EARLY_DEPTH + 1) * (scene_budget(cfg) + 1)
        self.writer = BackgroundWriter()  # encodes + writes while the next sample renders
        self.lookahead = Lookahead(self._start_quietly)  # the next samples' first steps, while this one renders
        self._session_id = uuid.uuid4().hex[:12]  # names this session's requests on a shared server
        self.early = EarlyRequest(EARLY_DEPTH)  # the next samples' first visibility requests, sent ahead (early.py)

    def env(self, name: str):
        if name not in self._envs:
            self._envs[name] = self._load_env(name)
        return self._envs[name]

    def shapes(self, env_name: str) -> ShapeCache:
        """Footprints from the environment's own asset library (default + its extra packs)."""
        if env_name not in self._shapes:
            env = self.env(env_name)
            shapes = ShapeCache(env.library, lambda cls: env.variants(cls, env.library))
            if self._pack is not None:  # opt-in characters; their props where cfg/env allow (videos' props_on)
                allow = getattr(env.spec, "character_props", False)
                props = self.cfg.character_props == "on" or (self.cfg.character_props == "auto" and bool(allow))
                shapes = sparrta_characters.CharacterShapes(shapes, self._pack, props)
            self._shapes[env_name] = shapes
        return self._shapes[env_name]

    # ---- scene groups ------------------------------------------------------------------------
    def group(self, unit: Unit, i: int, attempt: int, st: Setting) -> Group:
        """Attempt 0: the shared group of index ``i``; later attempts: fresh per-sample scenes."""
        env = self.env(unit.env)
        g = i // self.cfg.samples_per_scene
        base = (unit.env, unit.task, unit.triple_id)
        key = (*base, g) if attempt == 0 else (*base, "own", i, attempt)

        def build() -> Group:  # a function of the key alone (st: its placement rules, not the look's lens)
            rng = sample_rng(
                self.cfg.seed,
                unit.env,
                unit.task,
                unit.triple_id,
                g if attempt == 0 else i,
                stream=1 if attempt == 0 else 1 + attempt,
            )
            lib = self.shapes(unit.env).lib
            clutter = (lambda r, keep: env.clutter(r, keep, library=lib)) if self.cfg.clutter else None
            group = build_group(rng, key, unit.source_class, unit.target_class, self.shapes(unit.env), st, env.ground, clutter)
            if unit.task == "allo":  # drawn after the placement, from the same group RNG
                group.viewpoint = self.shapes(unit.env).pick(rng, unit.viewpoint_class)
            return group  # (its scene graph's per-group part: on the writer thread, graph.group_objects)

        return self._groups.get(key, build)

    # ---- one sample ----------------------------------------------------------------------------
    def want(self, samples: list[tuple[Unit, int]]) -> None:
        """Prepare these samples' first steps (:meth:`start`) on the lookahead thread."""
        self.lookahead.want([((u.env, u.task, u.triple_id, i), (u, i)) for u, i in samples])

    def start(self, unit: Unit, i: int) -> "Ahead":
        """The client-only first steps of sample ``i`` (no request to the server): its look, its
        setting, its RNG, its first scene group and its first candidate view. Pure: a function of
        (config, unit, i), whenever and on whichever thread it runs (the lookahead thread runs it
        for the next samples while the server works on the current one)."""
        cfg, env = self.cfg, self.env(unit.env)
        st = setting_for(cfg, env, unit.task)
        # this sample's look (issue 14): drawn from its own seed stream, recorded in its params
        look = draw_look(env, sample_rng(cfg.seed, unit.env, unit.task, unit.triple_id, i, stream=LOOK_STREAM))
        if "camera" in look:  # randomised lens (camera intrinsics)
            st = replace(st, fov_deg=float(look["camera"]["fov_deg"]))
        st = sample_setting(cfg, st, unit, i)  # camera_policy balanced: where this sample's source goes
        rng = sample_rng(cfg.seed, unit.env, unit.task, unit.triple_id, i)
        ahead = Ahead((unit.env, unit.task, unit.triple_id, i), st, look, rng)
        group = self.group(unit, i, 0, st)  # its errors are the sample's (make raises them)
        ahead.draws = draw_candidates(rng, group, unit.task, unit.label(i), st, env.ground, [], QUEUE_DEPTH)
        return ahead

    def _start_quietly(self, unit: Unit, i: int) -> "Ahead | None":
        """:meth:`start` for a later sample; any error is left for its own ``make`` to raise
        (this sample must not fail because of the next one)."""
        try:
            return self.start(unit, i)
        except Exception:  # noqa: BLE001 - make(unit, i) runs start again and raises it there
            return None

    def make(self, unit: Unit, i: int, nxt: "list[tuple[Unit, int]] | None" = None) -> dict:
        """Find a valid sample with index ``i``'s label, render it, write its files and record.

        Its first steps (:meth:`start`: look, scene group, first candidate views) come from the
        lookahead thread when :meth:`want` asked for them. Each candidate is one request
        (``request_view``: counts, and the images when they pass). The candidates are the draws
        the sequential loop makes, in the same order; up to ``QUEUE_DEPTH`` of them are in flight
        at once under the sample's token, so the server skips the rest once one has passed, and
        a drawn candidate that is not needed is dropped with its rejection counts. ``nxt``: the
        samples made next; their first candidates are queued behind this one's
        (:meth:`_send_early`). Same bytes as one candidate at a time (``QUEUE_DEPTH`` 1, no
        lookahead): ``test_lookahead_changes_no_byte``."""
        cfg, env = self.cfg, self.env(unit.env)
        ahead_key = (unit.env, unit.task, unit.triple_id, i)
        ahead = self.lookahead.take(ahead_key) or self.start(unit, i)
        st, self._look, rng = ahead.st, ahead.look, ahead.rng
        want, counts, renders = unit.label(i), Counter(), 0
        perceptual = self.perceptual(unit)
        vetoes = 0
        for attempt in range(scene_budget(cfg)):
            st = attempt_setting(st, attempt)  # camera_policy balanced: a quota point no scene could frame
            group = self.group(unit, i, attempt, st)
            if attempt > 0 or i % cfg.samples_per_scene == 0:
                counts.update(group.counts)
            draws = ahead.draws if attempt == 0 else []  # this attempt's draws in order: (view, error, rejections)
            sent: dict[int, object] = {}  # position in draws -> reply reader in flight
            if attempt == 0 and draws and draws[0][1] is None:
                early = self.early.take(ahead_key, draws[0][0])
                if early is not None:
                    sent = dict(enumerate(early.readers))
            for t in range(cfg.max_render_tries):
                draw_candidates(rng, group, unit.task, want, st, env.ground, draws, t + 1)
                view, unusable, seen = draws[t]
                counts.update(seen)
                if unusable is not None:
                    counts["scene_unusable"] += 1
                    break
                token = self._token(unit, i, attempt, vetoes)
                if t not in sent or self.holds(unit, group):  # (after a scene switch: not until needed)
                    # the scene first (also when a request queued for the next sample changed it),
                    # without waiting: the server sets it up while the next candidates are drawn
                    scene = self._scene_requests(unit, group)
                    draw_candidates(
                        rng, group, unit.task, want, st, env.ground, draws, min(t + QUEUE_DEPTH, cfg.max_render_tries)
                    )
                    for k, v in enumerate(usable_views(draws[t:]), start=t):
                        if k not in sent:
                            sent[k] = self.request_view(unit, i, v, st, token=token)
                    for read in scene:  # its replies (the group's colours), read behind the requests
                        read()
                # the next samples' first candidates, queued behind (a stock UnrealCV server answers
                # each request as it is sent: nothing to gain there from showing the next group early)
                self._send_early(nxt, switch=SWITCH_EARLY and getattr(self.client, "is_sceneforge", False))
                vis, images = sent.pop(t)()
                if vis is None:  # skipped: an earlier candidate passed, then was vetoed:
                    self.show(unit, group)
                    vis, images = self.request_view(unit, i, view, st)()  # ask again, unconditionally
                renders += 1
                fail = visibility_failure(vis, list(vis), st.min_visible_ratio, st.min_bbox_px)
                if fail is None:
                    self._send_early(nxt, switch=True)  # this sample is done (bar a perceptual veto)
                    if images is None:  # a server that did not render it (same rule: not ours)
                        self.show(unit, group)
                        images = self.render_sample(unit, i, view)()
                    files = self.describe(unit, i, st, group, view, vis)
                    if perceptual and self.vetoed(want, images, group, view, st):
                        counts[PERCEPTUAL_RULE] += 1
                        vetoes += 1
                        discard_replies(sent)  # skipped behind the vetoed view: sent again under the new token
                        continue
                    discard_replies(sent)  # skipped by the server: nobody reads them
                    return self.write(unit, i, group, view, counts, renders, images, files)
                counts[fail] += 1
            discard_replies(sent)
        raise self._give_up(unit, i, want, counts)

    # ---- the next samples' first candidates, queued behind this sample's requests ---------------
    def _send_early(self, upcoming: "list[tuple[Unit, int]] | None", switch: bool = False) -> None:
        """Queue the next samples' first candidates now (scenarios/sparrta/early.py), in order,
        each when its views are ready (lookahead), up to ``EARLY_DEPTH`` samples: behind this
        sample's own requests when it needs no new scene (same environment and scene group as the
        server holds); with ``switch`` also the first one that does, once every sample before it
        is queued: its reset and spawn go first, and the samples after it in its group follow
        (when this sample or one queued before the switch then needs more candidates, ``show``
        puts its group back). Before 2026-11-26 only the very next sample could switch, so when
        the client fell a few samples behind the server (writing, describing) the server idled
        until the client reached the group's last sample."""
        for k, (u, j) in enumerate(upcoming or ()):
            key = (u.env, u.task, u.triple_id, j)
            if self.early.holds(key):  # sent already: its replies are kept for it
                continue
            ahead = self.lookahead.peek(key)
            if not self.early.can_send() or ahead is None or not ahead.draws or ahead.draws[0][1] is not None:
                return
            same = self._world == u.env and self._scene_key == (u.env, u.task, u.triple_id, j // self.cfg.samples_per_scene)
            if not same:
                if not switch:
                    return
                switch = False  # one new scene group per call
            views = [v for v, _ in zip(usable_views(ahead.draws), range(min(QUEUE_DEPTH, self.cfg.max_render_tries)))]
            group, token = None if same else self.group(u, j, 0, ahead.st), self._token(u, j, 0, 0)

            # called for every view inside send(), in this iteration: the defaults bind this iteration's values
            def request(view, first=views[0], u=u, j=j, ahead=ahead, group=group, token=token):
                return self.request_view(u, j, view, ahead.st, ahead.look, group if view is first else None, token=token)

            self.early.send(key, views, request)

    def vetoed(self, want: str, images: dict, group: Group, view, st: Setting) -> bool:
        """The perceptual-consistency rule (scenarios/sampling/consistency.py) on the rendered
        mask (and depth): the mask-centroid order (left/right) and depth order (front/back); with
        ``camera_policy: decorrelated`` (``st.heading_margin``) also the image-space bearing read
        along the camera's heading (all four sectors, from the pixels lifted by their depth)."""
        colors = [self.colors_of(group)[n] for n in ("source", "target")]
        if ego_label_disagrees(want, images["object_mask"], images.get("depth"), *colors):
            return True
        return st.heading_margin and ego_bearing_disagrees(want, images["object_mask"], images["depth"], *colors, view.camera)

    def _give_up(self, unit: Unit, i: int, want: str, counts: Counter) -> PlacementError:
        """The error names the rule that rejected most, leaving out the label rules (they turn
        down most candidates by design) unless nothing else rejected anything."""
        limiting = Counter({k: v for k, v in counts.items() if k not in CONDITIONING}) or counts
        rule, n = limiting.most_common(1)[0] if limiting else ("none", 0)
        tries = sum(counts.values())
        return PlacementError(
            f"{unit.env}/{unit.task}/{unit.triple_id} sample {i} (label {want}): no valid sample in "
            f"{scene_budget(self.cfg)} placements; rule {rule!r} rejected most ({n} of {tries} "
            f"candidates, label rules aside): {dict(sorted(counts.items()))}",
            rule=rule,
            tries=tries,
            rejections=dict(counts),
        )

    def describe(self, unit: Unit, i: int, st: Setting, group: Group, view, vis: dict) -> dict:
        """Everything a sample writes besides its images and rejection counts (file names,
        params, table row, and its scene graph as a function of values fixed now): built while
        the server renders the image.

        The scene graph (every actor's node: ~2 ms per city sample, plus ~12 ms for the first
        sample of a scene group, whose per-group part ``graph.group_objects`` computes) is built
        by the writer thread (``record.write_sample``), off the thread that queues the server's
        next requests and off the lookahead thread that builds the next scene groups: the server
        waited for those threads at scene switches. Same bytes: every input is bound here."""
        cfg = self.cfg
        files = file_names(unit, i, cfg)
        all_colors = self.colors_of(group)
        colors = {n: all_colors[n] for n in objects_of(group, view)}
        params = build_params(cfg, unit, i, st, group, view, vis, colors, all_colors)
        params["world"] = self._look  # every drawn look value (issue 14 item 5)
        graph = partial(
            sample_graph,
            self.shapes(unit.env).lib,
            group,
            view,
            dict(vis),
            all_colors,
            server_world(self._look),
            {"env": unit.env, "task": unit.task, "triple_id": unit.triple_id, "index": i},
        )
        return {"files": files, "params": params, "graph": graph, "row": build_row(cfg, unit, i, st, group, view, vis, files)}

    def write(self, unit: Unit, i: int, group: Group, view, counts: Counter, renders: int, img: dict, described: dict) -> dict:
        """Write the sample's files and record on the writer thread (record.write_sample)."""
        return write_sample(self.writer, self.out, self.cfg, unit, i, group, view, counts, renders, img, described)
