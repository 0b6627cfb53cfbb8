"""Read a finished dataset directory into a :class:`~sceneforge.explorer.table.Table`.

Three kinds, told apart by the table each one's ``finalize`` writes: ``samples.parquet`` with a
``label`` column (``sceneforge generate``: SpaRRTa-style relation images), ``samples.parquet`` +
``questions.jsonl`` (``sceneforge vqa``) and ``clips.parquet`` (``sceneforge videos``). Only files
are read (docs/datasets.md, docs/vqa.md, docs/videos.md describe them); no server, no renderer.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import inside
from sceneforge.explorer.table import Table

ROLES = ("source", "target", "human")
VARIANTS = ("std", "hflip", "reverse", "reverse_hflip")


def read_dataset(data_dir: Path, predictions: Path | None = None, run: str | None = None) -> Table:
    """The explorer's table of ``data_dir``; a directory that is no finished dataset is one line."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise ConfigError(f"{data_dir}: no such dataset directory")
    if (data_dir / "clips.parquet").is_file():
        table = read_videos(data_dir)
    elif (data_dir / "questions.jsonl").is_file() and (data_dir / "samples.parquet").is_file():
        table = read_vqa(data_dir)
    elif (data_dir / "samples.parquet").is_file():
        table = read_sparrta(data_dir)
    else:
        raise ConfigError(
            f"{data_dir}: no samples.parquet or clips.parquet (is the job finished? "
            "`sceneforge generate|vqa|videos` write it at the end)"
        )
    if predictions is not None:
        add_predictions(table, data_dir, Path(predictions), run)
    return table


def _check_paths(data_dir: Path, df: pd.DataFrame, columns: tuple[str, ...], table: str) -> None:
    """Every path the explorer will read or link stays inside the dataset (``core.paths.inside``):
    a table is data anyone can hand over, not permission to read elsewhere."""
    for col in columns:
        if col in df.columns:
            for k, rel in enumerate(df[col]):
                if isinstance(rel, str) and rel:
                    inside(data_dir, rel, f"{table} row {k} {col}")


def _keys(values, table: str) -> list[int]:
    """The table's ``index`` column as the samples' keys: whole numbers, each once (issue 48: a
    non-integer index was a traceback, a duplicated one silently overwrote a thumbnail)."""
    keys: list[int] = []
    seen: dict[int, int] = {}
    for row, v in enumerate(values):
        try:
            k = int(v) if not isinstance(v, (bool, np.bool_)) and float(v) == int(v) else None
        except (TypeError, ValueError, OverflowError):
            k = None
        if k is None or k < 0:
            raise ConfigError(f"{table} row {row + 1} index {str(v)[:40]!r}: expected a whole number >= 0")
        if k in seen:
            raise ConfigError(f"{table} rows {seen[k] + 1} and {row + 1}: index {k} twice (each sample's index must be unique)")
        seen[k] = row
        keys.append(k)
    return keys


def _json_file(data_dir: Path, rel: str, what: str) -> Any:
    """A JSON file of the dataset, or ConfigError naming it (missing, unreadable, not JSON)."""
    path = inside(data_dir, rel, what)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{what} {path}: cannot read it ({type(e).__name__}: {str(e)[:120]})") from None


def _card(data_dir: Path) -> dict[str, Any]:
    path = data_dir / "dataset_card.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def _box_px(df: pd.DataFrame, role: str) -> np.ndarray:
    """Longest edge of an object's visible-pixel box (inclusive pixel bounds), NaN where absent."""
    w = df[f"{role}_bbox_x1"] - df[f"{role}_bbox_x0"] + 1
    h = df[f"{role}_bbox_y1"] - df[f"{role}_bbox_y0"] + 1
    return np.fmax(w.to_numpy(float), h.to_numpy(float))


def _record_rejections(data_dir: Path) -> dict[int, dict[str, int]]:
    """Per-sample rejected candidates by rule, from ``records/`` (global index -> counts)."""
    out: dict[int, dict[str, int]] = {}
    for path in (data_dir / "records").rglob("*.json"):
        try:
            rec = json.loads(path.read_text())
            if isinstance(rec, dict) and "index" in rec:
                out[int(rec["index"])] = {str(k): int(v) for k, v in (rec.get("rejections") or {}).items()}
        except (OSError, ValueError, TypeError, AttributeError, OverflowError) as e:
            raise ConfigError(f"{path}: not a readable scene record ({type(e).__name__}: {str(e)[:120]})") from None
    return out


