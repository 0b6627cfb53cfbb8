"""docs/validation.md's result tables from ``sceneforge study`` output (issue 50 item 6).

The committed rows (benchmarks/results/sparrta_scale.jsonl) go through ``sparrta_scale.py to-study``
(one study directory per training schedule, rows in the study's format) and the study's own
leaderboard code (``study.leaderboard.write_leaderboard``); the tables are rendered from each
directory's ``leaderboard.csv`` and ``study.json`` (the schedule), nothing else. So a number on the
page is the leaderboard's number, and the page cannot drift from the rows:

    python benchmarks/validation_tables.py            # print the tables
    python benchmarks/validation_tables.py --write    # replace the marked block of docs/validation.md
    python benchmarks/validation_tables.py --check    # exit 1 (one line) if the page differs

The block is the one between ``<!-- study-table-allo ... -->`` and ``<!-- /study-table-allo -->``
(sessions 16-17: the allo sets and the random-init control). The tables above it (sessions 14-15)
have no committed rows (their machine was lost) and stay as written.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "validation.md"
BEGIN = "<!-- study-table-allo:"
END = "<!-- /study-table-allo -->"
MARKER = (
    f"{BEGIN} python benchmarks/validation_tables.py --write (benchmarks/results/sparrta_scale.jsonl -> "
    "sparrta_scale.py to-study -> each study's leaderboard.csv; test: tests/probing/test_validation_tables.py) -->"
)
HEADS = ("linear", "abmilp", "efficient")
LAYOUT = ("source", "target", "boxes")
ENV_ORDER = {e: i for i, e in enumerate(("desert", "city", "forest", "winter_town", "bridge"))}
MAIN_BACKBONE = "dinov2-s-imgfocus"  # its rows come first in a task (the study's subject; controls after it)


def _scale_module():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import sparrta_scale
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return sparrta_scale


def leaderboards(results: Path, out: Path) -> pd.DataFrame:
    """Convert ``results`` into study directories under ``out`` (their leaderboards written by the
    study's code) and return every directory's leaderboard.csv, with its schedule as columns."""
    with contextlib.redirect_stdout(sys.stderr):  # the leaderboards' own "study: N rows in ..." lines
        _scale_module().main(["to-study", "--out", str(out), "--results", str(results)])
    frames = []
    for d in sorted(p for p in out.iterdir() if (p / "leaderboard.csv").is_file()):
        protocol = json.loads((d / "study.json").read_text())["protocol"]
        df = pd.read_csv(d / "leaderboard.csv", keep_default_na=False, na_values=[""])
        frames.append(df.assign(epochs=int(protocol["epochs"]), patience=int(protocol["patience"])))
    return pd.concat(frames, ignore_index=True)


def _cell(r) -> str:
    return f"{100 * r.test_acc:.1f} [{100 * r.ci_low:.0f}, {100 * r.ci_high:.0f}]"


def _cells(df: pd.DataFrame) -> dict:
    """One leaderboard cell per (dataset, n_train, backbone, layer, epochs, patience): its probe
    heads and the layout floors of the same dataset, n_train and schedule."""
    probes = df[df["kind"] != "layout"]
    floors = df[df["kind"] == "layout"]
    cells = {}
    for key, g in probes.groupby(["dataset", "n_train", "backbone", "layer", "epochs", "patience"], sort=False):
        dataset, n_train, _, _, epochs, patience = key
        lay = floors[
            (floors["dataset"] == dataset)
            & (floors["n_train"] == n_train)
            & (floors["epochs"] == epochs)
            & (floors["patience"] == patience)
        ]
        first = g.iloc[0]
        cells[key] = {
            "env": first.env,
            "task": first.task,
            "heads": {r.head: r for r in g.itertuples()},
            "layout": {r.head: r.test_acc for r in lay.itertuples()},
        }
    return cells


def _layout_cells(lay: dict) -> str:
    return " | ".join(f"{100 * lay.get(k, float('nan')):.1f}" for k in LAYOUT)


def _prefer(key: tuple) -> tuple:
    """A 0.6.0-default set's cell (issue 46, ``*_060``) before a 0.5.0 one's, then the largest n."""
    return (str(key[0]).endswith("_060"), key[1])


def tables(df: pd.DataFrame) -> str:
    """The block of docs/validation.md: each set at its largest n_train (per task, backbone, layer
    and schedule, SpaRRTa's ViT-B beside it, the mean of environments), then the sets measured at
    several n_train."""
    cells = _cells(df)
    best: dict = {}
    for key, c in cells.items():
        _, _, backbone, layer, epochs, patience = key
        group = (c["task"], backbone, layer, epochs, patience, c["env"])
        if group not in best or _prefer(key) > _prefer(best[group]):
            best[group] = key
    lines = [
        "Each set at its largest n_train:",
        "",
        "| task | backbone | layer | epochs / patience | env | n_train | linear | abmilp | efficient "
        "| layout: source | target | both | SpaRRTa ViT-B lin / abmilp / eff |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups = sorted({g[:5] for g in best}, key=lambda k: (k[0] != "ego", k[1] != MAIN_BACKBONE, k[1], k[3], k[4], k[2]))
    for task, backbone, layer, epochs, patience in groups:
        keys = sorted(
            (k for g, k in best.items() if g[:5] == (task, backbone, layer, epochs, patience)),
            key=lambda k: ENV_ORDER.get(cells[k]["env"], 9),
        )
        rows = [cells[k] for k in keys]
        sched = f"{epochs} / {patience}"
        for k, c in zip(keys, rows):
            ref = " / ".join(f"{100 * c['heads'][h].sparrta_vitb:.1f}" for h in HEADS)
            lines.append(
                f"| {task} | {backbone} | L{layer} | {sched} | {c['env']} | {k[1]} | "
                + " | ".join(_cell(c["heads"][h]) for h in HEADS)
                + f" | {_layout_cells(c['layout'])} | {ref} |"
            )
        if len(rows) > 1:
            mean = {h: 100 * float(np.mean([c["heads"][h].test_acc for c in rows])) for h in HEADS}
            src = 100 * float(np.mean([c["layout"].get("source", np.nan) for c in rows]))
            lines.append(
                f"| {task} | {backbone} | L{layer} | {sched} | **mean of {len(rows)}** | | "
                + " | ".join(f"**{mean[h]:.1f}**" for h in HEADS)
                + f" | {src:.1f} | | | |"
            )
    lines += _layer_on_val(cells, best)
    many: dict = {}
    for key, c in cells.items():
        dataset, _, backbone, layer, epochs, patience = key
        many.setdefault((c["task"], c["env"], backbone, layer, epochs, patience, dataset), []).append(key)
    many = {g: sorted(ks, key=lambda k: k[1]) for g, ks in many.items() if len(ks) > 1}
    if many:
        lines += [
            "",
            "The allo sets at every n_train (one extraction):",
            "",
            "| task | env | backbone | layer | epochs / patience | n_train | linear | abmilp | efficient "
            "| layout: source | target | both |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for (task, env, backbone, layer, epochs, patience, _), keys in sorted(
            many.items(), key=lambda kv: (kv[0][0] != "ego", ENV_ORDER.get(kv[0][1], 9), kv[0][2:])
        ):
            for k in keys:
                c = cells[k]
                lines.append(
                    f"| {task} | {env} | {backbone} | L{layer} | {epochs} / {patience} | {k[1]} | "
                    + " | ".join(_cell(c["heads"][h]) for h in HEADS)
                    + f" | {_layout_cells(c['layout'])} |"
                )
    return "\n".join(lines)


def _layer_on_val(cells: dict, best: dict) -> list[str]:
    """Rows with each head's layer chosen on val per environment (ties: the shallower layer), where
    a backbone and schedule has more than one layer among its largest-n cells."""
    lines = []
    for task, backbone, epochs, patience in sorted({(g[0], g[1], g[3], g[4]) for g in best}):
        keys = [k for g, k in best.items() if (g[0], g[1], g[3], g[4]) == (task, backbone, epochs, patience)]
        if len({k[3] for k in keys}) < 2:
            continue
        envs = sorted({cells[k]["env"] for k in keys}, key=lambda e: ENV_ORDER.get(e, 9))
        tests: dict = {h: [] for h in HEADS}
        for env in envs:
            mine = [k for k in keys if cells[k]["env"] == env]
            picked = {h: max(mine, key=lambda k: (cells[k]["heads"][h].val_acc, -k[3])) for h in HEADS}
            for h in HEADS:
                tests[h].append(cells[picked[h]]["heads"][h].test_acc)
            lines.append(
                f"| {task} | {backbone} | on val | {epochs} / {patience} | {env} | {mine[0][1]} | "
                + " | ".join(f"{_cell(cells[picked[h]]['heads'][h])} L{picked[h][3]}" for h in HEADS)
                + " | | | | |"
            )
        if len(envs) > 1:
            lines.append(
                f"| {task} | {backbone} | on val | {epochs} / {patience} | **mean of {len(envs)}** | | "
                + " | ".join(f"**{100 * float(np.mean(tests[h])):.1f}**" for h in HEADS)
                + " | | | | |"
            )
    return lines


def block(results: Path) -> str:
    """The marked block (markers included) made from ``results``."""
    with tempfile.TemporaryDirectory() as tmp:
        df = leaderboards(results, Path(tmp))
    return f"{MARKER}\n{tables(df)}\n{END}"


def page_block(text: str) -> tuple[int, int]:
    """Start and end offsets of the marked block in the page (markers included)."""
    start = text.find(BEGIN)
    end = text.find(END, start)
    if start < 0 or end < 0:
        raise ValueError(f"{DOC}: no '{BEGIN} ... {END}' block")
    return start, end + len(END)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--results", default=None, help="rows (default: benchmarks/results/sparrta_scale.jsonl)")
    ap.add_argument("--doc", default=str(DOC), help="the page whose block is written or checked")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="replace the page's block")
    mode.add_argument("--check", action="store_true", help="exit 1 if the page's block differs")
    args = ap.parse_args(argv)
    results = Path(args.results) if args.results else _scale_module().RESULTS
    new = block(results)
    if not (args.write or args.check):
        print(new)
        return 0
    doc = Path(args.doc)
    text = doc.read_text()
    start, end = page_block(text)
    if args.check:
        if text[start:end] != new:
            print(
                f"{doc}: the study-table-allo block differs from {results}; run benchmarks/validation_tables.py --write",
                file=sys.stderr,
            )
            return 1
        return 0
    doc.write_text(text[:start] + new + text[end:])
    return 0


if __name__ == "__main__":
    sys.exit(main())
