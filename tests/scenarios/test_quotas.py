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
    out = np.zeros((feats.shape[1], len(quotas.MARGINS), 4, table.bins**2))
    for b in range(feats.shape[1]):
        for m in range(len(quotas.MARGINS)):
            for li in range(4):
                sel = y == li
                h = np.bincount(cells[sel, b, m], weights=probs[sel], minlength=table.bins**2)
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


@pytest.mark.parametrize("bins", [2, 3])
def test_a_table_fitted_with_other_bins_indexes_its_own_cells(bins):
    """``fit(..., bins=k)`` (the ablations' ``layout_leak.py --bins``) makes a k x k table that
    equalises its own cells, read back from its edges; the module's BINS (the shipped tables') is
    neither read nor changed."""
    feats, y = _shifted(seed=2)
    table = quotas.fit(feats, y, bins=bins)
    assert table.bins == bins and table.log_u.shape == (3, len(quotas.MARGINS), 4, bins * bins)
    cells = table.cells(feats)
    assert cells.min() == 0 and cells.max() == bins * bins - 1  # every cell of the k x k grid reached
    again = quotas.QuotaTable.from_dict(table.to_dict())
    assert again.bins == bins and np.array_equal(again.cells(feats), cells)
    p = quotas.accept_probs(table, feats, y)
    before = _weighted_marginals(table, feats, y, np.ones(len(y)))
    after = _weighted_marginals(table, feats, y, p)
    spread = lambda m: float((m.max(axis=2) - m.min(axis=2)).max())  # noqa: E731
    assert spread(after) < spread(before) / 2
    assert quotas.BINS == 4 and quotas.fit(feats, y).digest == quotas.fit(feats, y, bins=quotas.BINS).digest
    with pytest.raises(ValueError, match="bins must be an integer >= 2, got 1"):
        quotas.fit(feats, y, bins=1)


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
        assert all(quotas.QuotaTable.from_dict(t).bins == quotas.BINS for t in doc["tables"]["allo"].values())


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
    assert "layout_quotas_note" not in card  # a shipped environment has its tables: nothing to explain
    assert set(quota["pilot_acceptance"]) == set(LABELS)
    records = [json.loads(p.read_text()) for p in (tmp_path / "one" / "records").rglob("*.json")]
    assert sum(r.get("rejections", {}).get("quota", 0) for r in records) > 0  # the step ran


def _edited_desert(folder):
    """A real edited copy of the shipped desert.yaml (one comment line more): the same name and
    geometry, another sha256, so no shipped table is keyed by it."""
    from sceneforge.scenarios.world.environments import env_path

    path = folder / "desert.yaml"
    path.write_text(env_path("desert").read_text(encoding="utf-8") + "# edited after calibration\n", encoding="utf-8")
    return path


def _quota_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelname == "WARNING" and "layout quotas are off" in r.getMessage()]


def test_an_environment_without_a_table_is_warned_about_once_and_a_shipped_one_is_not(tmp_path, caplog):
    """A decorrelated allo job on an environment file no table is keyed by runs without quotas:
    that must not pass silently. One warning per environment (allo is the task quotas apply to)
    naming the file, the reason and the command that calibrates a table; none for a shipped
    environment, none where quotas do not apply (ego, jitter)."""
    path = _edited_desert(tmp_path)
    with caplog.at_level("WARNING"):
        cfg = parse_config({"envs": [str(path)], "tasks": ["ego", "allo"], "seed": 3})
    assert cfg.quota_tables is None and cfg.quota("desert", "allo", "rock_truck") is None
    [msg] = _quota_warnings(caplog)
    assert str(path) in msg and "no quota table matches its sha256" in msg
    assert cfg.env_files["desert"]["sha256"][:12] in msg
    assert (
        f"python -m sceneforge.scenarios.sparrta.quota_pilot {path} --out DIR" in msg and "--quota-table DIR/desert.json" in msg
    )
    caplog.clear()
    with caplog.at_level("WARNING"):
        parse_config({"envs": ["desert", "city"], "tasks": ["ego", "allo"]})
        parse_config({"envs": [str(path)], "tasks": ["ego"]})
        parse_config({"envs": [str(path)], "tasks": ["allo"], "camera_policy": "jitter"})
    assert _quota_warnings(caplog) == []


