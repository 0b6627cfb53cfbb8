"""Finalize a SpaRRTa job: records → table with splits → ``dataset_card.json``.

Reads the per-sample records in global index order (never the order workers finished in), so
the table and the card are byte-identical at any worker count.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.layout_baseline import layout_baselines as fit_layout
from sceneforge.scenarios.sampling.relations import LABELS
from sceneforge.scenarios.sparrta import characters
from sceneforge.scenarios.sparrta.config import SparrtaConfig, Unit
from sceneforge.scenarios.sparrta.record import load_record, unit_dir
from sceneforge.scenarios.sparrta.quotas import no_table_reason
from sceneforge.scenarios.sparrta.setting import quota_of
from sceneforge.scenarios.output.writers import SPLIT_PATTERN, assign_splits, atomic_write_json, write_table
from sceneforge.scenarios.sparrta.graph import write_scene_tables
from sceneforge.scenarios.world.look import card_worlds

CARD_FILE = "dataset_card.json"
FIRST_COLUMNS = (
    "file_name",
    "index",
    "env",
    "task",
    "triple_id",
    "unit_index",
    "label",
    "split",
    "source_class",
    "target_class",
    "viewpoint",
    "margin_deg",
    "angle_deg",
    "seed",
)
RULES = (
    "f = source - observer, r = target - source (XY only, UE cm); a = unsigned angle(f, r); "
    "c = f.x*r.y - f.y*r.x, c > 0 => right; a < 45-m front (target beyond the source), a > 135+m back, "
    "45+m < a < 135-m left/right, otherwise ambiguous (rejected). Observer: camera (ego) or the human "
    "figure (allo); the observer's yaw is not used."
)


def collect(cfg: SparrtaConfig, units: list[Unit], out: Path) -> list[dict]:
    """Every record in global index order; raise if any sample is missing or incomplete."""
    recs, missing = [], []
    for u in units:
        for i in range(u.n):
            rec = load_record(out, u, i)
            (recs.append(rec) if rec else missing.append((u, i)))
    if missing:
        u, i = missing[0]
        raise ConfigError(
            f"{out}: {len(missing)} of {sum(u.n for u in units)} samples are missing or incomplete "
            f"(first: {u.env}/{u.task}/{u.triple_id} #{i}); rerun the same command to resume"
        )
    return recs


def with_splits(recs: list[dict], samples_per_scene: int, pattern=None) -> list[dict]:
    """Table rows with ``split``: 80/10/10 (or the config's ``split_pattern``) within each (env, task)
    group, by scene: the samples of one scene (same triple, ``unit_index // samples_per_scene``:
    shared placement and clutter) are never split apart (writers.assign_splits)."""
    groups: dict[tuple, list[dict]] = defaultdict(list)
    for r in recs:
        groups[(r["row"]["env"], r["row"]["task"])].append(r["row"])
    split_of = {}
    for rows in groups.values():
        scenes = [(row["triple_id"], row["unit_index"] // samples_per_scene) for row in rows]
        for row, s in zip(rows, assign_splits([row["label"] for row in rows], scenes, pattern or SPLIT_PATTERN)):
            split_of[row["index"]] = s
    rows = [{**r["row"], "split": split_of[r["row"]["index"]]} for r in recs]
    return [{k: row[k] for k in FIRST_COLUMNS} | {k: v for k, v in row.items() if k not in FIRST_COLUMNS} for row in rows]


def finalize_dataset(cfg: SparrtaConfig, units: list[Unit], out: Path) -> dict:
    job = out / "job.json"
    if not job.exists():
        raise ConfigError(f"{out}: no job.json; not a sceneforge SpaRRTa dataset directory (run generate first)")
    if json.loads(job.read_text()).get("fingerprint") != cfg.fingerprint():
        raise ConfigError(f"{out}: job.json was made with a different config; cannot finalize with this one")
    recs = collect(cfg, units, out)
    remove_stale_temps(out, units)
    rows = with_splits(recs, cfg.samples_per_scene, cfg.split_pattern)
    write_table(rows, out)
    write_scene_tables(out, rows)  # objects.parquet (+ annotations.coco.json with masks)
    stats = statistics(recs, rows)
    baselines = layout_baselines(rows)
    atomic_write_json(
        out / CARD_FILE,
        {
            **card(cfg, units, recs, stats),
            **margins(cfg, rows),
            "layout_quotas": layout_quotas(cfg, units),
            **layout_quotas_note(cfg, units),
            "layout_baselines": baselines,
        },
    )
    return {**stats, "layout_baselines": baselines}


# Feature sets of the card's layout baselines (issue 46): each labelled object's box alone, and all
# of them (source, target and, on allo, the figure "human").
BOX_SETS = {"source": ("source",), "target": ("target",), "figure": ("human",), "all_boxes": ("source", "target", "human")}


def layout_baselines(rows: list[dict]) -> dict:
    """Per ``env/task``: the test accuracy of an MLP on each labelled object's 2-D box alone and on
    all of them (core/layout_baseline.py: the model of probing/layout.py, in numpy; no pixels),
    trained on the group's train rows, step chosen on val, on the dataset's own split. Chance is
    0.25; a single box far above it means a probe can score by finding one object (issue 46)."""
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        groups[f"{row['env']}/{row['task']}"].append(row)
    return {k: fit_layout(g, BOX_SETS, LABELS) for k, g in sorted(groups.items())}


def margins(cfg: SparrtaConfig, rows: list[dict]) -> dict:
    """The ambiguity margins every sample clears, per ``env/task``, in degrees: around the
    observer→source line (SpaRRTa's label), and with ``camera_policy: decorrelated`` on ego also
    around the camera's heading (the frame a viewer reads the image in); null where not applied."""
    out: dict[str, dict] = {}
    for row in rows:
        key = f"{row['env']}/{row['task']}"
        if key not in out:
            ego = row["task"] == "ego"
            out[key] = {
                "observer_source_line_deg": row["margin_deg"],
                "camera_heading_deg": row["margin_deg"] if ego and cfg.camera_policy == "decorrelated" else None,
                "perceptual_veto": (
                    None
                    if not ego
                    else "image-space bearing"
                    if cfg.camera_policy == "decorrelated"
                    else "mask-centroid order / depth order"
                ),
            }
    return {"camera_policy": cfg.camera_policy, "margins": out}


def layout_quotas(cfg: SparrtaConfig, units: list[Unit]) -> dict:
    """Per ``env/task/triple``: the layout-quota table its views were accepted by (quotas.py:
    ``digest`` of the table, the pilot's mean acceptance per label) or null (no quota: another
    policy, ego, or an environment without a table for its content: ``layout_quotas_note`` says so)."""
    out = {}
    for u in units:
        table = quota_of(cfg, u)
        out[f"{u.env}/{u.task}/{u.triple_id}"] = (
            None if table is None else {"digest": table.digest, "pilot_acceptance": dict(zip(LABELS, table.acceptance))}
        )
    return out


def layout_quotas_note(cfg: SparrtaConfig, units: list[Unit]) -> dict:
    """``{"layout_quotas_note": {env/task: why}}`` for each ``decorrelated`` allo group whose
    environment had no quota table (quotas.no_table_reason: a custom or edited environment file,
    with the command that calibrates one); ``{}`` otherwise, so the card of every dataset that has
    its tables (and of every ego or other-policy one, null by design) keeps its bytes."""
    if cfg.camera_policy != "decorrelated":
        return {}
    notes = {}
    for u in units:
        if u.task == "allo" and quota_of(cfg, u) is None:
            notes[f"{u.env}/{u.task}"] = no_table_reason(u.env, (cfg.env_files or {}).get(u.env, {}), recorded=True)
    return {"layout_quotas_note": notes} if notes else {}


def remove_stale_temps(out: Path, units: list[Unit]) -> int:
    """Delete temp files a killed worker left (``.<name>.tmp<pid>``, never a final name)."""
    dirs = {out, *(out / unit_dir(u) for u in units), *(out / "records" / unit_dir(u) for u in units)}
    stale = [p for d in dirs if d.is_dir() for p in d.glob(".*.tmp*") if p.is_file()]
    for p in stale:
        p.unlink(missing_ok=True)
    return len(stale)


def statistics(recs: list[dict], rows: list[dict]) -> dict:
    """Counts by env/task/triple/label/split, rejections by rule, renders per sample."""
    rej = Counter()
    for r in recs:
        rej.update(r["rejections"])
    renders = sum(r["renders"] for r in recs)
    by = lambda *keys: dict(sorted(Counter("/".join(str(row[k]) for k in keys) for row in rows).items()))
    return {
        "samples": len(rows),
        "by_env_task": by("env", "task"),
        "by_triple": by("env", "task", "triple_id"),
        "by_label": {lab: sum(1 for row in rows if row["label"] == lab) for lab in LABELS},
        "by_split_label": by("split", "label"),
        "by_split": by("split"),
        "rejections": dict(sorted(rej.items())),
        "rejections_total": sum(rej.values()),
        "rejections_per_sample": sum(rej.values()) / max(1, len(rows)),
        "visibility_checks": renders,
        "visibility_checks_per_sample": renders / max(1, len(rows)),
    }


def card(cfg: SparrtaConfig, units: list[Unit], recs: list[dict], stats: dict) -> dict:
    """The JSON dataset card: config, counts, rejection stats, software, assets and licenses."""
    ids = sorted({a for r in recs for a in r.get("assets", [])})
    lib = _library(cfg, units)
    shown = characters.card_block(recs)  # skinned characters (opt-in): not the library's assets
    ids = [a for a in ids if not characters.is_character(a)] if shown else ids
    licenses = lib.licenses(ids)
    card = {
        "name": "sceneforge SpaRRTa-style spatial relations",
        "config": cfg.to_dict(),
        "fingerprint": cfg.fingerprint(),
        "units": [
            {
                "env": u.env,
                "task": u.task,
                "triple_id": u.triple_id,
                "source": u.source_class,
                "target": u.target_class,
                "viewpoint": u.viewpoint_class,
                "n": u.n,
            }
            for u in units
        ],
        "labels": list(LABELS),
        "labelling_rule": RULES,
        "stats": stats,
        "software": {p: _version(p) for p in ("sceneforge", "numpy", "moderngl", "pillow", "pyarrow")},
        "asset_library": lib.fingerprint(),
        "assets": ids,
        "licenses": licenses,
        "attributions": lib.attributions(ids),
        "files": {
            "table": "samples.parquet (same rows as metadata.csv)",
            "hf_imagefolder": "metadata.csv",
            "per_sample": "<env>/<task>/<triple>/img_NNNN.<ext>, params_NNNN.json [, mask_NNNN.png, depth_NNNN.npy]",
        },
        "load": {
            "pandas": "pd.read_parquet('samples.parquet')",
            "datasets": "load_dataset('imagefolder', data_dir=DIR, split='train')  # column 'split' holds ours",
        },
    }
    looks = lib.look_attributions(**looks_used(cfg, units))
    if looks:
        card["textures_and_hdris"] = looks
        card["licenses"] = licenses = sorted(set(licenses) | {x["license"] for x in looks})
        card["attributions"] = sorted(set(card["attributions"]) | {x["attribution"] for x in looks})
    if shown:  # 0 A.D. art (CC-BY-SA 3.0, Wildfire Games): the images that show it are CC-BY-SA
        card["characters"] = shown
        card["licenses"] = licenses = sorted(set(licenses) | {shown["license"]})
        card["attributions"] = sorted(set(card["attributions"]) | {shown["attribution"]})
        card["assets"] = sorted({a for r in recs for a in r.get("assets", [])})
    if any(l.lower().startswith("gpl") for l in licenses):
        card["texture_notice"] = (
            "Some ground/facade textures come from Sweet Home 3D (GPL-2.0-or-later); "
            "redistributing images that show them may carry GPL obligations. "
            "Generate with --licenses cc0,cc-by to use procedural (CC0) textures instead."
        )
    if any("BY-SA" in l.upper() for l in licenses):
        card["notice"] = (
            "Some rendered assets are licensed CC-BY-SA: images derived from them should be shared "
            "under CC-BY-SA with the attributions above."
        )
    return card


def looks_used(cfg: SparrtaConfig, units: list[Unit]) -> dict:
    """HDRI and surface ids the environments of these units can show (their world dicts)."""
    from sceneforge.assets_manifest.looks import looks_in  # trimesh/scipy, ~0.6 s: only the dataset card needs the asset library

    return looks_in([w for e in sorted({u.env for u in units}) for w in card_worlds(cfg.env(e))])


def _library(cfg: SparrtaConfig, units: list[Unit]):
    """The asset library the samples were made with (the first environment's: default + its packs)."""
    return cfg.env(units[0].env).library


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def layout_summary(stats: dict) -> str:
    """One line per ``env/task`` of the card's layout baselines (chance 0.25), for the end of a run."""
    lines = []
    for key, sets in (stats.get("layout_baselines") or {}).items():
        cells = ", ".join(f"{name} {v['acc']:.2f}" for name, v in sets.items() if v.get("acc") is not None)
        n = next((v["n_test"] for v in sets.values()), 0)
        lines.append(f"layout baselines {key} (box MLP, {n} test rows, chance 0.25): {cells or 'no test rows'}")
    return "\n".join(lines)


def rejection_summary(stats: dict) -> str:
    """Human-readable rejection line for the end of a run."""
    rej = Counter(stats.get("rejections", {}))
    n = max(1, stats.get("samples", 1))
    rules = ", ".join(f"{k} {v}" for k, v in rej.most_common()) or "none"
    return (
        f"rejected candidates: {sum(rej.values())} ({sum(rej.values()) / n:.1f} per sample; "
        f"{stats.get('visibility_checks_per_sample', 0):.2f} visibility renders per sample) — {rules}"
    )