def read_sparrta(data_dir: Path) -> Table:
    """``sceneforge generate`` output: one row of ``samples.parquet`` per labelled image."""
    df = pd.read_parquet(data_dir / "samples.parquet")
    if "label" not in df.columns:
        raise ConfigError(f"{data_dir}/samples.parquet has no label column: not a relation dataset")
    _check_paths(data_dir, df, ("file_name", "mask_file", "depth_file", "params_file", "scene_file"), "samples.parquet")
    keys = _keys(df["index"], f"{data_dir}/samples.parquet")
    rejections = _record_rejections(data_dir)
    rej = np.array([sum(rejections.get(i, {}).values()) for i in keys], float)
    size = np.fmin(_box_px(df, "source"), _box_px(df, "target"))
    dist = np.hypot(df["target_x"] - df["source_x"], df["target_y"] - df["source_y"]).to_numpy(float)
    cam = np.hypot(df["source_x"] - df["camera_x"], df["source_y"] - df["camera_y"]).to_numpy(float)
    rows = df.to_dict("records")
    media = [{"image": r["file_name"], "mask": r.get("mask_file") or None, "depth": r.get("depth_file") or None} for r in rows]

    def details(i: int) -> dict[str, Any]:
        where = f"samples.parquet row {i + 1}"
        try:
            return sparrta_details(data_dir, rows[i], rejections.get(keys[i], {}), where)
        except (KeyError, TypeError, ValueError, IndexError) as e:
            why = f"missing field {e}" if isinstance(e, KeyError) else f"{type(e).__name__}: {str(e)[:100]}"
            sample = f"{data_dir}: {where} (index {keys[i]})"
            raise ConfigError(f"{sample}: its params or scene file is not a sample's ({why})") from None

    card = _card(data_dir)
    return Table(
        kind="sparrta",
        keys=keys,
        media=media,
        facets={
            "env": df["env"].tolist(),
            "task": df["task"].tolist(),
            "triple": df["triple_id"].tolist(),
            "label": df["label"].tolist(),
            "split": df["split"].tolist(),
        },
        numbers={
            "margin": df["margin_deg"].to_numpy(float),
            "angle": df["angle_deg"].to_numpy(float),
            "size": size,
            "distance": dist,
            "camera_distance": cam,
            "rejections": rej,
        },
        details=details,
        stats={
            "rejection_reasons": card.get("stats", {}).get("rejections", {}),
            "labelling_rule": card.get("labelling_rule", ""),
        },
        units={"margin": "deg", "angle": "deg", "size": "px", "distance": "cm", "camera_distance": "cm", "rejections": "tries"},
    )


def _xy(loc: dict[str, float]) -> list[float]:
    return [round(float(loc["x"]), 1), round(float(loc["y"]), 1)]


def footprint(obj: dict[str, Any]) -> list[list[float]]:
    """An object's ground footprint (XY of its 3-D box's bottom corners, in drawing order)."""
    corners = obj["box3d"]["corners"][0::2]  # corners alternate bottom/top
    c = np.asarray(corners, float)[:, :2]
    centre = c.mean(axis=0)
    order = np.argsort(np.arctan2(c[:, 1] - centre[1], c[:, 0] - centre[0]))
    return [[round(float(x), 1), round(float(y), 1)] for x, y in c[order]]


def sparrta_details(data_dir: Path, row: dict[str, Any], rejections: dict[str, int], where: str = "row") -> dict[str, Any]:
    """The sample page's data: params, boxes and the top-down map (from params + scene graph)."""
    params = _json_file(data_dir, row["params_file"], f"{where} params_file")
    actors = {k.rsplit("/", 1)[-1]: v for k, v in params["actors"].items()}
    boxes = {
        role: [int(row[f"{role}_bbox_{k}"]) for k in ("x0", "y0", "x1", "y1")]
        for role in ROLES
        if pd.notna(row.get(f"{role}_bbox_x0"))
    }
    cam = params["camera"]
    objects: list[dict[str, Any]] = []
    scene_file = row.get("scene_file")
    if scene_file and (data_dir / scene_file).is_file():
        graph = _json_file(data_dir, scene_file, f"{where} scene_file")
        objects = [{"role": o["role"], "class": o["class"], "foot": footprint(o)} for o in graph["objects"] if "box3d" in o]
    observer = "human" if params["task"] == "allo" else "camera"
    return {
        "size": [int(row["camera_width"]), int(row["camera_height"])],
        "label": params["label"],
        "task": params["task"],
        "margin_deg": params["margin_deg"],
        "angle_deg": round(float(params["angle_deg"]), 3),
        "split": row["split"],
        "boxes": boxes,
        "mask_colors": params.get("mask_colors", {}),
        "rejections": rejections,
        "params": {
            "camera": cam,
            "actors": actors,
            "assets": params.get("assets", {}),
            "visibility": params.get("visibility", {}),
            "seed": params.get("seed"),
        },
        "map": {
            "camera": {"xy": _xy(cam["location"]), "yaw": cam["rotation"]["yaw"], "hfov": cam["intrinsics"]["hfov_deg"]},
            "source": _xy(actors["source"]["location"]),
            "target": _xy(actors["target"]["location"]),
            "human": _xy(actors["human"]["location"]) if "human" in actors else None,
            "human_yaw": actors["human"]["rotation"]["yaw"] if "human" in actors else None,
            "observer": observer,
            "label": params["label"],
            "margin_deg": params["margin_deg"],
            "objects": objects,
        },
    }


