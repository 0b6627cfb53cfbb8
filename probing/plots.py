"""Report figures (PNG, matplotlib Agg): accuracy vs layer, ego vs allo, per env, confusion
matrices, and attention maps of the best AbMILP / Efficient heads over sample test images
(the view SpaRRTa uses to show which objects a probe looks at)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.ticker import MaxNLocator

from sceneforge.core.atomic import atomic_write_bytes
from sceneforge.probing.data import CLASSES

log = logging.getLogger(__name__)


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    _plt().close(fig)
    atomic_write_bytes(path, buf.getvalue())
    return path


def make_all(runs: pd.DataFrame, summary: pd.DataFrame, root: Path, out: Path) -> list[tuple[str, Path]]:
    """Every figure that the data supports; returns (title, path) pairs for the HTML page."""
    within = summary[summary["protocol"] == "within"]
    figs = [
        ("Accuracy vs layer (per head)", acc_vs_layer(within if len(within) else summary, out / "acc_vs_layer.png")),
        ("Egocentric vs allocentric", ego_vs_allo(within if len(within) else summary, out / "ego_vs_allo.png")),
        ("Per environment", per_env(summary, out / "per_env.png")),
        ("Confusion matrices (selected heads, best layer)", confusions(runs, summary, out / "confusion.png")),
    ]
    attn = attention_maps(root, out / "attention.png")
    if attn is not None:
        figs.append(("Attention maps of the best AbMILP / Efficient heads", attn))
    flows = sorted(root.rglob("attention_flow.json"))
    if flows:
        figs.append(
            ("Attention flow between objects per layer (SpaRRTa mechanism 2)", attention_flow(flows, out / "attention_flow.png"))
        )
    return figs


def _backbones(summary: pd.DataFrame) -> str:
    return ", ".join(sorted(map(str, summary["backbone"].unique())))


def attention_flow(files: list[Path], path: Path) -> Path:
    """One row per backbone, one panel per query object: share of its attention per sink vs layer."""
    import json

    plt = _plt()
    flows = [json.loads(f.read_text()) for f in files]
    roles = ("source", "target", "viewpoint")
    fig, axes = plt.subplots(len(flows), 3, figsize=(14, 3.4 * len(flows)), squeeze=False)
    for row, flow in zip(axes, flows):
        for ax, role in zip(row, roles):
            shares = np.asarray(flow["roles"][role], dtype=float)  # (layers, sinks)
            for j, sink in enumerate(flow["sinks"]):
                if sink == role or np.all(np.isnan(shares[:, j])) or np.nanmax(shares[:, j]) == 0:
                    continue
                ax.plot(
                    flow["layers"], shares[:, j], marker="o", ms=3, label=sink, color=f"C{j}"
                )  # one colour per sink across all panels
            ax.set(
                title=f"{flow['backbone']}: from {role} patches ({flow['images']} images)",
                xlabel="layer",
                ylabel="share of attention",
                ylim=(0, 1),
            )
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, path)


def _label(row, multi_backbone: bool) -> str:
    return f"{row['backbone']} {row['head']}"


def acc_vs_layer(summary: pd.DataFrame, path: Path) -> Path:
    """Test accuracy (mean over envs) vs layer; one line per head, one panel per task."""
    return _save(acc_vs_layer_figure(summary), path)


def layer_axis(ax, layers) -> None:
    """x ticks at the layers probed, no others; one layer gets a window of ±1 around it (matplotlib
    autoscaled a single point to ticks 8.6 ... 9.4: layers that do not exist, issue 47)."""
    layers = sorted({int(v) for v in layers})
    ax.set_xticks(layers, [str(v) for v in layers])
    if len(layers) == 1:
        ax.set_xlim(layers[0] - 1, layers[0] + 1)


def acc_vs_layer_figure(summary: pd.DataFrame):
    """The figure of :func:`acc_vs_layer` (tests read its axes)."""
    plt = _plt()
    tasks = sorted(summary["task"].unique())
    fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 3.6), squeeze=False)
    multi = summary["backbone"].nunique() > 1
    for ax, task in zip(axes[0], tasks):
        t = summary[summary["task"] == task].groupby(["backbone", "head", "layer"])["test_mean"].mean().reset_index()
        for (bb, head), g in t.groupby(["backbone", "head"]):
            ax.plot(g["layer"], g["test_mean"], marker="o", label=_label({"backbone": bb, "head": head}, multi))
        ax.axhline(0.25, color="grey", ls=":", lw=1)
        # several backbones: named once above the panels (each line's label names its own too)
        ax.set(
            title=f"task {task}" if multi else f"{_backbones(summary)} · task {task}",
            xlabel="layer",
            ylabel="test accuracy",
            ylim=(0, 1),
        )
        layer_axis(ax, t["layer"])
        ax.legend(fontsize=8)
    if multi:
        fig.suptitle(f"test accuracy vs layer: {_backbones(summary)}", fontsize=10)
        fig.tight_layout()
    return fig


def _best_layer(summary: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Per group, the layer with the highest test_mean averaged over the other keys."""
    mean = summary.groupby(by + ["layer"])["test_mean"].mean().reset_index()
    return mean.loc[mean.groupby(by)["test_mean"].idxmax()].reset_index(drop=True)


