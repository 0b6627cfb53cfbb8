"""A study's rows as a leaderboard: ``leaderboard.csv`` (one row per backbone × env × task × layer
× head × n_train), ``leaderboard.md`` (env × head tables with the mean of environments and
SpaRRTa's published ViT-B numbers), ``plots/`` and ``leaderboard.html`` (one file, opens offline:
sortable columns, a filter, every cell linked to its run's probe report).

CSV columns a script may rely on: ``backbone``, ``kind`` (model / random / layout), ``env``,
``task``, ``layer``, ``head``, ``n_train``, ``test_acc``, ``ci_low``, ``ci_high`` (95% Wilson);
also ``val_acc``, ``lr``, ``dropout``, ``n_val``, ``n_test``, ``layer_on_val`` (1 where this
layer is the one the head picks on val for its backbone × env × task × n_train), ``sparrta_vitb``
(SpaRRTa's DINO-v2 ViT-B/14 at 4,000, where published), ``dataset``, ``device``, ``precision``,
``data_fingerprint``, ``protocol``, ``report`` (the run report, relative to the folder) and,
appended last so that no column before it moved, ``train_device`` (where the heads trained;
``device`` is where the features were extracted). A layout row's ``head`` is the box set
(source, target, boxes) and its ``layer`` 0.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from sceneforge.core.atomic import atomic_write_text
from sceneforge.study.results import HEADER, RESULTS, read_header, read_rows, run_id, sort_key

# SpaRRTa's published DINO-v2 ViT-B/14 numbers at 4,000 train images (gmum/SpaRRTa docs/results.md):
# (linear, abmilp, efficient); allo: the mean over its environments
SPARRTA_VITB = {
    ("forest", "ego"): (59.91, 86.36, 91.91),
    ("desert", "ego"): (64.57, 90.64, 93.94),
    ("winter_town", "ego"): (58.03, 88.41, 93.26),
    ("bridge", "ego"): (66.69, 89.63, 93.75),
    ("city", "ego"): (53.24, 85.31, 93.00),
    ("mean", "allo"): (47.90, 65.91, 71.20),
}
SPARRTA_HEADS = ("linear", "abmilp", "efficient")
ENV_ORDER = {e: i for i, e in enumerate(("desert", "city", "forest", "winter_town", "bridge"))}  # SpaRRTa's order
LAYOUT_NAMES = {"source": "source box", "target": "target box", "boxes": "all boxes", "figure": "figure box"}
COLUMNS = [
    "backbone",
    "kind",
    "env",
    "task",
    "layer",
    "head",
    "n_train",
    "test_acc",
    "ci_low",
    "ci_high",
    "val_acc",
    "lr",
    "dropout",
    "n_val",
    "n_test",
    "layer_on_val",
    "sparrta_vitb",
    "dataset",
    "device",
    "precision",
    "data_fingerprint",
    "protocol",
    "report",
    "train_device",  # appended (0.6): the columns before it are the ones scripts rely on, in their order
]


def sparrta_reference(env: str, task: str, head: str) -> float | None:
    ref = SPARRTA_VITB.get((env, task)) or SPARRTA_VITB.get(("mean", task))
    if ref is None or head not in SPARRTA_HEADS:
        return None
    return round(ref[SPARRTA_HEADS.index(head)] / 100, 4)


def table(rows: list[dict], out: Path | None = None) -> pd.DataFrame:
    """The leaderboard as a frame, one row per (row, head), sorted; ``report`` only where the run
    directory exists under ``out``."""
    recs = []
    for r in sorted(rows, key=sort_key):
        report = f"runs/{run_id(r)}/report.html"
        has_report = out is None or (Path(out) / report).is_file()
        for head in _heads(r["heads"]):
            c = r["heads"][head]
            recs.append(
                {
                    "backbone": r["backbone"],
                    "kind": r["kind"],
                    "env": r["env"],
                    "task": r["task"],
                    "layer": r["layer"],
                    "head": head,
                    "n_train": r["n_train"],
                    "test_acc": c["test"],
                    "ci_low": c["ci"][0],
                    "ci_high": c["ci"][1],
                    "val_acc": c.get("val"),
                    "lr": c.get("lr"),
                    "dropout": c.get("dropout"),
                    "n_val": r["n_val"],
                    "n_test": r["n_test"],
                    "layer_on_val": 0,
                    "sparrta_vitb": None if r["kind"] == "layout" else sparrta_reference(r["env"], r["task"], head),
                    "dataset": r["dataset"],
                    "device": r.get("device", ""),
                    "precision": r.get("precision", ""),
                    "data_fingerprint": r["data_fingerprint"],
                    "protocol": r["protocol"],
                    "report": report if has_report and r["kind"] != "layout" else "",
                    # rows written before heads could move trained them on the CPU
                    "train_device": r.get("train_device", "cpu"),
                }
            )
    df = pd.DataFrame(recs, columns=COLUMNS)
    if df.empty:
        return df
    probes = df[df["kind"] != "layout"]
    if not probes.empty:  # the layer each head picks on val (ties: the shallower one)
        ranked = probes.assign(_neg=-probes["layer"]).sort_values(["val_acc", "_neg"], ascending=False, kind="stable")
        picked = ranked.groupby(["backbone", "dataset", "env", "task", "head", "n_train"], sort=False).head(1).index
        df.loc[picked, "layer_on_val"] = 1
    return df


def _heads(values) -> list[str]:
    """Heads in SpaRRTa's order (linear, abmilp, efficient), then any other."""
    names = list(dict.fromkeys(values))
    return sorted(names, key=lambda h: (SPARRTA_HEADS.index(h) if h in SPARRTA_HEADS else 9, h))


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _md_cell(r) -> str:
    text = f"{_pct(r.test_acc)} ({100 * r.ci_low:.0f}–{100 * r.ci_high:.0f})"
    return f"[{text}]({r.report})" if r.report else text