def read_vqa(data_dir: Path) -> Table:
    """``sceneforge vqa`` output: one row per image, its questions from ``questions.jsonl``."""
    df = pd.read_parquet(data_dir / "samples.parquet")
    _check_paths(data_dir, df, ("file_name",), "samples.parquet")
    questions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in (data_dir / "questions.jsonl").read_text().splitlines():
        if line.strip():
            q = json.loads(line)
            questions[q["image"]].append(q)
    rows = df.to_dict("records")
    keys = _keys(df["index"], f"{data_dir}/samples.parquet")
    scene = [str(Path(r["file_name"]).parent / f"scene_{k:06d}.json") for r, k in zip(rows, keys)]
    media = [
        {"image": r["file_name"], "mask": str(Path(r["file_name"]).parent / f"mask_{k:06d}.png")} for r, k in zip(rows, keys)
    ]
    for m in media:
        if not (data_dir / m["mask"]).is_file():
            m["mask"] = None

    def details(i: int) -> dict[str, Any]:
        rec = json.loads((data_dir / scene[i]).read_text()) if (data_dir / scene[i]).is_file() else {}
        objs = rec.get("graph", {}).get("objects", [])
        cam = rec.get("camera") or {}
        return {
            "questions": questions.get(rows[i]["file_name"], []),
            "size": [cam.get("width", 0), cam.get("height", 0)],
            "boxes": {o["name"]: o["box2d"] for o in objs if o.get("box2d") and o.get("role") != "clutter"},
            "params": {"camera": rec.get("camera"), "n_objects": rows[i]["n_objects"]},
            "map": {
                "camera": _vqa_camera(rec.get("camera")),
                "objects": [{"role": o["role"], "class": o["class"], "foot": footprint(o)} for o in objs if "box3d" in o],
            },
        }

    cats = [Counter(q["category"] for q in questions.get(r["file_name"], [])) for r in rows]
    return Table(
        kind="vqa",
        keys=keys,
        media=media,
        facets={"env": df["env"].tolist(), "category": [",".join(sorted(c)) or "none" for c in cats]},
        numbers={"objects": df["n_objects"].to_numpy(float), "questions": df["n_questions"].to_numpy(float)},
        details=details,
        units={"objects": "", "questions": ""},
    )


def _vqa_camera(cam: dict[str, Any] | None) -> dict[str, Any] | None:
    if not cam:
        return None
    loc, rot = cam["location"], cam["rotation"]
    if isinstance(loc, dict):
        return {"xy": _xy(loc), "yaw": rot["yaw"], "hfov": cam.get("fov_deg", 90.0)}
    return {"xy": [loc[0], loc[1]], "yaw": rot[1], "hfov": cam.get("fov_deg", 90.0)}