def _bars(ax, table: pd.DataFrame, groups: list[str], series: list[str], col: str) -> None:
    width = 0.8 / max(1, len(series))
    for i, s in enumerate(series):
        vals = [table.get((g, s), np.nan) for g in groups]
        ax.bar(np.arange(len(groups)) + i * width, vals, width, label=str(s))
    ax.set_xticks(np.arange(len(groups)) + width * (len(series) - 1) / 2, [str(g) for g in groups])
    ax.axhline(0.25, color="grey", ls=":", lw=1)
    ax.set(ylim=(0, 1), ylabel=col)
    ax.legend(fontsize=8)


def ego_vs_allo(summary: pd.DataFrame, path: Path) -> Path:
    """Best-layer test accuracy per head, one bar per task (ego / allo), mean over envs."""
    plt = _plt()
    summary = summary.assign(series=summary["backbone"].astype(str) + " " + summary["head"].astype(str))
    best = _best_layer(summary, ["series", "task"]).set_index(["series", "task"])["test_mean"]
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * summary["series"].nunique()), 3.6))
    _bars(ax, best, sorted(summary["series"].unique()), sorted(summary["task"].unique()), "test accuracy")
    ax.tick_params(axis="x", labelsize=7, rotation=20)
    ax.set_title(f"{_backbones(summary)}: best layer per head and task")
    return _save(fig, path)


def per_env(summary: pd.DataFrame, path: Path) -> Path:
    """Best-layer test accuracy per env and head; one panel per protocol × task."""
    plt = _plt()
    panels = sorted(summary.groupby(["protocol", "task"]).groups)
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 3.6), squeeze=False)
    for ax, (protocol, task) in zip(axes[0], panels):
        s = summary[(summary["protocol"] == protocol) & (summary["task"] == task)]
        s = s.assign(series=s["backbone"].astype(str) + " " + s["head"].astype(str))
        best = _best_layer(s, ["env", "series"]).set_index(["env", "series"])["test_mean"]
        _bars(ax, best, sorted(s["env"].unique()), sorted(s["series"].unique()), "test accuracy")
        ax.set_title(f"{_backbones(s)}: {protocol} · task {task}" + (" (held-out env)" if protocol == "loeo" else ""))
    return _save(fig, path)


def confusions(runs: pd.DataFrame, summary: pd.DataFrame, path: Path) -> Path:
    """Summed confusion matrices of the selected runs at each head's best layer, per task."""
    plt = _plt()
    within = summary[summary["protocol"] == summary["protocol"].iloc[0]]
    best = _best_layer(within, ["backbone", "head", "task"])
    fig, axes = plt.subplots(1, len(best), figsize=(3.4 * len(best), 3.4), squeeze=False)
    for i, (ax, (_, b)) in enumerate(zip(axes[0], best.iterrows())):
        sel = runs[
            runs["selected"]
            & (runs["backbone"] == b["backbone"])
            & (runs["head"] == b["head"])
            & (runs["task"] == b["task"])
            & (runs["layer"] == b["layer"])
            & (runs["protocol"] == within["protocol"].iloc[0])
        ]
        conf = np.sum([np.asarray(c) for c in sel["confusion"]], axis=0)
        ax.imshow(conf, cmap="Blues")
        for (i, j), v in np.ndenumerate(conf):
            ax.text(j, i, str(int(v)), ha="center", va="center", fontsize=8)
        ax.set_xticks(range(len(CLASSES)), CLASSES, rotation=45, fontsize=7)
        ax.set_yticks(range(len(CLASSES)), CLASSES, fontsize=7)
        ax.set(
            title=f"{b['backbone']}\n{b['head']} L{b['layer']} {b['task']}", xlabel="predicted", ylabel="true" if i == 0 else ""
        )
    fig.tight_layout()
    return _save(fig, path)


def attention_maps(root: Path, path: Path, max_images: int = 4) -> Path | None:
    """Overlay the best (highest test acc) AbMILP and Efficient maps on their sample images."""
    best: dict[str, tuple[float, Path]] = {}
    for f in root.rglob("attention/*.npz"):
        d = np.load(f)
        head = f"{d['backbone']} {f.name.split('_L')[0]}" if "backbone" in d.files else f.name.split("_L")[0]
        acc = float(d["test_acc"])
        if head not in best or acc > best[head][0]:
            best[head] = (acc, f)
    if not best:
        return None
    loaded = [(h, np.load(best[h][1])) for h in sorted(best)]
    n = min(max_images, min(len(d["paths"]) for _, d in loaded))
    cols = sum(1 + d["maps"].shape[1] for _, d in loaded)
    plt = _plt()
    fig, axes = plt.subplots(n, cols, figsize=(2.2 * cols, 2.2 * n), squeeze=False)
    for i in range(n):
        _draw_row(axes[i], loaded, i)
    return _save(fig, path)


def _draw_row(axes, loaded, i: int) -> None:
    """For each head: its i-th sample image, then one overlay per query."""
    from PIL import Image

    col = 0
    for head, d in loaded:
        with Image.open(str(d["paths"][i])) as im:
            img = np.asarray(im.convert("RGB"))
        h, w = img.shape[:2]
        axes[col].imshow(img)
        axes[col].set_title(f"{head}\ntrue {CLASSES[int(d['labels'][i])]}", fontsize=7)
        col += 1
        for q in range(d["maps"].shape[1]):
            axes[col].imshow(img)
            axes[col].imshow(d["maps"][i, q], cmap="jet", alpha=0.5, extent=(0, w, h, 0), interpolation="bilinear")
            tag = "map" if d["maps"].shape[1] == 1 else f"query {q}"
            axes[col].set_title(f"{tag} → {CLASSES[int(d['preds'][i])]}", fontsize=8)
            col += 1
    for ax in axes:
        ax.axis("off")
