"""`sceneforge study CONFIG --out DIR --plan`: the cells, datasets and estimated time of a study,
printed without running or writing anything; counts checked against what a real run then does,
costs against the measurements they name (the reference tables, or DIR/timings.jsonl)."""

from __future__ import annotations

import json
import os
import statistics

import pytest
import yaml

from sceneforge.core.errors import ConfigError
from sceneforge.study.config import batch_for, load_study_config
from sceneforge.study.plan import (
    EXTRACT_MS,
    GENERATE_IMAGES_PER_S,
    HEAD_MS,
    batch_factor,
    format_plan,
    generate_rate,
    plan_study,
)
from study_helpers import BACKBONES, TINY, make_data, run_study, write_config


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("plan")
    datasets = make_data(tmp / "data")
    return tmp, datasets


def test_the_plan_counts_the_cells_a_run_then_runs_and_writes_nothing(tiny, tmp_path):
    _, datasets = tiny
    cfg_path = write_config(tmp_path / "study.yaml", datasets, reports=False)
    out = tmp_path / "out"
    r = run_study(str(cfg_path), "--out", str(out), "--plan")
    assert r.returncode == 0, r.stderr
    assert not out.exists()  # nothing written, not even the directory
    plan = plan_study(load_study_config(cfg_path), out)
    # 2 random-init backbones x 4 datasets (2 envs x 2 tasks) x 1 layer x 1 n_train; 4 layout rows
    assert [(b.name, b.rows_todo, b.extract_images) for b in plan.backbones] == [("vit-a", 4, 4 * 48), ("vit-b", 4, 4 * 48)]
    assert plan.layout_todo == 4 and not any(d.generate for d in plan.datasets)
    assert "vit-a [random] timm:vit_tiny_patch16_224, L2: 4 rows to run, 0 done" in r.stdout
    assert "not measured: dinov2-s-imgfocus's cost stands in" in r.stdout  # a tiny ViT has no reference: said so
    assert "estimated total:" in r.stdout

    # the real run: exactly the cells the plan listed
    assert run_study(str(cfg_path), "--out", str(out), "--quiet").returncode == 0
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert sum(r["kind"] == "layout" for r in rows) == 4 and sum(r["kind"] == "random" for r in rows) == 8

    # planned again: nothing left
    again = plan_study(load_study_config(cfg_path), out)
    assert [b.rows_todo for b in again.backbones] == [0, 0] and again.layout_todo == 0 and again.total() == (0, 0)
    assert "vit-a [random] timm:vit_tiny_patch16_224, L2: 0 rows to run, 4 done" in format_plan(again)

    # one more layer: 4 new rows per backbone, priced with this machine's own timings.jsonl
    more = plan_study(load_study_config(cfg_path, ["layers=[1, 2]"]), out)
    assert [b.rows_todo for b in more.backbones] == [4, 4]
    timings = [json.loads(x) for x in (out / "timings.jsonl").read_text().splitlines()]
    per_image = statistics.median(
        t["seconds"] * 1000 / t["images"] for t in timings if t["what"] == "extract" and t["backbone"] == "vit-a"
    )
    per_train = statistics.median(
        t["seconds"] / t["n_train"] for t in timings if t["what"] == "train" and t["row"].startswith("vit-a__")
    )
    a = more.backbones[0]
    assert a.extract.low == pytest.approx(4 * 48 * per_image / 1000) and "timings.jsonl" in a.extract.source
    assert a.heads.low == a.heads.high == pytest.approx(4 * 24 * per_train)
    assert "measured" in a.heads.source and "cpu" in a.heads.source
    # backbones not run yet, priced from what this study measured: a twin of vit-a (same spec and
    # model args) extracts at the measured cost; a wider ViT's heads scale the measured rows by
    # tokens x width (the range spans those rows), its extraction is a different model's
    twin = {**BACKBONES[0], "name": "vit-a2"}
    wide = {**BACKBONES[0], "name": "vit-wide", "model_args": {**TINY, "embed_dim": 64, "depth": 3}}
    cfg3 = write_config(tmp_path / "more.yaml", datasets, reports=False, backbones=[*BACKBONES, twin, wide])
    by = {b.name: b for b in plan_study(load_study_config(cfg3), out).backbones}
    extract_ms = [t["seconds"] * 1000 / t["images"] for t in timings if t["what"] == "extract" and t["backbone"] == "vit-a"]
    assert by["vit-a2"].extract.low == pytest.approx(4 * 48 * statistics.median(extract_ms) / 1000)
    assert "for the same spec" in by["vit-a2"].extract.source and "for the same spec" not in by["vit-wide"].extract.source
    shapes = {t["backbone"]: list(t["shapes"].values()) for t in timings if t["what"] == "extract"}
    tw = {k: statistics.mean(s[0] * s[2] for s in v) for k, v in shapes.items()}
    per_unit = [
        t["seconds"] / t["n_train"] / batch_factor(batch_for(t["n_train"])) / tw[t["row"].split("__")[0]]
        for t in timings
        if t["what"] == "train"
    ]
    w = by["vit-wide"]
    assert list(w.shapes.values()) == [(16, 1, 64)] and w.rows_todo == 4  # 32 px / 8 px patches, 64 wide
    need = 4 * 24 * batch_factor(batch_for(24)) * 16 * 64
    assert w.heads.low == pytest.approx(min(per_unit) * need) and w.heads.high == pytest.approx(max(per_unit) * need)
    assert "scaled from 8 rows of vit-a, vit-b" in w.heads.source and "/ theirs 512 x batch" in w.heads.source
    # another protocol is refused as the run would refuse it, in one line
    with pytest.raises(ConfigError, match="epochs"):
        plan_study(load_study_config(cfg_path, ["epochs=4"]), out)