def markdown(df: pd.DataFrame, header: dict) -> str:
    """Per task and head: one line per backbone × layer × n_train, one column per environment,
    the mean of environments and SpaRRTa's ViT-B; the layout floors under each table."""
    lines = ["# Study leaderboard", ""]
    proto = header.get("protocol", {})
    lines += [
        f"Protocol `{header.get('protocol_fingerprint', '?')}`: heads {', '.join(proto.get('heads', []))}; "
        f"lr {proto.get('lrs')} × dropout {proto.get('dropouts')}; {proto.get('epochs')} epochs "
        f"(warm-up {proto.get('warmup')}), patience {proto.get('patience')}; {proto.get('selection', '')}. "
        f"Cells: test accuracy % (95% Wilson CI), linked to the run's report. {_upper_first(device_text(df, header))}. "
        f"sceneforge {header.get('versions', {}).get('sceneforge', '?')}, torch {header.get('versions', {}).get('torch', '?')}.",
        "",
    ]
    if df.empty:
        return "\n".join(lines + ["(no rows yet)", ""])
    envs = sorted(df["env"].unique(), key=lambda e: (ENV_ORDER.get(e, 99), e))
    for task in sorted(df["task"].unique(), key=lambda t: (t != "ego", t)):
        t = df[df["task"] == task]
        env_t = [e for e in envs if e in set(t["env"])]
        lay = t[t["kind"] == "layout"]
        for head in _heads(t.loc[t["kind"] != "layout", "head"]):
            h = t[(t["head"] == head) & (t["kind"] != "layout")]
            lines += [f"## {task} · {head}", ""]
            cols = ["backbone", "kind", "layer", "n_train", *env_t, "mean of envs", "SpaRRTa ViT-B"]
            lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            for (bb, kind, layer, n), g in h.groupby(["backbone", "kind", "layer", "n_train"], sort=False):
                by_env = {r.env: r for r in g.itertuples()}
                cells = [_md_cell(by_env[e]) if e in by_env else "" for e in env_t]
                mean = _pct(np.mean([by_env[e].test_acc for e in env_t])) if all(e in by_env for e in env_t) else ""
                refs = [sparrta_reference(e, task, head) for e in env_t]
                ref = _pct(np.mean(refs)) if refs and all(x is not None for x in refs) else ""
                mean = f"**{mean}**" if mean else ""  # a row missing an env (a study still running): no mean, no empty bold
                lines.append(f"| {bb} | {kind} | L{layer} | {n} | " + " | ".join(cells) + f" | {mean} | {ref} |")
            for (box, n), g in lay.groupby(["head", "n_train"], sort=False):
                by_env = {r.env: r for r in g.itertuples()}
                cells = [_md_cell(by_env[e]) if e in by_env else "" for e in env_t]
                mean = _pct(np.mean([by_env[e].test_acc for e in env_t])) if all(e in by_env for e in env_t) else ""
                lines.append(f"| layout: {LAYOUT_NAMES.get(box, box)} | layout | | {n} | " + " | ".join(cells) + f" | {mean} | |")
            lines.append("")
    return "\n".join(lines)


