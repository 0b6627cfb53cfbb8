"""Layout quotas (scenarios/sparrta/quotas.py, issue 46): the raking fit equalises every box's
per-label cell distribution, is deterministic, the shipped tables belong to the shipped
environments, and sample_view applies them (labels unchanged, same draws for the same seed)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from sceneforge.core.errors import ConfigError, PlacementError
from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.sampling.relations import LABELS, relation
from sceneforge.scenarios.sparrta import quotas
from sceneforge.scenarios.sparrta.config import Unit, parse_config
from sceneforge.scenarios.sparrta.quota_pilot import pilot
from sceneforge.scenarios.sparrta.scene import ShapeCache, build_group, draw_view, sample_view
from sceneforge.scenarios.sparrta.setting import quota_of, sample_setting, setting_for
from sceneforge.scenarios.world.environments import list_envs, load_env


def _shifted(n: int = 4000, seed: int = 0):
    """Synthetic 'views' of three boxes whose cells depend on the label the way an allo view's do
    (the figure's position and size shift with the label, the source's height), while the label
    also lives in the boxes' relative layout (the target-source offset)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    src = np.column_stack(
        [rng.uniform(0.2, 0.8, n), rng.uniform(0.3, 0.7, n) + np.array([0.05, -0.05, 0.0, 0.0])[y], rng.normal(-5.0, 0.4, n)]
    )
    offset = np.array([0.0, 0.0, -0.1, 0.1])[y] + rng.normal(0, 0.03, n)
    tgt = np.column_stack([src[:, 0] + offset, rng.uniform(0.3, 0.7, n), rng.normal(-4.5, 0.5, n)])
    fig = np.column_stack(
        [
            rng.beta(2, 2, n) * 0.6 + 0.2 + np.array([0.1, -0.1, 0.05, -0.05])[y],
            rng.uniform(0.3, 0.7, n),
            rng.normal(-5.5, 0.4, n) + 0.3 * (y == 0),
        ]
    )
    return np.stack([src, tgt, fig], axis=1), y


def _weighted_marginals(table, feats, y, probs):
    cells = table.cells(feats)
    out = np.zeros((feats.shape[1], len(quotas.MARGINS), 4, quotas.BINS**2))
    for b in range(feats.shape[1]):
        for m in range(len(quotas.MARGINS)):
            for li in range(4):
                sel = y == li
                h = np.bincount(cells[sel, b, m], weights=probs[sel], minlength=quotas.BINS**2)
                out[b, m, li] = h / h.sum()
    return out


def test_raking_equalises_each_box_cells_across_labels_and_is_deterministic():
    feats, y = _shifted()
    before = _weighted_marginals(quotas.fit(feats, y), feats, y, np.ones(len(y)))
    table = quotas.fit(feats, y)
    p = quotas.accept_probs(table, feats, y)
    after = _weighted_marginals(table, feats, y, p)
    spread = lambda m: float((m.max(axis=2) - m.min(axis=2)).max())  # noqa: E731 - worst cell, any box/margin
    # the shift is visible in the cells, and at most a residual after the acceptance step (the cap,
    # CAP_QUANTILE, trades exactness for acceptance; uncapped raking converges to 1e-3)
    assert spread(before) > 0.1 and spread(after) < 0.06
    assert all(a > 0.1 for a in table.acceptance) and 0.0 <= p.min() and p.max() <= 1.0
    # what the boxes say together is kept: the target-source offset still separates left and right
    keep = np.random.default_rng(1).uniform(size=len(y)) < p
    dx = feats[keep, 1, 0] - feats[keep, 0, 0]
    assert np.median(dx[y[keep] == 2]) < -0.05 and np.median(dx[y[keep] == 3]) > 0.05
    again = quotas.fit(feats, y)
    assert again.digest == table.digest and json.dumps(again.to_dict()) == json.dumps(table.to_dict())
    assert quotas.QuotaTable.from_dict(table.to_dict()).digest == table.digest
    # the scalar form a job uses is the vectorised one
    for k in range(0, 400, 37):
        assert table.accept_prob(LABELS[y[k]], feats[k]) == pytest.approx(p[k], abs=1e-12)


def test_a_pilot_and_its_fit_are_pure_functions_of_the_seed():
    cfg = parse_config({"envs": ["desert"], "tasks": ["allo"]})
    a = pilot(cfg, "desert", "allo", "cactus_camel", seed=3, groups=6)
    b = pilot(cfg, "desert", "allo", "cactus_camel", seed=3, groups=6)
    assert len(a["labels"]) >= 16 and np.array_equal(a["feats"], b["feats"]) and np.array_equal(a["labels"], b["labels"])
    assert a["feats"].shape[1:] == (3, 3)  # source, target, figure
    table = quotas.fit(a["feats"], a["labels"], "desert", "allo", "cactus_camel")
    assert table.digest == quotas.fit(a["feats"], a["labels"], "desert", "allo", "cactus_camel").digest
    p = quotas.accept_probs(table, a["feats"], a["labels"])
    assert all(0.0 < v <= 1.0 for v in table.acceptance) and (p > 0).any()


