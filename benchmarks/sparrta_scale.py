"""SpaRRTa-scale probing study (issue 34 items 2-4): data-efficiency curves and ablation rows.

Each dataset's features are extracted once for every requested layer (one forward pass, fp16
cache shared by all rows); each (dataset, layer, n_train) row trains the three heads' lr × dropout
grids as one batched module (probing.selection.run_grids, early stopping on val) on the **first
n_train train rows** of the dataset's own split (val and test: all of them), and records the
val-selected config's test accuracy with its 95% Wilson interval, next to the layout baselines
(probing.layout: an MLP on the source box, the target box, both boxes) on the same rows.

Resumable: every finished row is one line of OUT/results.jsonl and is skipped when the same
command runs again (kill it at any time; at most the row in progress is lost).

    # curves: ego, desert and city, n_train 400..4000, two layers
    python benchmarks/sparrta_scale.py run --out /work/study14/scale --layers 9,12 \\
        --n-train 400,1000,2000,4000 --row curve:desert=DATA/desert_ego --row curve:city=DATA/city_ego
    # ablations at one n_train (name=dataset)
    python benchmarks/sparrta_scale.py run --out /work/study14/scale --layers 9 --n-train 2000 \\
        --row ablation:sparrta=DATA/abl_ego_sparrta --row ablation:balanced=DATA/abl_ego_balanced
    python benchmarks/sparrta_scale.py report --out /work/study14/scale --plot docs/img/validation_curves.png

Rows are run in the order given, smallest n_train first within a row. The whole study of
docs/validation.md is one resumable command (generation, then the rows in priority order; rerun it
to continue where it stopped, in this session or the next):

    python benchmarks/sparrta_scale.py study --root /work/study14

**New studies use ``sceneforge study``** (docs/study.md): the study of docs/validation.md's main
tables is ``benchmarks/studies/sparrta_scale.yaml`` (+ ``sparrta_scale_allo.yaml``), one
environment's ego rows ``benchmarks/studies/validation_desert_ego.yaml``. This script keeps the
issue-34 ablation plan and its committed rows; ``to-study`` turns those rows into study
directories (one per training schedule: a study is one protocol) with their leaderboards, so the
old rows and new studies are read by one tool:

    python benchmarks/sparrta_scale.py to-study --out /tmp/legacy     # then: sceneforge study merge ...

The plan's re-run on the new default (issue 46 item 5; planned on 0.6.0, named for 0.7.0's default
since: ego data unchanged, allo with layout quotas) is two study configs, ``STUDIES``
(``benchmarks/studies/default_070.yaml``, ``default_070_allo.yaml``), which ``study --root`` runs
first under ROOT/studies/. The rest of ``PLAN`` stays here: its rows resume by the keys of the
committed rows (a study would not count those as done: their data fingerprints are
``legacy:<dataset>``, and it would re-make hours of rows), and several steps need what a study
config does not say (``--subset-train``: extracting only the first N train rows; per-step layer and
n_train lists on one dataset). docs/validation.md's tables of the committed rows come from the
study leaderboards of ``to-study`` (benchmarks/validation_tables.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from sceneforge.study.leaderboard import SPARRTA_VITB  # SpaRRTa's published numbers: one source

HEADS = ("linear", "abmilp", "efficient")
BACKBONE = "dinov2-s-imgfocus"
# The study's finished rows, committed (result tables, never data): `study` starts from them on a
# new machine, and `report --results` reads them. Rows measured before this file existed (sessions
# 14-15, machine lost) are only in docs/validation.md.
RESULTS = Path(__file__).resolve().parent / "results" / "sparrta_scale.jsonl"


def batch_for(n_train: int) -> int:
    """Head batch: SpaRRTa's 256, but at least 16 steps per epoch on small train sets."""
    return int(min(256, max(32, n_train // 16)))


def done_keys(results: Path) -> set:
    """(kind, name, backbone, layer, n_train) of every finished row."""
    if not results.is_file():
        return set()
    keys = set()
    for line in results.read_text().splitlines():
        r = json.loads(line)
        keys.add((r["kind"], r["name"], r.get("backbone", BACKBONE), r["layer"], r["n_train"]))
    return keys


def run_rows(args) -> None:
    import torch

    from sceneforge.core.errors import ConfigError
    from sceneforge.probing.backbones import create_backbone
    from sceneforge.probing.data import label_ids, load_datasets
    from sceneforge.probing.features import extract_features
    from sceneforge.probing.groups import make_groups
    from sceneforge.probing.layout import layout_baselines
    from sceneforge.probing.selection import run_grids
    from sceneforge.probing.stats import wilson_ci
    from sceneforge.probing.train import ProbeSplits, TrainConfig

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "results.jsonl"
    done = done_keys(results)
    layers = [int(x) for x in args.layers.split(",")]
    sizes = sorted(int(x) for x in args.n_train.split(","))
    bb = None  # built on the first row with work left (a finished study needs no weights)
    for spec in args.row:
        kind_name, data = spec.split("=", 1)
        kind, name = kind_name.split(":", 1)
        todo = [(layer, n) for n in sizes for layer in layers if (kind, name, args.backbone, layer, n) not in done]
        if not todo:
            continue
        try:
            table = load_datasets(data)
        except ConfigError as e:  # not generated (yet): the next run picks it up
            print(f"{kind}:{name}: skipped ({e})", flush=True)
            continue
        if args.subset_train:  # only the first N train rows (and every val/test row) are extracted
            train_rank = (table["split"] == "train").cumsum()
            table = table[(table["split"] != "train") | (train_rank <= args.subset_train)].reset_index(drop=True)
        (group,) = make_groups(table, ("within",))  # one (env, task) per dataset
        bb = bb or create_backbone(args.backbone, None, {})
        t0 = time.perf_counter()
        wanted = sorted(set(layers) | {int(x) for x in args.extract_layers.split(",") if x})
        feats = extract_features(bb, table["path"].tolist(), wanted, args.cache, 64, False)
        print(f"{kind}:{name}: features of {len(table)} images in {time.perf_counter() - t0:.0f} s", flush=True)
        labels = np.asarray(label_ids(table["label"]), dtype=np.int64)
        for layer, n in todo:
            train = group.idx["train"]
            if len(train) < n:
                print(f"{kind}:{name}: only {len(train)} train rows, n_train {n} skipped", flush=True)
                continue
            idx = dict(group.idx, train=train[:n])
            t1 = time.perf_counter()
            layout = {k: b.acc for k, b in layout_baselines(table, idx).items()}
            cfg = TrainConfig(
                epochs=args.epochs, warmup=args.epochs // 5, patience=args.patience, batch_size=batch_for(n), seed=0
            )
            f = feats[layer]
            by_head = run_grids(HEADS, ProbeSplits.from_index(f.patches, f.prefix, labels, idx), cfg)
            n_test = len(idx["test"])
            heads = {}
            for h in HEADS:
                best = next(r for r in by_head[h] if r.selected)
                lo, hi = wilson_ci(best.test_acc, n_test)
                heads[h] = {
                    "test": round(best.test_acc, 4),
                    "ci": [round(lo, 3), round(hi, 3)],
                    "val": round(best.val_acc, 4),
                    "lr": best.lr,
                    "dropout": best.dropout,
                }
            rec = {
                "kind": kind,
                "name": name,
                "data": str(data),
                "env": group.env,
                "task": group.task,
                "backbone": args.backbone,
                "layer": layer,
                "n_train": n,
                "n_val": len(idx["val"]),
                "n_test": n_test,
                "epochs": args.epochs,
                "patience": args.patience,
                "batch_size": cfg.batch_size,
                "heads": heads,
                "layout": {k: round(v, 4) for k, v in layout.items()},
                "seconds": round(time.perf_counter() - t1, 1),
            }
            with results.open("a") as fh:
                fh.write(json.dumps(rec) + "\n")
            print(
                f"{kind}:{name} {args.backbone} L{layer} n={n}: "
                + ", ".join(f"{h} {v['test']:.3f}" for h, v in heads.items())
                + " | layout "
                + ", ".join(f"{k} {v:.3f}" for k, v in layout.items())
                + f" ({rec['seconds']:.0f} s)",
                flush=True,
            )


# The study of docs/validation.md: datasets (sceneforge generate flags; seed 31) and rows in priority order.
ENVS = ("desert", "city", "forest", "winter_town", "bridge")
ENV_ORDER = {e: i for i, e in enumerate(ENVS)}  # table rows in SpaRRTa's environment order
# issue 46 (sceneforge >= 0.6.0): the re-run on the new default (camera_policy decorrelated; 0.7.0's
# allo adds layout quotas, hence the configs' names),
# SpaRRTa's sizes in every environment, is no longer a PLAN step but two `sceneforge study` configs
# (issue 50 item 6), run first by `study` (each its own resumable study directory under ROOT/studies;
# they have no rows in RESULTS, so nothing measured moved):
STUDY_DIR = Path(__file__).resolve().parent / "studies"
STUDIES = (STUDY_DIR / "default_070.yaml", STUDY_DIR / "default_070_allo.yaml")
DATASETS = {
    # sessions 14-17 (sceneforge 0.5.0), on the policies of the time: the default was jitter, so the
    # sets made "with the defaults" name it (their committed rows keep their meaning)
    "desert_ego": "--env desert --task ego --n 5000 --camera-policy jitter",
    "city_ego": "--env city --task ego --n 5000 --camera-policy jitter",
    # issue 34 item 3 (ego): every environment at 5,000 on shortcut-controlled data (source box at chance)
    **{f"{env}_ego_balanced": f"--env {env} --task ego --n 5000 --camera-policy balanced" for env in ENVS},
    # issue 34 item 3 (allo): 10,000 (8,000 train), the default policy of the time (jitter)
    "desert_allo": "--env desert --task allo --n 10000 --camera-policy jitter",
    "city_allo": "--env city --task allo --n 10000 --camera-policy jitter",
    "abl_ego_sparrta": "--env desert --task ego --n 2500 --camera-policy sparrta",
    "abl_ego_balanced": "--env desert --task ego --n 2500 --camera-policy balanced",
    "abl_ego_minbbox24": "--env desert --task ego --n 2500 --min-bbox-px 24 --camera-policy jitter",
    "abl_allo_random": "--env desert --task allo --n 2500 --figure-yaw random --camera-policy jitter",
    "abl_allo_face": "--env desert --task allo --n 2500 --figure-yaw face_source --camera-policy jitter",
}
# the datasets of the env x head tables (a row of any kind on one of them is a cell there)
STUDY_SETS = {f"{env}_ego_balanced" for env in ENVS} | {"desert_allo", "city_allo"}
OTHER_ENVS = [e for e in ENVS if e != "desert"]  # desert's balanced set is the curve of PLAN step 4
ABL_1K = "--layers 9 --n-train 1000 --subset-train 1000"
RANDOM_2K = "--n-train 2000 --subset-train 2000"


def _rows(envs, kind="study", suffix="_ego_balanced") -> str:
    return " ".join(f"--row {kind}:{env}={{{env}{suffix}}}" for env in envs)


PLAN = [  # (datasets it needs, run flags); the issue-46 re-run is STUDIES, run before these
    (["desert_ego"], "--layers 9 --extract-layers 9,12 --n-train 400,1000 --row curve:desert={desert_ego}"),
    (
        ["abl_ego_balanced", "abl_ego_sparrta"],
        ABL_1K + " --row ablation:balanced={abl_ego_balanced} --row ablation:sparrta={abl_ego_sparrta}",
    ),
    (["desert_ego"], "--layers 9 --n-train 2000,4000 --row curve:desert={desert_ego}"),
    # the row that decides issue 34's goal: Efficient at 4,000 on data whose source box is at chance
    (
        ["desert_ego_balanced"],
        "--layers 9,12 --n-train 1000,2000,4000 --row curve:desert_balanced={desert_ego_balanced}",
    ),
    # the probe's training: 300 epochs, patience 40 instead of 100 / 10 (same data, layer and n)
    (
        ["desert_ego_balanced"],
        "--layers 9 --n-train 4000 --epochs 300 --patience 40 --row ablation:balanced_e300_p40={desert_ego_balanced}",
    ),
    (["city_ego"], "--layers 9 --extract-layers 9,12 --n-train 400,1000,2000,4000 --row curve:city={city_ego}"),
    (
        ["abl_ego_minbbox24", "abl_allo_random", "abl_allo_face"],
        ABL_1K + " --row ablation:minbbox24={abl_ego_minbbox24} --row ablation:allo_random={abl_allo_random}"
        " --row ablation:allo_face={abl_allo_face}",
    ),
    # item 3: the other four environments on balanced data, DINOv2-S (layers 9 and 12), 4,000 train
    (
        [f"{env}_ego_balanced" for env in OTHER_ENVS],
        "--layers 9,12 --n-train 4000 " + _rows(OTHER_ENVS),
    ),
    # item 3 with the longer schedule of the training row above (layer 9): the goal's measurement
    (
        [f"{env}_ego_balanced" for env in OTHER_ENVS],
        "--layers 9 --n-train 4000 --epochs 300 --patience 40 " + _rows(OTHER_ENVS, kind="long"),
    ),
    # item 3: the ImageNet CNN control on the same five sets (stage 5, its best layer in the journal)
    (
        [f"{env}_ego_balanced" for env in ENVS],
        "--backbone efficientnet-lite0 --layers 5 --n-train 4000 " + _rows(ENVS),
    ),
    # item 3, allo at 10,000: DINOv2-S and the random-init control (must stay at chance)
    # (one extraction of all 10,000 serves every n: the rows take the first n train rows)
    (["desert_allo"], "--layers 9 --n-train 2000,4000,8000 --row study:desert_allo={desert_allo}"),
    # the random-init control at 2,000 train images (it is at chance whatever n, at a fraction of
    # the cost), on allo and on every environment's ego
    (["desert_allo"], "--backbone vits14-random --layers 9 " + RANDOM_2K + " --row study:desert_allo={desert_allo}"),
    (["desert_ego_balanced"], "--backbone vits14-random --layers 9 " + RANDOM_2K + " " + _rows(["desert"])),
    (["city_allo"], "--layers 9 --n-train 2000,4000,8000 --row study:city_allo={city_allo}"),
    (["city_allo"], "--backbone vits14-random --layers 9 " + RANDOM_2K + " --row study:city_allo={city_allo}"),
    (["city_ego_balanced"], "--backbone vits14-random --layers 9 " + RANDOM_2K + " " + _rows(["city"])),
    (
        [f"{env}_ego_balanced" for env in ENVS[2:]],
        "--backbone vits14-random --layers 9 " + RANDOM_2K + " " + _rows(ENVS[2:]),
    ),
    # allo with the longer schedule of the ego rows (layer 9, 8,000 train): does Efficient catch up?
    (["desert_allo"], "--layers 9 --n-train 8000 --epochs 300 --patience 40 --row long:desert_allo={desert_allo}"),
    (["city_allo"], "--layers 9 --n-train 8000 --epochs 300 --patience 40 --row long:city_allo={city_allo}"),
    (
        ["desert_ego", "city_ego"],
        "--layers 12 --n-train 400,1000,2000,4000 --row curve:desert={desert_ego} --row curve:city={city_ego}",
    ),
]


def _rows_left(flags: str, done: set) -> bool:
    """Whether a PLAN step has a (kind, name, backbone, layer, n_train) row not in ``done``."""
    a = _run_parser().parse_args([*flags.split(), "--out", "-"])
    return any(
        (kind, name, a.backbone, int(layer), int(n)) not in done
        for kind, name in (spec.split("=", 1)[0].split(":", 1) for spec in a.row)
        for layer in a.layers.split(",")
        for n in a.n_train.split(",")
    )


def study(args) -> None:
    """Generate what the next plan step needs (resumes a partial dataset), run the step, repeat.

    The rows already in the repo's RESULTS (committed at the end of each session) count as done, so
    a new machine neither regenerates nor re-probes them: datasets are made only for steps with rows
    left."""
    import shutil
    import subprocess

    root = Path(args.root)
    for config in STUDIES:  # resumable by itself: a finished study only rewrites its leaderboard
        cmd = [sys.executable, "-m", "sceneforge.cli", "study", str(config), "--out", str(root / "studies" / config.stem)]
        print("+", " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    data = {k: str(root / "data" / k) for k in DATASETS}
    results = root / "scale" / "results.jsonl"
    if not results.is_file() and RESULTS.is_file():
        results.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(RESULTS, results)
    for needs, flags in PLAN:
        if not _rows_left(flags.format(**data), done_keys(results)):
            continue
        for name in needs:
            if not (Path(data[name]) / "samples.parquet").is_file():
                cmd = (
                    f"{sys.executable} -m sceneforge.cli generate {DATASETS[name]} --seed 31 --workers 1 --quiet "
                    f"--out {data[name]}"
                ).split()
                print("+", " ".join(cmd), flush=True)
                subprocess.run(cmd, check=True)
        run_rows(
            _run_parser().parse_args(
                [
                    *flags.format(**data).split(),
                    "--out",
                    str(root / "scale"),
                    "--threads",
                    str(args.threads),
                    "--cache",
                    str(root / "cache"),
                ]
            )
        )


def _layout_cells(lay: dict) -> str:
    """The three layout-baseline columns (source box, target box, all boxes), %."""
    return " | ".join(f"{100 * lay.get(k, float('nan')):.1f}" for k in ("source", "target", "boxes"))


def _cell(h: dict) -> str:
    return f"{100 * h['test']:.1f} [{100 * h['ci'][0]:.0f}, {100 * h['ci'][1]:.0f}]"


def report(args) -> None:
    out = Path(args.out)
    src = Path(args.results) if args.results else out / "results.jsonl"
    recs = [json.loads(x) for x in src.read_text().splitlines()]
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for kind in ("curve", "ablation"):
        rows = sorted((r for r in recs if r["kind"] == kind), key=lambda r: (r["name"], r["layer"], r["n_train"]))
        if not rows:
            continue
        lines += [
            f"### {kind}s",
            "",
            "| rows | env/task | layer | n_train | linear | abmilp | efficient | layout: source | target | both |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            lay = r["layout"]
            lines.append(
                f"| {r['name']} | {r['env']}/{r['task']} | L{r['layer']} | {r['n_train']} | "
                + " | ".join(_cell(r["heads"][h]) for h in HEADS)
                + f" | {_layout_cells(lay)} |"
            )
        lines.append("")
    lines += study_table(recs)
    text = "\n".join(lines)
    (out / "scale.md").write_text(text)
    print(text)
    if args.plot:
        plot_curves([r for r in recs if r["kind"] == "curve"], Path(args.plot))


def _prefer(r: dict) -> tuple:
    """Which row of a study-table cell to show: the largest n_train (the issue-46 sets are STUDIES':
    their leaderboards report them)."""
    return (r["n_train"],)


def study_table(recs: list[dict]) -> list[str]:
    """Issue 34 item 3: env x head at the largest n_train of each study set, per backbone, layer
    and training schedule (epochs / patience), with the five-environment ego mean and SpaRRTa's
    published ViT-B numbers beside it."""
    best: dict = {}
    for r in recs:
        if Path(r["data"]).name not in STUDY_SETS:
            continue
        key = (r["task"], r.get("backbone", BACKBONE), r["layer"], r["epochs"], r["patience"], r["env"])
        if key not in best or _prefer(r) > _prefer(best[key]):
            best[key] = r
    if not best:
        return []
    lines = [
        "### study (issue 34 item 3): env x head, largest n_train",
        "",
        "| task | backbone | layer | epochs / patience | env | n_train | linear | abmilp | efficient "
        "| layout: source | target | both | SpaRRTa ViT-B lin / abmilp / eff |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = sorted({k[:5] for k in best}, key=lambda k: (k[0] != "ego", k[1] != BACKBONE, k[1], k[3], k[2]))
    for task, backbone, layer, epochs, patience in groups:
        rows = sorted(
            (r for k, r in best.items() if k[:5] == (task, backbone, layer, epochs, patience)),
            key=lambda r: ENV_ORDER.get(r["env"], 9),
        )
        sched = f"{epochs} / {patience}"
        for r in rows:
            lay = r["layout"]
            ref = SPARRTA_VITB.get((r["env"], task)) or SPARRTA_VITB.get(("mean", task))
            lines.append(
                f"| {task} | {backbone} | L{layer} | {sched} | {r['env']} | {r['n_train']} | "
                + " | ".join(_cell(r["heads"][h]) for h in HEADS)
                + f" | {_layout_cells(lay)} | {' / '.join(f'{x:.1f}' for x in ref)} |"
            )
        if len(rows) > 1:
            mean = {h: 100 * float(np.mean([r["heads"][h]["test"] for r in rows])) for h in HEADS}
            src = 100 * float(np.mean([r["layout"].get("source", np.nan) for r in rows]))
            lines.append(
                f"| {task} | {backbone} | L{layer} | {sched} | **mean of {len(rows)}** | | "
                + " | ".join(f"**{mean[h]:.1f}**" for h in HEADS)
                + f" | {src:.1f} | | | |"
            )
    lines += _layer_on_val(best)
    lines.append("")
    return lines + _study_every_n(recs)


def _study_every_n(recs: list[dict]) -> list[str]:
    """Study-set rows measured at several n_train (allo's 2,000 / 4,000 / 8,000): how far from
    saturated the largest n is."""
    groups: dict = {}
    for r in recs:
        if Path(r["data"]).name in STUDY_SETS:
            key = (r["task"], r["env"], r.get("backbone", BACKBONE), r["layer"], r["epochs"], r["patience"])
            groups.setdefault(key, []).append(r)
    many = {k: sorted(v, key=lambda r: r["n_train"]) for k, v in groups.items() if len({r["n_train"] for r in v}) > 1}
    if not many:
        return []
    lines = [
        "### study sets at every n_train",
        "",
        "| task | env | backbone | layer | epochs / patience | n_train | linear | abmilp | efficient "
        "| layout: source | target | both |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (task, env, backbone, layer, epochs, patience), rows in sorted(
        many.items(), key=lambda kv: (kv[0][0] != "ego", ENV_ORDER.get(kv[0][1], 9), kv[0][2:])
    ):
        for r in rows:
            lines.append(
                f"| {task} | {env} | {backbone} | L{layer} | {epochs} / {patience} | {r['n_train']} | "
                + " | ".join(_cell(r["heads"][h]) for h in HEADS)
                + f" | {_layout_cells(r['layout'])} |"
            )
    return lines + [""]


def _layer_on_val(best: dict) -> list[str]:
    """Rows with each head's layer chosen on val (per environment), where a backbone and schedule
    has more than one layer: the fair single number when layers disagree across environments."""
    lines = []
    for task, backbone, epochs, patience in sorted({(k[0], k[1], k[3], k[4]) for k in best}):
        cands = [r for k, r in best.items() if (k[0], k[1], k[3], k[4]) == (task, backbone, epochs, patience)]
        envs = sorted({r["env"] for r in cands}, key=lambda e: ENV_ORDER.get(e, 9))
        if len({r["layer"] for r in cands}) < 2:
            continue
        tests: dict = {h: [] for h in HEADS}
        for env in envs:
            rows = [r for r in cands if r["env"] == env]
            picked = {h: max(rows, key=lambda r: (r["heads"][h]["val"], -r["layer"])) for h in HEADS}
            for h in HEADS:
                tests[h].append(picked[h]["heads"][h]["test"])
            lines.append(
                f"| {task} | {backbone} | on val | {epochs} / {patience} | {env} | {rows[0]['n_train']} | "
                + " | ".join(f"{_cell(picked[h]['heads'][h])} L{picked[h]['layer']}" for h in HEADS)
                + " | | | | |"
            )
        if len(envs) > 1:
            lines.append(
                f"| {task} | {backbone} | on val | {epochs} / {patience} | **mean of {len(envs)}** | | "
                + " | ".join(f"**{100 * float(np.mean(tests[h])):.1f}**" for h in HEADS)
                + " | | | | |"
            )
    return lines


def plot_curves(recs: list[dict], path: Path) -> None:
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = sorted({r["name"] for r in recs})
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 4.2), squeeze=False, sharey=True)
    for ax, name in zip(axes[0], names):
        rows = [r for r in recs if r["name"] == name]
        for layer, style in zip(sorted({r["layer"] for r in rows}), ("-", "--", ":")):
            rl = sorted((r for r in rows if r["layer"] == layer), key=lambda r: r["n_train"])
            n = [r["n_train"] for r in rl]
            for h, colour in zip(HEADS, ("tab:blue", "tab:orange", "tab:green")):
                acc = [r["heads"][h]["test"] for r in rl]
                lo = [r["heads"][h]["ci"][0] for r in rl]
                hi = [r["heads"][h]["ci"][1] for r in rl]
                ax.plot(n, acc, style, color=colour, marker="o", ms=3, label=f"{h} L{layer}")
                if style == "-":
                    ax.fill_between(n, lo, hi, color=colour, alpha=0.12)
        first = sorted({r["layer"] for r in rows})[0]
        rl = sorted((r for r in rows if r["layer"] == first), key=lambda r: r["n_train"])
        for k, colour in (("source", "grey"), ("boxes", "black")):
            ax.plot(
                [r["n_train"] for r in rl],
                [r["layout"].get(k, np.nan) for r in rl],
                "-.",
                color=colour,
                label=f"layout: {'source box' if k == 'source' else 'both boxes'}",
            )
        ax.axhline(0.25, color="red", lw=0.8, ls=":", label="chance")
        ax.set_xscale("log")
        ax.set_xticks([400, 1000, 2000, 4000], ["400", "1k", "2k", "4k"])
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_title(f"{name} ego, DINOv2-S")
        ax.set_xlabel("train images")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("test accuracy")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def to_study(args) -> None:
    """The committed rows (or ``--results``) as ``sceneforge study`` directories under ``--out``:
    one per (epochs, patience) schedule, rows in the study's format (kind model / random / layout;
    the layout floors of each dataset and n_train once), a study.json recording the protocol, and
    the leaderboard. Data fingerprints are not known for these rows (the images are on a lost
    machine): they say ``legacy:<dataset>``, so a new study's rows never merge with them silently."""
    from sceneforge.probing.stats import wilson_ci
    from sceneforge.study.config import StudyConfig
    from sceneforge.study.leaderboard import write_leaderboard
    from sceneforge.study.results import FORMAT, append_row, row_key, sort_key, versions, write_header

    src = Path(args.results) if args.results else RESULTS
    recs = [json.loads(x) for x in src.read_text().splitlines()]
    by_schedule: dict = {}
    for r in recs:
        by_schedule.setdefault((r["epochs"], r["patience"]), []).append(r)
    for (epochs, patience), group in sorted(by_schedule.items()):
        cfg = StudyConfig.from_dict(
            {"backbones": [{"backbone": BACKBONE}], "datasets": ["legacy"], "epochs": epochs, "patience": patience}, str(src)
        )
        protocol = dict(cfg.protocol(), batch_size="min(256, max(32, n_train // 16))", source=f"{src.name} (sparrta_scale.py)")
        fp = cfg.protocol_fingerprint()
        out = Path(args.out) / f"e{epochs}_p{patience}"
        out.mkdir(parents=True, exist_ok=True)
        rows: dict = {}
        for r in group:
            dataset = Path(r["data"]).name
            base = {
                "format": FORMAT,
                "dataset": dataset,
                "env": r["env"],
                "task": r["task"],
                "n_train": r["n_train"],
                "n_val": r["n_val"],
                "n_test": r["n_test"],
                "data_fingerprint": f"legacy:{dataset}",
                "protocol": fp,
            }
            backbone = r.get("backbone", BACKBONE)
            heads = {h: dict(c) for h, c in r["heads"].items()}
            model = dict(
                base, kind="random" if "random" in backbone else "model", backbone=backbone, layer=r["layer"], heads=heads
            )
            model.update(device="cpu", precision="fp32", spec=backbone)
            rows.setdefault(row_key(model), model)
            n_test = r["n_test"]
            lay = {k: {"test": v, "ci": [round(x, 4) for x in wilson_ci(v, n_test)]} for k, v in r["layout"].items()}
            layout = dict(base, kind="layout", backbone="layout", layer=0, heads=lay, device="cpu", precision="fp64")
            rows.setdefault(row_key(layout), layout)
        (out / "results.jsonl").unlink(missing_ok=True)
        for row in sorted(rows.values(), key=sort_key):
            append_row(out / "results.jsonl", row)
        datasets = {r["dataset"]: {"dir": None, "fingerprint": r["data_fingerprint"]} for r in rows.values()}
        header = {
            "format": FORMAT,
            "protocol": protocol,
            "protocol_fingerprint": fp,
            "versions": versions(),
            "device": "cpu (2 shared cores; sessions 16-17)",
            "datasets": datasets,
            "converted_from": str(src),
        }
        write_header(out, header)
        write_leaderboard(out)


def _run_parser(r: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    r = r or argparse.ArgumentParser()
    r.add_argument("--out", required=True)
    r.add_argument("--row", action="append", required=True, help="KIND:NAME=DATASET_DIR (kind: curve or ablation)")
    r.add_argument("--backbone", default=BACKBONE, help="a probing preset (sceneforge weights list)")
    r.add_argument("--layers", default="9,12")
    r.add_argument("--n-train", default="400,1000,2000,4000")
    r.add_argument("--extract-layers", default="", help="also cache these layers in the same forward pass")
    r.add_argument(
        "--subset-train",
        type=int,
        default=0,
        help="use (and extract) only the first N train rows of each dataset (val/test: all)",
    )
    r.add_argument("--epochs", type=int, default=100)
    r.add_argument("--patience", type=int, default=10)
    r.add_argument("--threads", type=int, default=2)
    r.add_argument("--cache", default=None, help="feature cache (default OUT/../cache)")
    return r


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    _run_parser(sub.add_parser("run", help="train the rows not in OUT/results.jsonl yet"))
    st = sub.add_parser("study", help="the whole study of docs/validation.md, resumable")
    st.add_argument("--root", required=True, help="data/, cache/ and scale/ go here (not in the repo)")
    st.add_argument("--threads", type=int, default=2)
    p = sub.add_parser("report", help="OUT/scale.md tables (and a curves plot)")
    p.add_argument("--out", required=True)
    p.add_argument(
        "--results",
        default=None,
        help=f"rows to report (default OUT/results.jsonl; the committed: {RESULTS.relative_to(RESULTS.parents[2])})",
    )
    p.add_argument("--plot", default=None)
    t = sub.add_parser("to-study", help="the committed rows as `sceneforge study` directories with leaderboards")
    t.add_argument("--out", required=True, help="one study directory per training schedule goes here")
    t.add_argument("--results", default=None, help="rows to convert (default: the committed ones)")
    args = ap.parse_args(argv)
    if args.cmd == "run":
        args.cache = args.cache or str(Path(args.out).parent / "cache")
        run_rows(args)
    elif args.cmd == "study":
        study(args)
    elif args.cmd == "to-study":
        to_study(args)
    else:
        report(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