def test_a_table_calibrated_for_a_users_environment_file_gives_it_quotas(tmp_path, caplog):
    """``quota_pilot ENV.yaml --out DIR`` writes a table for any environment file (never into the
    package without --out); ``quota_table_files`` hands it to a job, checked against the file's
    sha256, and the job records its content (not the path) in quota_tables."""
    from sceneforge.scenarios.sparrta import quota_pilot

    path = _edited_desert(tmp_path)
    shipped = {p.name: p.read_bytes() for p in quotas.TABLE_DIR.glob("*.json")}
    with pytest.raises(SystemExit) as e:  # a user's file is not written into the package
        quota_pilot.main([str(path), "--groups", "3"])
    assert e.value.code == 2 and {p.name: p.read_bytes() for p in quotas.TABLE_DIR.glob("*.json")} == shipped
    assert quota_pilot.main([str(path), "--groups", "3", "--out", str(tmp_path / "tables")]) == 0
    table = tmp_path / "tables" / "desert.json"
    doc = json.loads(table.read_text())
    cfg_env = parse_config({"envs": [str(path)], "tasks": ["ego"]})
    assert doc["env"] == "desert" and doc["env_sha256"] == cfg_env.env_files["desert"]["sha256"]
    assert set(doc["tables"]["allo"]) == {t.id for t in cfg_env.env("desert").triples}
    with caplog.at_level("WARNING"):
        cfg = parse_config({"envs": [str(path)], "tasks": ["allo"], "quota_table_files": [str(table)]})
    assert _quota_warnings(caplog) == []
    q = cfg.quota("desert", "allo", "rock_truck")
    assert q is not None and q.digest == quotas.QuotaTable.from_dict(doc["tables"]["allo"]["rock_truck"]).digest
    assert "quota_table_files" not in cfg.to_dict() and cfg.to_dict()["quota_tables"]["desert"] == doc
    moved = tmp_path / "elsewhere.json"
    moved.write_text(table.read_text())
    again = parse_config({"envs": [str(path)], "tasks": ["allo"], "quota_table_files": [str(moved)]})
    assert again.fingerprint() == cfg.fingerprint()  # the identity is the table's content
    assert parse_config(cfg.to_dict()).quota("desert", "allo", "rock_truck").digest == q.digest  # a worker's view
    bad = [
        ({"envs": ["desert"]}, "calibrated for another content of environment 'desert'"),  # the shipped file
        ({"envs": ["city"]}, "environment 'desert', which this job does not use"),
        ({"camera_policy": "jitter"}, "applies to camera_policy decorrelated with task allo"),
        ({"tasks": ["ego"]}, "applies to camera_policy decorrelated with task allo"),
        ({"quota_table_files": [str(tmp_path / "missing.json")]}, "cannot read"),
        ({"quota_table_files": [str(path)]}, "not a JSON file"),
        ({"quota_table_files": [str(table), str(moved)]}, "are both for 'desert'"),
    ]
    for change, message in bad:
        raw = {"envs": [str(path)], "tasks": ["allo"], "quota_table_files": [str(table)], **change}
        with pytest.raises(ConfigError, match=message):
            parse_config(raw)


@pytest.mark.render
def test_generate_on_an_edited_environment_warns_once_and_the_card_says_why(tmp_path):
    """`sceneforge generate` on an edited copy of a shipped environment: one warning line on
    stderr, layout_quotas null and layout_quotas_note saying why, in words, with the command."""
    import subprocess
    import sys

    path = _edited_desert(tmp_path)
    out = tmp_path / "data"
    argv = ["generate", "--env", str(path), "--task", "both", "--n", "4", "--size", "64", "--quiet", "--no-fetch"]
    done = subprocess.run(
        [sys.executable, "-m", "sceneforge.cli", *argv, "--out", str(out)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [ln for ln in done.stderr.splitlines() if "layout quotas are off" in ln]
    assert len(lines) == 1 and lines[0].startswith("WARNING") and str(path) in lines[0], done.stderr
    card = json.loads((out / "dataset_card.json").read_text())
    assert all(v is None for v in card["layout_quotas"].values())
    assert set(card["layout_quotas_note"]) == {"desert/allo"}  # ego has no quotas by design: no note
    note = card["layout_quotas_note"]["desert/allo"]
    assert "no quota table matches its sha256" in note and f"quota_pilot {path} --out DIR" in note


def test_layout_leak_draws_its_views_with_the_pilot():
    """benchmarks/layout_leak.py has no sampler of its own: its table is pilot()'s boxes (quotas as
    a job applies them, or none with --no-quotas), and --max-pair-dist reaches the unit's Setting."""
    import argparse
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "layout_leak.py"
    spec = importlib.util.spec_from_file_location("layout_leak", path)
    leak = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(leak)
    base = dict(
        env="desert", policy="decorrelated", groups=3, triple=None, seed=5, max_pair_dist=None, window=None, no_quotas=False,
        fit_quotas=None, fit_groups=300, bins=4,
    )  # fmt: skip

    for task, kw, pilot_kw in [
        ("ego", {}, {}),
        ("allo", {"no_quotas": True}, {}),
        ("ego", {"max_pair_dist": 300.0}, {"setting": {"max_pair_dist_cm": 300.0}}),
    ]:
        t, _, _ = leak.views(argparse.Namespace(**{**base, "task": task, **kw}))
        cfg = parse_config({"envs": ["desert"], "tasks": [task]})
        p = pilot(cfg, "desert", task, "rock_truck", 5, 3, quotas=not kw.get("no_quotas", False), **pilot_kw)
        assert len(t) == len(p["labels"]) > 0 and list(t.label) == [LABELS[i] for i in p["labels"]]
        cols = [f"{n}_bbox_{c}" for n in quotas.BOXES[task] for c in ("x0", "y0", "x1", "y1")]
        assert np.array_equal(t[cols].to_numpy(), p["boxes"].reshape(len(t), -1))
    near = pilot(parse_config({"envs": ["desert"], "tasks": ["ego"]}), "desert", "ego", "rock_truck", 5, 3)
    assert not np.array_equal(near["boxes"], p["boxes"])  # the pair-distance override changed the scenes
    # --fit-quotas (the ego ablation): a table fitted on another pilot thins these views to equal
    # counts per label; every row kept is one of the pilot's, and the shipped bins are untouched
    fit = {"fit_quotas": 1, "fit_groups": 12, "bins": 2}
    fitted, _, _ = leak.views(argparse.Namespace(**{**base, "task": "ego", "groups": 12, **fit}))
    every, _, _ = leak.views(argparse.Namespace(**{**base, "task": "ego", "groups": 12}))
    counts = fitted.label.value_counts()
    assert 0 < len(fitted) < len(every) and len(set(counts)) == 1 and len(counts) == 4
    key = ["g", "label", "source_bbox_x0", "target_bbox_x0"]
    assert set(map(tuple, fitted[key].to_numpy())) <= set(map(tuple, every[key].to_numpy()))
    assert quotas.BINS == 4