def _best(df: pd.DataFrame) -> pd.DataFrame:
    """Per backbone × env × task × head: the largest n_train, the layer chosen on val."""
    probes = df[(df["kind"] != "layout") & (df["layer_on_val"] == 1)]
    if probes.empty:
        return probes
    top = probes.groupby(["backbone", "env", "task"])["n_train"].transform("max")
    return probes[probes["n_train"] == top]


def device_text(df: pd.DataFrame, header: dict) -> str:
    """Where the numbers came from, for titles and the md/html header: ``features on cpu (2
    threads), heads on cpu (2 threads)``. The header names the hardware of the last run; a table
    whose rows came from several devices (a merge) names every device kind the rows record."""
    probes = df[df["kind"] != "layout"] if not df.empty else df
    feat = str(header.get("device") or "?")
    heads = header.get("train_device")
    kinds_f = sorted(set(probes["device"].dropna().astype(str)) - {""}) if not probes.empty else []
    kinds_t = sorted(set(probes["train_device"].dropna().astype(str)) - {""}) if not probes.empty else []
    if heads is None:  # a study written before heads could move: its rows say (cpu)
        same = kinds_t and all(feat.startswith(k) for k in kinds_t)
        heads = feat if same else (", ".join(kinds_t) or "cpu")
    if len(kinds_f) > 1:
        feat = ", ".join(kinds_f)
    if len(kinds_t) > 1:
        heads = ", ".join(kinds_t)
    return f"features on {feat}, heads on {heads}"


def _upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


# the layout floors as the figures draw them: (box set, label, colour, line style); chance last
FLOORS = (
    ("source", "floor: source box", "#616161", "--"),
    ("target", "floor: target box", "#e65100", "-."),
    ("boxes", "floor: all boxes", "#6a1b9a", ":"),
    ("figure", "floor: figure box", "#00897b", (0, (5, 1, 1, 1))),  # allo only
)
BAR_COLOURS = ("#1565c0", "#2e7d32", "#00838f", "#8d6e63", "#c0ca33", "#ad1457", "#5c6bc0", "#6d4c41")


def floor_label(box: str, task: str, figure_tasks: set[str]) -> str:
    """The legend name of a floor; on allo the all-boxes set includes the figure (``human``)."""
    label = next(lbl for b, lbl, _, _ in FLOORS if b == box)
    return label + " + figure" if box == "boxes" and task in figure_tasks else label


def floors(df: pd.DataFrame, task: str) -> pd.DataFrame:
    """The layout floors of ``task``: env × box set → test accuracy at the largest n_train (the
    bars' train size); ``.mean()`` of it is the mean of environments."""
    lay = df[(df["kind"] == "layout") & (df["task"] == task)]
    if lay.empty:
        return pd.DataFrame()
    lay = lay[lay["n_train"] == lay.groupby("env")["n_train"].transform("max")]
    return lay.pivot_table(index="env", columns="head", values="test_acc", aggfunc="mean")