def test_shipped_tables_match_the_shipped_environments():
    """A table fitted on an environment's geometry applies only to that content (its sha256): when
    an environment file changes, remake its table (``python -m sceneforge.scenarios.sparrta.quota_pilot ENV``)."""
    shipped = sorted(p.stem for p in quotas.TABLE_DIR.glob("*.json"))
    assert {"desert", "city"} <= set(shipped)
    for name in shipped:
        assert name in list_envs()
        doc = json.loads(quotas.table_path(name).read_text())
        cfg = parse_config({"envs": [name], "tasks": ["allo"]})
        assert doc["env_sha256"] == cfg.env_files[name]["sha256"], f"{name}: environment changed since calibration"
        assert set(doc["tables"]["allo"]) == {t.id for t in cfg.env(name).triples}


def test_quota_applies_to_decorrelated_allo_only():
    env = load_env("desert")
    for task, policy, has in [("allo", "decorrelated", True), ("ego", "decorrelated", False), ("allo", "jitter", False)]:
        cfg = parse_config({"envs": ["desert"], "tasks": [task], "camera_policy": policy})
        unit = Unit("desert", task, "rock_truck", "rock", "truck", "human", 8, 0, 0)
        assert (quota_of(cfg, unit) is not None) is has
        assert (sample_setting(cfg, setting_for(cfg, env, task), unit, 0).quota is not None) is has


def test_sample_view_applies_the_quota_and_keeps_the_label():
    env = load_env("desert")
    shapes = ShapeCache(env.library)
    human = shapes.pick(np.random.default_rng(0), "human")
    cfg = parse_config({"envs": ["desert"], "tasks": ["allo"]})
    base = setting_for(cfg, env, "allo")
    unit = Unit("desert", "allo", "rock_truck", "rock", "truck", "human", 10**6, 0, 0)
    seen, kept = Counter(), 0
    for g in range(3):
        group = build_group(
            sample_rng(5, "desert", "allo", "rock_truck", g, 1), ("q", g), "rock", "truck", shapes, base, env.ground
        )
        group.viewpoint = human
        for j, want in enumerate(LABELS):
            st = sample_setting(cfg, base, unit, 4 * g + j)
            assert st.quota is not None
            try:
                v = sample_view(np.random.default_rng(g * 10 + j), group, "allo", want, st, env.ground, human, seen)
                w = sample_view(np.random.default_rng(g * 10 + j), group, "allo", want, st, env.ground, human, Counter())
            except PlacementError:
                continue
            kept += 1
            assert v.camera == w.camera and v.human.location == w.human.location  # same seed, same view
            assert relation(v.human.location, group.source.location, group.target.location, st.margin_deg) == want
            feats = quotas.view_features(v.camera, [group.source, group.target, v.human])
            assert st.quota.accept_prob(want, feats) > 0.0
            plain = replace(st, quota=None)  # without a quota: one draw, as 0.6.0
            a = sample_view(np.random.default_rng(7), group, "allo", want, plain, env.ground, human, Counter())
            b = draw_view(np.random.default_rng(7), group, "allo", want, plain, env.ground, human, Counter())
            assert a.camera == b.camera and a.human.location == b.human.location
    assert kept >= 8 and seen["quota"] > 0  # the acceptance step rejected views


def test_the_job_records_its_tables_and_a_recorded_060_config_runs_without():
    """The tables a job uses are in its config (job.json, fingerprint); ego-only and other
    policies record none (their 0.6.0 fingerprints hold); a recorded config from before 0.7.0
    (env_files, no quota_tables) resumes without quotas, as it was made."""
    allo = parse_config({"envs": ["desert"], "tasks": ["allo"], "seed": 2})
    assert set(allo.to_dict()["quota_tables"]) == {"desert"}
    assert allo.quota("desert", "allo", "rock_truck") is not None
    assert "quota_tables" not in parse_config({"envs": ["desert"], "tasks": ["ego"]}).to_dict()
    assert "quota_tables" not in parse_config({"envs": ["desert"], "tasks": ["allo"], "camera_policy": "jitter"}).to_dict()
    recorded = {k: v for k, v in allo.to_dict().items() if k != "quota_tables"}
    old = parse_config(recorded)
    assert old.quota_tables is None and old.fingerprint() != allo.fingerprint()
    unit = Unit("desert", "allo", "rock_truck", "rock", "truck", "human", 8, 0, 0)
    assert quota_of(old, unit) is None and quota_of(parse_config(allo.to_dict()), unit).digest == quota_of(allo, unit).digest
    with pytest.raises(ConfigError, match="quota_tables"):
        parse_config({**allo.to_dict(), "quota_tables": {"desert": "x"}})


@pytest.mark.render
def test_a_quota_job_is_byte_identical_at_one_and_two_workers(tmp_path):
    from sceneforge.renderfarm import run_job
    from sparrta_helpers import generate, tree_hashes

    cfg = {"envs": ["desert"], "tasks": ["allo"], "n": 8, "seed": 4}
    generate(cfg, tmp_path / "one")
    summary = run_job("sparrta", cfg, tmp_path / "two", workers=2, progress=False)
    assert summary["complete"] == 8 and summary["finalized"]
    assert tree_hashes(tmp_path / "one") == tree_hashes(tmp_path / "two")
    card = json.loads((tmp_path / "one" / "dataset_card.json").read_text())
    quota = card["layout_quotas"]["desert/allo/rock_truck"]
    assert quota["digest"] == parse_config(cfg).quota("desert", "allo", "rock_truck").digest
    assert set(quota["pilot_acceptance"]) == set(LABELS)
    records = [json.loads(p.read_text()) for p in (tmp_path / "one" / "records").rglob("*.json")]
    assert sum(r.get("rejections", {}).get("quota", 0) for r in records) > 0  # the step ran