def test_a_study_that_generates_is_priced_from_the_reference_measurements(tmp_path):
    cfg_path = tmp_path / "gen.yaml"
    cfg_path.write_text(yaml.safe_dump({
        "backbones": [{"name": "dinov2-s", "backbone": "dinov2-s-imgfocus", "layers": [9, 12]},
                      {"name": "tiny", "backbone": BACKBONES[0]["backbone"], "weights": "random", "layers": "auto"}],
        "environments": ["desert", "city"], "tasks": ["ego", "allo"], "n": 400, "epochs": 300, "patience": 40, "reports": False,
    }))  # fmt: skip
    out = tmp_path / "out"
    plan = plan_study(load_study_config(cfg_path), out)
    assert not out.exists()
    gen = {d.name: d for d in plan.datasets}
    assert set(gen) == {"desert_ego", "desert_allo", "city_ego", "city_allo"} and all(d.generate for d in gen.values())
    for name, d in gen.items():
        env, task = name.rsplit("_", 1)
        assert d.cost.low == pytest.approx(400 / generate_rate(env, task, 1)[0])
        assert ".farm/summary.json" in d.cost.source or "docs/validation.md" in d.cost.source
        assert "2-core" in d.cost.source
        assert list(d.groups.values()) == [[320]]  # every train row: 8 of 10 scenes under the default split
    by = {b.name: b for b in plan.backbones}
    assert by["dinov2-s"].rows_todo == 4 * 2 and by["dinov2-s-random"].rows_todo == 4 * 2  # the random twin, added
    assert by["tiny"].rows_todo == 4 * 4 and "auto" in by["tiny"].layers  # auto: the 4 quarter-depth blocks
    assert by["dinov2-s"].extract.low == pytest.approx(4 * 400 * EXTRACT_MS["dinov2-s-imgfocus"] / 1000)
    heads = by["dinov2-s"].heads
    # 4 datasets x 2 layers x 320 train images, in batches of 32 (3.2x the per-image cost of 256), at
    # DINOv2-S/14's 256 x 384 tokens, from 60 epochs (warm-up 60, patience 40) on
    assert batch_factor(256) == 1 and batch_factor(32) == pytest.approx(3.17, abs=0.01) and batch_factor(250) > 1
    per_epoch = HEAD_MS / 1000 * (256 * 384) / (196 * 384) * batch_factor(32) * 4 * 2 * 320
    assert heads.low == pytest.approx(per_epoch * 60) and "x 3.17 (batch)" in heads.source
    assert heads.low < heads.high and heads.high / heads.low == pytest.approx(300 / 60, rel=0.01)  # 60 (warm-up) to 300 epochs
    # a spec without a measured head cost is priced at its own architecture's tokens x width (built on
    # the meta device), not ViT-S/16's: a small CNN's grid is a fraction of a ViT's
    tiny = by["tiny"]
    assert tiny.shapes_known and "token shape not known" not in tiny.heads.source
    tw = sum(t * w for t, _, w in tiny.shapes.values()) / len(tiny.shapes)
    assert tw != 196 * 384 and f"x {tw / (196 * 384):.2f} (tokens x width" in tiny.heads.source
    low, high = plan.total()
    assert low == pytest.approx(
        sum(c.low for c in [*(d.cost for d in plan.datasets), *(x for b in plan.backbones for x in (b.extract, b.heads))])
    )
    assert high > low
    text = format_plan(plan, str(cfg_path))
    assert "4 to generate" in text and "estimated total" in text


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="checks the plan on a machine without CUDA")
def test_a_gpu_plan_on_a_machine_without_one_says_so_and_calls_cpu_costs_an_upper_bound(tiny, tmp_path):
    _, datasets = tiny
    cfg_path = write_config(tmp_path / "study.yaml", datasets, reports=False)
    r = run_study(str(cfg_path), "--out", str(tmp_path / "out"), "--dry-run", "--device", "cuda")
    assert r.returncode == 0, r.stderr
    assert "torch sees no CUDA device on this machine" in r.stdout and "upper bound for a GPU" in r.stdout
    assert "device: cpu" in run_study(str(cfg_path), "--out", str(tmp_path / "out"), "--plan", "--device", "auto").stdout
    r = run_study(str(cfg_path), "--out", str(tmp_path / "out"), "--plan", "--device", "tpu")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "expected auto, cpu, cuda or cuda:N" in r.stderr