def plots(df: pd.DataFrame, out: Path, device: str, figure_tasks: set[str] = frozenset()) -> list[tuple[str, str]]:
    """plots/*.png (:func:`figures`); returns (title, path relative to ``out``) of each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    saved = []
    for title, name, fig in figures(df, device, figure_tasks):
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        saved.append((title, name))
    return saved


def figures(df: pd.DataFrame, device: str, figure_tasks: set[str] = frozenset()) -> list[tuple[str, str, object]]:
    """The figures as (title, plots/<file>.png, matplotlib figure): per-env bars with CIs (one
    figure per task) with every layout floor of each cell (source box, target box, all boxes —
    with the figure on allo — and chance) as labelled lines, ego vs allo with the floors as
    reference lines, and layer curves with the floors. Why every floor: on desert ego the target
    box alone gives 0.84, above every model bar; a chart with the source box only hid that.
    Every title says where the features were extracted and the heads trained (``device``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.ticker import MaxNLocator

    figs: list[tuple[str, str, object]] = []
    best = _best(df)
    if best.empty:
        return figs
    heads = _heads(best["head"])
    chance = Line2D([], [], color="#b71c1c", lw=0.8, ls=(0, (1, 2)), label="chance (4 classes)")
    for task in sorted(best["task"].unique(), key=lambda t: (t != "ego", t)):
        b = best[best["task"] == task]
        envs = sorted(b["env"].unique(), key=lambda e: (ENV_ORDER.get(e, 99), e))
        bbs = list(dict.fromkeys(b.sort_values(["kind", "backbone"])["backbone"]))
        kind_of = dict(zip(b["backbone"], b["kind"]))
        fl = floors(df, task)
        fig, axes = plt.subplots(1, len(heads), figsize=(max(4.8, 1.2 + 1.6 * len(envs)) * len(heads), 4.4), squeeze=False)
        width = 0.8 / max(1, len(bbs))
        handles: dict[str, object] = {}
        for ax, head in zip(axes[0], heads):
            for k, bb in enumerate(bbs):
                rows = b[(b["head"] == head) & (b["backbone"] == bb)].set_index("env")
                have = [e for e in envs if e in rows.index]
                xs = [envs.index(e) + (k - (len(bbs) - 1) / 2) * width for e in have]
                ys = [rows.loc[e, "test_acc"] for e in have]
                lo = [rows.loc[e, "test_acc"] - rows.loc[e, "ci_low"] for e in have]
                hi = [rows.loc[e, "ci_high"] - rows.loc[e, "test_acc"] for e in have]
                label = bb + (" (random init)" if kind_of[bb] == "random" else "")
                colour, hatch = BAR_COLOURS[k % len(BAR_COLOURS)], "//" if kind_of[bb] == "random" else None
                bars = ax.bar(xs, ys, width, yerr=[lo, hi], capsize=2, color=colour, hatch=hatch, edgecolor="white", label=label)
                handles.setdefault(label, bars)
                for x, e in zip(xs, have):  # the accuracy and the layer the head picked on val, above the CI
                    r = rows.loc[e]
                    text = f"{100 * r['test_acc']:.0f}\nL{int(r['layer'])}"
                    ax.text(x, min(r["ci_high"] + 0.01, 0.9), text, ha="center", va="bottom", fontsize=6.5, linespacing=0.9)
            for i, e in enumerate(envs):
                if e not in fl.index:
                    continue
                text_y = -1.0  # value labels of floors that (nearly) coincide are stacked, not overprinted
                for box, _, colour, style in sorted(FLOORS, key=lambda f: fl.loc[e].get(f[0], np.nan)):
                    v = fl.loc[e].get(box, np.nan)
                    if np.isnan(v):
                        continue
                    (line,) = ax.plot([i - 0.46, i + 0.46], [v, v], color=colour, ls=style, lw=1.6)
                    text_y = max(v, text_y + 0.04)
                    ax.text(i + 0.47, text_y, f"{100 * v:.0f}", color=colour, fontsize=6.5, va="center", ha="left")
                    line.set_label(floor_label(box, task, figure_tasks))
                    handles.setdefault(line.get_label(), line)
            ax.axhline(0.25, color=chance.get_color(), lw=0.8, ls=(0, (1, 2)))
            ax.set_xticks(range(len(envs)), envs)
            ax.set_xlim(-0.6, len(envs) - 0.3)
            ax.set_title(f"{task} · {head}", fontsize=10)
            ax.set_ylim(0, 1.06)  # a floor at 100% stays visible
            ax.grid(axis="y", lw=0.3, alpha=0.5)
        axes[0][0].set_ylabel("test accuracy (95% CI)")
        handles[chance.get_label()] = chance
        ncol = min(4, len(handles))
        fig.legend(list(handles.values()), list(handles.keys()), loc="lower center", ncol=ncol, fontsize=8, frameon=False)
        n = int(b["n_train"].max())
        fig.suptitle(f"{task}: per environment, n_train {n}, each head's layer on val — {device}", fontsize=9)
        rows_of_legend = -(-len(handles) // ncol)
        fig.tight_layout(rect=(0, 0.05 + 0.045 * rows_of_legend, 1, 1))
        figs.append((f"{task}: per environment", f"plots/bars_{task}.png", fig))
    if {"ego", "allo"} <= set(best["task"]):
        mean = best.groupby(["backbone", "kind", "head", "task"])["test_acc"].mean().unstack("task").dropna()
        fig, ax = plt.subplots(figsize=(8.4, 5.6))
        markers = {"linear": "o", "abmilp": "s", "efficient": "^"}
        colours = {bb: BAR_COLOURS[k % len(BAR_COLOURS)] for k, bb in enumerate(dict.fromkeys(mean.index.get_level_values(0)))}
        for (bb, kind, head), r in mean.iterrows():
            face = "none" if kind == "random" else colours[bb]
            ax.scatter(r["ego"], r["allo"], marker=markers.get(head, "D"), s=36, edgecolors=colours[bb], facecolors=face)
            ax.annotate(f"{bb} {head}", (r["ego"], r["allo"]), fontsize=6, xytext=(3, 3), textcoords="offset points")
        ego_f, allo_f = floors(df, "ego").mean(), floors(df, "allo").mean()  # the mean of environments
        for box, _, colour, style in FLOORS:
            if box in ego_f:
                ax.axvline(ego_f[box], color=colour, ls=style, lw=1.2, label=f"ego {floor_label(box, 'ego', figure_tasks)}")
            if box in allo_f:
                ax.axhline(allo_f[box], color=colour, ls=style, lw=1.2, label=f"allo {floor_label(box, 'allo', figure_tasks)}")
        ax.plot([0, 1], [0, 1], color="grey", lw=0.6, ls=":")
        ax.set_xlim(0, 1.03)
        ax.set_ylim(0, 1.03)
        ax.set_xlabel("ego (mean of envs); vertical lines: ego floors")
        ax.set_ylabel("allo (mean of envs); horizontal lines: allo floors")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        ax.set_title(f"ego vs allo, circle/square/triangle: linear/abmilp/efficient, hollow: random init\n{device}", fontsize=8)
        fig.tight_layout()
        figs.append(("ego vs allo", "plots/ego_allo.png", fig))
    probes = df[df["kind"] != "layout"]
    if probes["layer"].nunique() > 1:
        top = probes.groupby(["backbone", "env", "task"])["n_train"].transform("max")
        p = probes[probes["n_train"] == top]
        curves = _layer_curves(p)
        tasks = sorted(curves["task"].unique(), key=lambda t: (t != "ego", t))
        colours = {bb: BAR_COLOURS[k % len(BAR_COLOURS)] for k, bb in enumerate(dict.fromkeys(curves["backbone"]))}
        markers = {"linear": "o", "abmilp": "s", "efficient": "^"}
        fig, axes = plt.subplots(1, len(tasks), figsize=(7.6 * len(tasks), 4.4), squeeze=False)
        for ax, task in zip(axes[0], tasks):  # colour: backbone; marker: head; dashed: random init
            for (bb, kind, head), c in curves[curves["task"] == task].groupby(["backbone", "kind", "head"], sort=False):
                style = dict(marker=markers.get(head, "D"), ms=4, color=colours[bb], ls="--" if kind == "random" else "-")
                k, m = int(c["envs"].iloc[0]), int(c["of_envs"].iloc[0])
                label = f"{bb} {head}" + (f" ({k} of {m} envs)" if k < m else "")
                ax.plot(c["layer"], c["test_acc"], lw=1.2, label=label, **style)
            fl = floors(df, task).mean()  # the mean of environments, as the curves
            for box, _, colour, style in FLOORS:
                if box in fl:
                    ax.axhline(fl[box], color=colour, ls=style, lw=1.4, label=floor_label(box, task, figure_tasks))
            ax.axhline(0.25, color=chance.get_color(), lw=0.8, ls=(0, (1, 2)), label=chance.get_label())
            ax.set_title(f"{task}: layer curves (mean of envs, n_train largest)", fontsize=9)
            ax.set_xlabel("layer (block; a CNN's stage)")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.set_ylim(0, 1.03)
            ax.grid(axis="y", lw=0.3, alpha=0.5)
            ax.legend(fontsize=6.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
        axes[0][0].set_ylabel("test accuracy")
        fig.suptitle(device, fontsize=8)
        fig.tight_layout()
        figs.append(("layer curves", "plots/layers.png", fig))
    return figs


def _layer_curves(p: pd.DataFrame) -> pd.DataFrame:
    """Per backbone × kind × task × head × layer the mean test accuracy over the environments that
    have **every** layer of that curve (a study still running has some layers in fewer
    environments: a mean over different environments per point would draw an environment's
    difficulty as a layer effect), with ``envs`` (how many were averaged) and ``of_envs`` (how many
    the task has, over every backbone: a backbone not yet run everywhere says so too)."""
    key = ["backbone", "kind", "task", "head"]
    layers = p.groupby(key)["layer"].transform("nunique")
    full = p[p.groupby([*key, "env"])["layer"].transform("nunique") == layers]
    curves = full.groupby([*key, "layer"]).agg(test_acc=("test_acc", "mean"), envs=("env", "nunique")).reset_index()
    of = p.groupby("task")["env"].nunique().rename("of_envs").reset_index()
    return curves.merge(of, on="task", how="left")


STYLE = """body { margin: 0; font: 13px/1.4 system-ui, sans-serif; color: #222; background: #f6f6f4; }
header { display: flex; gap: 1.5em; align-items: baseline; padding: 6px 14px; background: #263238; color: #eee; }
header h1 { font-size: 16px; margin: 0; } #count { margin-left: auto; font-weight: bold; }
main { padding: 8px 14px; } .meta { color: #555; max-width: 1100px; }
table.lb { border-collapse: collapse; font-size: 12px; background: #fff; }
table.lb th { position: sticky; top: 0; background: #eceff1; cursor: pointer; user-select: none; white-space: nowrap; }
table.lb th.asc::after { content: " ▲"; } table.lb th.desc::after { content: " ▼"; }
table.lb td, table.lb th { border: 1px solid #ddd; padding: 1px 6px; text-align: left; }
table.lb td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.layout { color: #666; } tr.random { color: #8d6e63; } tr.picked td.acc { font-weight: bold; }
.plots { display: flex; flex-wrap: wrap; gap: 16px; margin: 10px 0; }
.plot { background: #fff; border: 1px solid #ccc; padding: 6px; } .plot h3 { margin: 0 0 4px; font-size: 13px; }
.plot img { max-width: 900px; }
"""

SCRIPT = """
(function () {
  const table = document.getElementById('lb');
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const count = document.getElementById('count');
  function show() {
    const n = rows.filter(r => !r.hidden).length;
    count.textContent = n + ' rows';
    count.dataset.count = n;
  }
  table.tHead.querySelectorAll('th').forEach((th, i) => th.addEventListener('click', () => {
    const asc = !th.classList.contains('asc');
    table.tHead.querySelectorAll('th').forEach(h => h.classList.remove('asc', 'desc'));
    th.classList.add(asc ? 'asc' : 'desc');
    const key = r => { const c = r.cells[i]; return c.dataset.v !== undefined ? c.dataset.v : c.textContent; };
    const num = th.dataset.type === 'num';
    rows.sort((a, b) => {
      let x = key(a), y = key(b);
      if (num) { x = x === '' ? -Infinity : +x; y = y === '' ? -Infinity : +y; return asc ? x - y : y - x; }
      return asc ? x.localeCompare(y) : y.localeCompare(x);
    });
    rows.forEach(r => body.appendChild(r));
  }));
  document.getElementById('filter').addEventListener('input', e => {
    const words = e.target.value.toLowerCase().split(/\\s+/).filter(Boolean);
    rows.forEach(r => { const t = r.textContent.toLowerCase(); r.hidden = !words.every(w => t.includes(w)); });
    show();
  });
  show();
  window.SF_READY = true;
})();
"""

_SHOWN = ["backbone", "kind", "env", "task", "layer", "head", "n_train", "test_acc", "ci_low", "ci_high", "val_acc", "lr",
          "dropout", "n_test", "layer_on_val", "sparrta_vitb", "device", "train_device", "report"]  # fmt: skip
_NUMERIC = {
    "layer",
    "n_train",
    "test_acc",
    "ci_low",
    "ci_high",
    "val_acc",
    "lr",
    "dropout",
    "n_test",
    "layer_on_val",
    "sparrta_vitb",
}


def _td(col: str, v) -> str:
    if col == "report":
        return f'<td><a href="{html.escape(v)}">report</a></td>' if v else "<td></td>"
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return '<td class="num" data-v=""></td>' if col in _NUMERIC else "<td></td>"
    if col in ("test_acc", "ci_low", "ci_high", "val_acc", "sparrta_vitb"):
        cls = "num acc" if col == "test_acc" else "num"
        return f'<td class="{cls}" data-v="{v}">{100 * float(v):.1f}</td>'
    if col in _NUMERIC:
        return f'<td class="num" data-v="{v}">{html.escape(f"{v:g}" if isinstance(v, float) else str(v))}</td>'
    return f"<td>{html.escape(str(v))}</td>"


def page(df: pd.DataFrame, header: dict, figs: list[tuple[str, str]]) -> str:
    head = "".join(f'<th data-type="{"num" if c in _NUMERIC else "text"}">{c}</th>' for c in _SHOWN)
    body = []
    for r in df.to_dict("records"):
        cls = " ".join(x for x in (r["kind"], "picked" if r["layer_on_val"] else "") if x)
        body.append(f'<tr class="{cls}">' + "".join(_td(c, r[c]) for c in _SHOWN) + "</tr>")
    proto = html.escape(json.dumps(header.get("protocol", {}), sort_keys=True))
    versions = html.escape(json.dumps(header.get("versions", {}), sort_keys=True))
    plots_html = "".join(
        f'<div class="plot"><h3>{html.escape(t)}</h3><img src="{html.escape(p)}" alt="{html.escape(t)}"></div>' for t, p in figs
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sceneforge study leaderboard</title>
<style>{STYLE}</style></head>
<body><header><h1>sceneforge study</h1><span>protocol {html.escape(str(header.get("protocol_fingerprint", "?")))}</span>
<span>{html.escape(device_text(df, header))}</span>
<input id="filter" placeholder="filter: e.g. ego efficient" size="28"><span id="count"></span></header>
<main><p class="meta">Test accuracy % with 95% Wilson interval; click a column to sort; bold: the layer the head
picks on val. Layout rows: an MLP on the boxes alone (no pixels) on the same rows. Protocol: {proto}.
Versions: {versions}.</p>
<div class="plots">{plots_html}</div>
<table class="lb" id="lb"><thead><tr>{head}</tr></thead><tbody>
{chr(10).join(body)}
</tbody></table></main>
<script>{SCRIPT}</script></body></html>
"""


def write_leaderboard(out: Path, say: Callable[[str], None] = print) -> pd.DataFrame:
    """leaderboard.csv/.md/.html and plots/ from ``out``'s results.jsonl and study.json."""
    out = Path(out)
    header = read_header(out) or {}
    rows = read_rows(out / RESULTS)
    df = table(rows, out)
    atomic_write_text(out / "leaderboard.csv", df.to_csv(index=False, lineterminator="\n"))
    atomic_write_text(out / "leaderboard.md", markdown(df, header))
    figure_tasks = {
        r["task"] for r in rows if r["kind"] == "layout" and "human" in (r["heads"].get("boxes") or {}).get("boxes", [])
    }
    figs = plots(df, out, device_text(df, header), figure_tasks) if not df.empty else []
    atomic_write_text(out / "leaderboard.html", page(df, header, figs))
    say(f"study: {len(df)} leaderboard rows in {out / 'leaderboard.csv'}, {out / 'leaderboard.md'}, {out / 'leaderboard.html'}")
    return df


__all__ = ["write_leaderboard", "table", "markdown", "SPARRTA_VITB", "HEADER"]