def read_videos(data_dir: Path) -> Table:
    """``sceneforge videos`` output: one row per clip, its four variants and their Q&A."""
    df = pd.read_parquet(data_dir / "clips.parquet")
    _check_paths(data_dir / "videos" / "std", df, ("relative_path",), "clips.parquet")
    meta = {
        v: pd.read_csv(data_dir / "metadata" / f"{v}.csv") for v in VARIANTS if (data_dir / "metadata" / f"{v}.csv").is_file()
    }
    rows = df.to_dict("records")
    keys = _keys(df["index"], f"{data_dir}/clips.parquet")
    media = [{"videos": {v: f"videos/{v}/{r['relative_path']}" for v in VARIANTS}, "image": None} for r in rows]
    # category codes → the names the dataset card gives them ("Obj:static cam", ...): the facet
    # showed codes (0,3,4,5, issue 47); a card without names keeps the codes
    names = {str(k): str(v) for k, v in (_card(data_dir).get("categories") or {}).items()}

    def details(i: int) -> dict[str, Any]:
        rel = rows[i]["relative_path"]
        qa = {v: m[m["relative_path"] == rel][["question", "options", "GT", "cate"]].to_dict("records") for v, m in meta.items()}
        for rows_ in qa.values():
            for q in rows_:
                q["category"] = names.get(str(q["cate"]), str(q["cate"]))
        loc = np.stack(list(rows[i]["camera_location"])).astype(float)
        sub = np.stack(list(rows[i]["subject_location"])).astype(float)
        return {
            "qa": qa,
            "params": {
                "pattern": rows[i]["pattern"],
                "subject": rows[i]["subject_class"],
                "fps": float(rows[i]["fps"]),
                "n_frames": int(rows[i]["n_frames"]),
                "spec": json.loads(rows[i]["spec"]),
            },
            "map": {
                "camera": {
                    "xy": [float(loc[0][0]), float(loc[0][1])],
                    "yaw": float(rows[i]["camera_yaw"][0]),
                    "hfov": float(rows[i]["hfov_deg"]),
                },
                "paths": {"camera": np.round(loc[:, :2], 1).tolist(), "subject": np.round(sub[:, :2], 1).tolist()},
                "objects": [],
            },
        }

    cates = [
        " + ".join(names.get(c, c) for c in sorted({str(q["cate"]) for q in json.loads(r["questions"])}, key=_code_order))
        for r in rows
    ]
    return Table(
        kind="videos",
        keys=keys,
        media=media,
        facets={
            "env": df["env"].tolist(),
            "pattern": df["pattern"].tolist(),
            "subject": df["subject_class"].tolist(),
            "categories": cates,
        },
        numbers={
            "subject_size": np.array([float(np.max(v)) for v in df["subject_size_cm"]]),
            "attempts": df["render_attempts"].to_numpy(float),
        },
        details=details,
        stats={"rejection_reasons": _card(data_dir).get("stats", {}).get("rejections", {})},
        units={"subject_size": "cm", "attempts": ""},
    )


def _code_order(code: str):
    """Numeric codes in numeric order (10 after 9), anything else after them."""
    return (0, int(code), "") if code.isdigit() else (1, 0, code)


def add_predictions(table: Table, data_dir: Path, path: Path, run: str | None = None) -> None:
    """Per-sample predictions as facets ``prediction``/``correct``: a CSV ``file_name,prediction``
    (any model's, keyed by the image path the dataset's table uses), or a ``sceneforge probe``
    output directory, whose ``predictions/*.csv`` hold the selected head's prediction for every
    test image of each probe (``run`` = ``HEAD:LAYER:PROTOCOL`` picks one when it has several)."""
    if path.is_dir():
        pred = probe_predictions(path, data_dir, run)
    elif path.is_file():
        pred = pd.read_csv(path)
    else:
        raise ConfigError(f"--predictions {path}: no such file or directory")
    if not {"file_name", "prediction"} <= set(pred.columns):
        raise ConfigError(f"--predictions {path}: needs columns file_name,prediction (has {list(pred.columns)})")
    by_file = dict(zip(pred["file_name"].astype(str), pred["prediction"].astype(str)))
    labels = table.facets.get("label")
    if labels is None:
        raise ConfigError(f"--predictions {path}: {data_dir} has no label column to compare with")
    got = [by_file.get(m["image"], "none") for m in table.media]
    table.facets["prediction"] = got
    table.facets["correct"] = ["none" if g == "none" else ("yes" if g == lab else "no") for g, lab in zip(got, labels)]


def probe_predictions(run_dir: Path, data_dir: Path, run: str | None) -> pd.DataFrame:
    """The rows of a probe output's ``predictions/*.csv`` for this dataset and one probe run
    (head, layer, protocol): the one there is, or the one ``run`` names."""
    files = sorted((run_dir / "predictions").glob("*.csv"))
    if not files:
        raise ConfigError(
            f"--predictions {run_dir}: no predictions/*.csv (a `sceneforge probe` output "
            "directory, or a CSV file_name,prediction)"
        )
    pred = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
    if "dataset" in pred.columns:
        here = str(Path(data_dir).resolve())
        pred = pred[[str(Path(d).resolve()) == here for d in pred["dataset"].astype(str)]]
    keys = sorted({f"{h}:{layer}:{p}" for h, layer, p in zip(pred["head"], pred["layer"], pred["protocol"])})
    if not keys:
        raise ConfigError(f"--predictions {run_dir}: no probe there was run on {data_dir}")
    if run is None and len(keys) > 1:
        raise ConfigError(
            f"--predictions {run_dir}: {len(keys)} probe runs ({', '.join(keys)}); pick one with --run HEAD:LAYER:PROTOCOL"
        )
    run = run or keys[0]
    if run not in keys:
        raise ConfigError(f"--run {run}: not among the probe runs of {run_dir} ({', '.join(keys)})")
    head, layer, protocol = run.split(":")
    return pred[(pred["head"] == head) & (pred["layer"].astype(str) == layer) & (pred["protocol"] == protocol)]
