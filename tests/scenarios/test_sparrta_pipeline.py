"""The sparrta sampler's request pipeline (scenarios/sparrta/early.py, requests.py,
lookahead.py): the same bytes as one candidate at a time, and the same sampler over a stock
UnrealCV (UE5) server's commands."""

from __future__ import annotations

import json
from collections import Counter
from concurrent.futures import wait

import numpy as np
import pandas as pd
import pytest

from sceneforge.scenarios.sparrta import scenario as sparrta
from sparrta_helpers import generate, mask_of as _mask_of, tree_hashes


@pytest.mark.render
def test_lookahead_changes_no_byte(server, tmp_path, monkeypatch):
    """Scene groups and first views prepared on the lookahead thread (scenarios/pipeline/lookahead.py),
    next candidates drawn and queued while the server counts pixels (skipped by the server once
    one passed), the next samples' first candidates queued behind (scenarios/sparrta/early.py):
    the same bytes as one candidate at a time with nothing prepared ahead (a city: clutter,
    several scene groups, visibility retries), also when the perceptual rule vetoes an accepted
    view (forced here by a pure function of its mask) after later candidates were queued, and
    when a later sample's scene group was queued before the candidates queued ahead of it passed
    (``SWITCH_EARLY``: their group shown again when they all failed)."""
    import zlib

    from sceneforge.scenarios.pipeline.lookahead import Lookahead
    from sceneforge.scenarios.sparrta.early import EarlyRequest

    cfg = {"envs": ["city"], "tasks": ["ego", "allo"], "n": 6, "seed": 3, "masks": True, "samples_per_scene": 2}
    outs, sent, send, switches = {}, [], EarlyRequest.send, []
    real = sparrta.ego_label_disagrees
    real_send_early, real_failure, real_make = sparrta.Session._send_early, sparrta.visibility_failure, sparrta.Session.make
    real_scene_requests, shown = sparrta.Session._scene_requests, []
    passed = [False]

    def make(self, *a, **k):  # a sample: none of its candidates has passed yet
        passed[0] = False
        return real_make(self, *a, **k)

    def counting_send(self, key, view, request):  # the real send, counted
        sent.append(key)
        return send(self, key, view, request)

    def failure(*a):  # the make loop's verdict on a read reply
        out = real_failure(*a)
        passed[0] = passed[0] or out is None
        return out

    def send_early(self, upcoming, switch=False):  # a scene switch queued before any candidate passed
        before = self._scene_key
        real_send_early(self, upcoming, switch)
        switches.extend([not passed[0]] if self._scene_key != before else [])

    def scene_requests(self, unit, group):  # the groups the server is asked to hold, in order
        if self._scene_key != group.key:
            shown.append(group.key)
        return real_scene_requests(self, unit, group)

    def peek_when_ready(self, key):  # the lookahead thread never "just late": what is queued ahead
        fut = self._futures.get(key)  # depends on the scenes alone, not on the two cores' timing
        if fut is not None:
            wait([fut])
        return real_peek(self, key)

    real_peek = Lookahead.peek
    monkeypatch.setattr(Lookahead, "peek", peek_when_ready)
    monkeypatch.setattr(EarlyRequest, "send", counting_send)
    monkeypatch.setattr(sparrta, "visibility_failure", failure)
    monkeypatch.setattr(sparrta.Session, "_send_early", send_early)
    monkeypatch.setattr(sparrta.Session, "_scene_requests", scene_requests)
    monkeypatch.setattr(sparrta.Session, "make", make)
    monkeypatch.setattr(
        sparrta,
        "ego_label_disagrees",  # a third of accepted views vetoed, by their mask
        lambda want, mask, *a: real(want, mask, *a) or zlib.crc32(mask.tobytes()) % 3 == 0,
    )
    for depth in (0, 3):
        shown.clear()  # (kept: the queued run's)
        monkeypatch.setattr(sparrta, "LOOKAHEAD", depth)
        monkeypatch.setattr(sparrta, "QUEUE_DEPTH", 4 if depth else 1)
        monkeypatch.setattr(sparrta, "SWITCH_EARLY", depth > 0)
        outs[depth] = tmp_path / f"ahead{depth}"
        generate(cfg, outs[depth], server=server.address, progress=False)
        assert bool(sent) == (depth > 0)  # requests queued ahead only with a lookahead
    assert tree_hashes(outs[0]) == tree_hashes(outs[3])
    records = [json.loads(p.read_text()) for p in sorted((outs[3] / "records").rglob("*.json"))]
    assert records and sum(r["renders"] for r in records) > len(records)  # some candidates failed visibility
    assert sum(r["rejections"].get("perceptual", 0) for r in records) >= 2  # and some accepted ones were vetoed
    assert switches, switches  # next scene groups were queued ahead of their samples
    # and some group was shown again: a sample queued before a switch needed more candidates
    assert len(shown) > len(set(shown)), shown