def test_generation_is_priced_for_the_render_workers_the_run_would_use(monkeypatch, tmp_path):
    """A rate measured with one worker doubles with two on two cores and stops there (a worker per
    core: a third on two cores adds nothing); desert allo, measured with two workers, halves for
    one. `--workers` reaches the plan as it reaches the run."""
    monkeypatch.setattr("sceneforge.study.plan.os.cpu_count", lambda: 2)
    ego = GENERATE_IMAGES_PER_S[("desert", "ego")]
    assert generate_rate("desert", "ego", 1) == (ego, generate_rate("desert", "ego", 1)[1])
    assert "scaled" not in generate_rate("desert", "ego", 1)[1]
    rate, src = generate_rate("desert", "ego", 2)
    assert rate == pytest.approx(2 * ego) and "scaled x 2/1 for 2 workers" in src
    rate, src = generate_rate("desert", "ego", 8)
    assert rate == pytest.approx(2 * ego) and "for 8 workers on 2 cores" in src
    allo = GENERATE_IMAGES_PER_S[("desert", "allo")]
    assert generate_rate("desert", "allo", 2)[0] == allo and "2 workers" in generate_rate("desert", "allo", 2)[1]
    assert generate_rate("desert", "allo", 1)[0] == pytest.approx(allo / 2)
    rate, src = generate_rate("moon", "ego", 1)
    assert rate == min(GENERATE_IMAGES_PER_S.values()) and "moon ego not measured" in src
    cfg_path = tmp_path / "gen.yaml"
    cfg_path.write_text(yaml.safe_dump({"backbones": BACKBONES[:1], "environments": ["desert"], "tasks": ["ego"], "n": 1000}))
    cfg = load_study_config(cfg_path)
    one = plan_study(cfg, tmp_path / "out").datasets[0].cost
    two = plan_study(cfg, tmp_path / "out", workers=2).datasets[0].cost
    assert one.low == pytest.approx(1000 / ego) and two.low == pytest.approx(one.low / 2)
    r = run_study(str(cfg_path), "--out", str(tmp_path / "out"), "--plan", "--workers", "2")  # the CLI passes it on
    assert r.returncode == 0, r.stderr
    assert "desert_ego: generate 1,000 images" in r.stdout
    assert ("for 2 workers" in r.stdout) == (min(2, os.cpu_count() or 1) == 2)