@pytest.mark.render
def test_a_new_scene_group_per_sample_queued_ahead_changes_no_byte(server, tmp_path, monkeypatch):
    """One scene group per sample: every sample queued ahead (up to ``EARLY_DEPTH``) needs its own
    reset and spawn, one new group per ``_send_early`` call, and a sample whose candidates all
    fail has its group shown again behind them. Same bytes as one candidate at a time."""
    cfg = {"envs": ["city"], "tasks": ["ego", "allo"], "n": 6, "seed": 7, "masks": True, "samples_per_scene": 1}
    real_scene_requests, shown = sparrta.Session._scene_requests, []

    def scene_requests(self, unit, group):
        if self._scene_key != group.key:
            shown.append(group.key)
        return real_scene_requests(self, unit, group)

    monkeypatch.setattr(sparrta.Session, "_scene_requests", scene_requests)
    outs = {}
    for depth in (0, sparrta.LOOKAHEAD):
        shown.clear()
        monkeypatch.setattr(sparrta, "LOOKAHEAD", depth)
        monkeypatch.setattr(sparrta, "QUEUE_DEPTH", 3 if depth else 1)
        monkeypatch.setattr(sparrta, "SWITCH_EARLY", depth > 0)
        outs[depth] = tmp_path / f"ahead{depth}"
        generate(cfg, outs[depth], server=server.address, progress=False)
    assert tree_hashes(outs[0]) == tree_hashes(outs[sparrta.LOOKAHEAD])
    # every sample (6 ego + 6 allo: 2 per triple) had a group of its own shown: its shared group (key ending in
    # the group index) or, when that scene could not frame it, a fresh one (key (..., "own", i, attempt)); how
    # many samples need a fresh scene depends on the sampler, so the count is of samples, not of keys
    sample_of = {(k[1], k[2], k[4] if k[3] == "own" else k[3]) for k in shown}
    assert len(sample_of) == 12, sorted(map(str, set(shown)))


@pytest.mark.render
def test_generates_through_the_stock_unrealcv_path(server, tmp_path, monkeypatch, caplog):
    """Against a server without the /sceneforge/ extensions (a UE5 level), the same sampler runs
    on stock commands: every request answered at once, ``render_if_visible`` as a visibility
    query then a render, the queued candidates' tokens kept by the client. Our server stands in
    for UE here (the client is told it is stock). The world cannot be set there (one warning), so
    this checks the labels on the written masks, not bytes against the extension path."""
    import logging

    from sceneforge.engine.client import RenderClient

    def clear():  # a stock client removes only what it spawned (a UE level keeps its own actors)
        with RenderClient(server.address) as c:
            c.reset()

    clear()
    monkeypatch.setattr(RenderClient, "is_sceneforge", property(lambda self: False))
    cfg = {"envs": ["desert"], "tasks": ["ego", "allo"], "n": 8, "seed": 5, "masks": True, "depth": True}
    out = tmp_path / "stock"
    try:
        with caplog.at_level(logging.WARNING, logger="sceneforge.engine.client"):
            generate(cfg, out, server=server.address, progress=False)
    finally:
        monkeypatch.undo()
        clear()
    assert sum("set_world ignored" in r.getMessage() for r in caplog.records) == 1
    df = pd.read_parquet(out / "samples.parquet")
    assert len(df) == 16 and sorted(Counter(df[df.task == "ego"].label).values()) == [2, 2, 2, 2]
    for _, r in df.iterrows():
        for name in ("source", "target"):
            sel = _mask_of(out, r, name)
            ys, xs = np.nonzero(sel)
            assert r[f"{name}_visible_ratio"] >= 0.8 and max(xs.max() - xs.min(), ys.max() - ys.min()) + 1 >= 12
        if r.task == "ego":
            src, tgt = _mask_of(out, r, "source"), _mask_of(out, r, "target")
            depth = np.load(out / r.depth_file)
            du = np.nonzero(tgt)[1].mean() - np.nonzero(src)[1].mean()
            dz = np.median(depth[tgt]) - np.median(depth[src])
            assert {"right": du > 0, "left": du < 0, "front": dz > 0, "back": dz < 0}[r.label], (r.index, r.label)


@pytest.mark.render
def test_a_groups_colours_outlast_every_group_shown_while_it_is_in_flight(render_client, tmp_path):
    """A sample's instance colours come from the reply read when its scene group was shown; the
    group may have been shown for it while it was queued ahead, before the samples in front of it
    tried all their scenes. The cache keeps the ``colors_kept`` groups shown last, a group shown
    again counting as new. Before 2026-11-27 it kept 4 by first insertion and ``generate`` stopped
    with ``KeyError: ('desert', 'ego', 'rock_truck', 62)`` (desert ego, 5,000 samples,
    ``--camera-policy balanced --min-bbox-px 24``)."""
    from sceneforge.scenarios.sparrta.config import parse_config
    from sceneforge.scenarios.sparrta.setting import setting_for, units_of

    cfg = parse_config({"envs": ["desert"], "tasks": ["ego"], "n": 4, "seed": 3, "samples_per_scene": 1})
    unit = units_of(cfg)[0]
    session = sparrta.Session(cfg, render_client, tmp_path)
    kept = session.colors_kept
    assert kept >= (sparrta.EARLY_DEPTH + 1) * sparrta.scene_budget(cfg)  # every attempt of the samples ahead
    st = setting_for(cfg, session.env(unit.env), unit.task)
    first = session.group(unit, 0, 0, st)
    others = [session.group(unit, 0, attempt, st) for attempt in range(1, 4)]  # a sample's own later scenes
    others += [session.group(unit, i, 0, st) for i in range(1, kept + kept // 2)]
    session.show(unit, first)
    colours = dict(session.colors_of(first))
    assert set(colours) >= {"source", "target"}
    for g in others[: kept // 2]:
        session.show(unit, g)
    session.show(unit, first)  # shown again (its sample needed more candidates): now the newest
    for g in others[kept // 2 : kept // 2 + kept - 1]:
        session.show(unit, g)
    assert session.colors_of(first) == colours  # kept - 1 groups later: still there, same colours
    session.show(unit, others[kept // 2 + kept - 1])
    assert first.key not in session._colors  # one more: the least recently shown one goes
    assert len(session._colors) == kept
