"""Dataset writers: atomic files, SpaRRTa's ``params_NNNN.json``, the metadata table, splits.

Everything written here is a pure function of its inputs (no timestamps, sorted keys), so the
same config + seed gives byte-identical files. Every file goes to a temporary name in the same
directory first and is then ``os.replace``d, so a killed run never leaves a truncated file
under its final name.
"""

from __future__ import annotations

import io
import json
import math
from json.encoder import encode_basestring_ascii
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from sceneforge.core.atomic import atomic_write_bytes  # noqa: F401  (re-exported for the scenarios)
from sceneforge.core.errors import ConfigError
from sceneforge.engine import render_kinds
from sceneforge.engine.world import Camera

# k-th scene (or k-th sample of a label) -> SPLIT_PATTERN[k % 10]: 80/10/10, with val and test early in
# the cycle so even a small set (the demo's 4 per label and task) has all three splits and can be probed.
SPLIT_PATTERN = ("train", "train", "val", "test", "train", "train", "train", "train", "train", "train")
SENSOR_WIDTH_MM = 50.0  # SpaRRTa: 50 mm lens on a 50 mm sensor (hfov 53.13 deg)


# --- atomic files ---------------------------------------------------------------------------
def dumps(obj) -> str:
    """Canonical JSON (sorted keys, 2-space indent, trailing newline): stable bytes.

    The bytes of :func:`reference_dumps` (``json.dumps(obj, sort_keys=True, indent=2,
    allow_nan=False)``), written by joining strings: the standard library's indenting encoder is
    pure Python with a generator per container, and a sample's params + scene graph (a city has
    ~165 objects) took ~8 ms. Plain dicts, lists, tuples, str, int, float, bool and None are
    encoded here; anything else (numpy scalars, subclasses, non-string keys, NaN) by
    ``reference_dumps`` itself, so errors and odd values come out as they always did. A
    :class:`PreEncoded` dict supplies the text of some of its values ready-made."""
    return _encode(obj, 0) + "\n"


def reference_dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, indent=2, allow_nan=False, default=_jsonable) + "\n"


class PreEncoded(dict):
    """A dict whose ``static = (values, texts, level)`` gives, for some keys, the value it was
    made with and that value's text ``nested_json(value, level + 1)``, used when the dict sits
    ``level`` containers deep (the scene graph encodes an object's pose and box once, not in
    every sample). A key whose value has changed since is encoded afresh."""

    __slots__ = ("static",)


def _canonical(value, level: int) -> str:
    """``reference_dumps(value)`` nested ``level`` containers deep: the top-level text with every
    line break indented by ``level`` steps (JSON strings never hold a raw line break)."""
    return reference_dumps(value)[:-1].replace("\n", "\n" + "  " * level)


def nested_json(value, level: int) -> str:
    """``value`` as :func:`dumps` writes it ``level`` containers deep (no trailing newline)."""
    return _encode(value, level)


def _encode(value, level: int) -> str:
    t = type(value)
    if t is float:
        return float.__repr__(value) if math.isfinite(value) else _canonical(value, level)
    if t is str:
        return encode_basestring_ascii(value)
    if t is int:
        return int.__repr__(value)
    if value is None:
        return "null"
    if t is bool:
        return "true" if value else "false"
    if isinstance(value, float):  # a float subclass (numpy.float64): json writes float.__repr__ too
        return float.__repr__(value) if math.isfinite(value) else _canonical(value, level)
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if t is list or t is tuple:
        if not value:
            return "[]"
        pad = "\n" + "  " * (level + 1)
        items = _float_items(value)  # the common case: a vector of finite floats
        if items is None:
            items = [_encode(v, level + 1) for v in value]
        return "[" + pad + ("," + pad).join(items) + "\n" + "  " * level + "]"
    if t is dict or isinstance(value, PreEncoded):
        return _encode_dict(value, level)
    return _canonical(value, level)


_NOT_FINITE = frozenset({"inf", "-inf", "nan"})


def _float_items(value) -> list[str] | None:
    """``float.__repr__`` of each item when every item is a finite float (or float subclass),
    else None: one C-level pass instead of two generator passes (``float.__repr__`` refuses
    anything that is not a float, ints and bools included)."""
    try:
        items = list(map(float.__repr__, value))
    except TypeError:
        return None
    return None if _NOT_FINITE.intersection(items) else items


def _encode_dict(d: dict, level: int) -> str:
    if not d:
        return "{}"
    keys = list(d)
    if not all(type(k) is str for k in keys):
        return _canonical(d, level)
    values, texts, at = getattr(d, "static", None) or (None, None, None)
    if at != level:
        texts = None
    pad = "\n" + "  " * (level + 1)
    items = []
    for k in sorted(keys):
        v = d[k]
        if texts is not None and k in texts and (v is values[k] or v == values[k]):
            text = texts[k]
        else:
            text = _encode(v, level + 1)
        items.append(encode_basestring_ascii(k) + ": " + text)
    return "{" + pad + ("," + pad).join(items) + "\n" + "  " * level + "}"


def _jsonable(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, (tuple, set)):
        return list(v)
    raise TypeError(f"not JSON serialisable: {type(v).__name__}")


def atomic_write_json(path: Path, obj) -> Path:
    return atomic_write_bytes(path, dumps(obj).encode("utf-8"))


# --- images ---------------------------------------------------------------------------------
def encode_image(rgb: np.ndarray, fmt: str = "jpg", quality: int = 95) -> bytes:
    """Encode an (H, W, 3) uint8 image as JPEG or PNG (deterministic encoder settings)."""
    from PIL import Image

    if rgb.dtype != np.uint8 or rgb.ndim != 3 or rgb.shape[2] not in (3, 4):
        raise ConfigError(f"image must be uint8 (H, W, 3), got {rgb.dtype} {rgb.shape}")
    buf = io.BytesIO()
    img = Image.fromarray(np.ascontiguousarray(rgb[..., :3]))
    if fmt in ("jpg", "jpeg"):
        img.save(buf, format="JPEG", quality=int(quality), subsampling=0, optimize=False)
    elif fmt == "png":
        img.save(buf, format="PNG", compress_level=6)
    else:
        raise ConfigError(f"image_format must be 'jpg' or 'png', got {fmt!r}")
    return buf.getvalue()


def npy_bytes(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def kind_file(kind: str) -> str:
    """The dataset file extension of a rendered kind, from its row of the render-kind table
    (engine/render_kinds.py): ``png`` for a colour image (``object_mask``), ``npy`` for data."""
    return "png" if render_kinds.get(kind).role == render_kinds.COLOR else "npy"


def kind_array(kind: str, array: np.ndarray) -> np.ndarray:
    """A rendered array in its row's dtype (depth: float32 cm), as every dataset stores it (a
    ``.npy`` of :func:`kind_bytes`, or an array of a video clip's ground-truth ``.npz``)."""
    return np.asarray(array).astype(render_kinds.get(kind).dtype)


def kind_bytes(kind: str, array: np.ndarray) -> bytes:
    """A rendered array as its dataset file (:func:`kind_file`): a colour kind as PNG, a data kind
    as ``.npy`` of :func:`kind_array`."""
    if kind_file(kind) == "png":
        return encode_image(array, "png")
    return npy_bytes(kind_array(kind, array))


# --- SpaRRTa's params file ------------------------------------------------------------------------
def intrinsics(cam: Camera) -> dict:
    """SpaRRTa's intrinsics block: a 50 mm-wide sensor, focal length from the horizontal FOV."""
    focal_mm = SENSOR_WIDTH_MM / (2.0 * math.tan(math.radians(cam.fov_deg) / 2.0))
    return {
        "sensor_width_mm": SENSOR_WIDTH_MM,
        "sensor_height_mm": SENSOR_WIDTH_MM * cam.height / cam.width,
        "focal_length_mm": focal_mm,
        "hfov_deg": float(cam.fov_deg),
        "vfov_deg": cam.vfov_deg,
    }


def pose_block(location: Sequence[float], rotation: Sequence[float]) -> dict:
    return {
        "location": dict(zip("xyz", (float(v) for v in location))),
        "rotation": dict(zip(("pitch", "yaw", "roll"), (float(v) for v in rotation))),
    }


def display_label(cls: str) -> str:
    """SpaRRTa-style actor label: ``fire_hydrant`` -> ``FireHydrant``, ``rock`` -> ``Rock``; a class
    declared by an asset pack uses its declared ``label`` (``assets_manifest.schema.class_label``)."""
    from sceneforge.assets_manifest.schema import class_label  # trimesh/scipy via assets_manifest, ~0.6 s

    return class_label(cls)


def params_json(env: str, triple_id: str, cam: Camera, actors: Mapping[str, dict], extra: Mapping) -> dict:
    """SpaRRTa's on-disk schema (``environment``, ``triple_id``, ``camera``, ``actors``) + our keys.

    ``actors`` maps an actor path to ``{"cls", "location", "rotation"}``; SpaRRTa's loader ignores
    keys it does not know, so ``extra`` (task, label, source_label, ...) sits at the top level.
    """
    cam_block = {"label": "Camera", **pose_block(cam.location, cam.rotation.as_tuple()), "intrinsics": intrinsics(cam)}
    acts = {path: {"label": display_label(a["cls"]), **pose_block(a["location"], a["rotation"])} for path, a in actors.items()}
    return {"environment": env, "triple_id": triple_id, "camera": cam_block, "actors": acts, **extra}


# --- splits ---------------------------------------------------------------------------------------
def assign_splits(labels: Sequence[str], groups: Sequence | None = None, pattern: Sequence[str] = SPLIT_PATTERN) -> list[str]:
    """80/10/10 stratified by label, deterministic (another ``pattern``: its own fractions).

    Without ``groups``: the k-th sample (in the given order) carrying a label goes to
    ``SPLIT_PATTERN[k % 10]``; with the four labels balanced (±1) overall, each split is too.

    With ``groups`` (one hashable key per sample: its scene), a whole group goes to one split: the
    k-th group, in order of first appearance, to ``SPLIT_PATTERN[k % 10]``. Why: the samples of a
    scene share its objects' placement, clutter and background with *different* labels; split
    apart, a probe that recognised the scene would be pushed to a scene-mate's label. (In the
    5,000-image study 27 % of test images had such a scene-mate in train; it did not move the
    numbers measurably there, see docs/notes/validation-journal.md, but a held-out split must not depend on it.)
    SpaRRTa-style groups hold one sample per label (labels cycle with the index), so each split
    stays balanced up to the last, partial group of each triple.
    """
    if groups is not None:
        if len(groups) != len(labels):
            raise ValueError(f"assign_splits: {len(labels)} labels but {len(groups)} group keys")
        order: dict = {}
        for g in groups:
            order.setdefault(g, pattern[len(order) % len(pattern)])
        return [order[g] for g in groups]
    seen: dict[str, int] = {}
    out = []
    for lab in labels:
        k = seen.get(lab, 0)
        seen[lab] = k + 1
        out.append(pattern[k % len(pattern)])
    return out


# --- the table ------------------------------------------------------------------------------------
def write_table(rows: Iterable[Mapping], out_dir: Path) -> list[Path]:
    """One row per sample → ``samples.parquet`` and ``metadata.csv`` (the same table).

    The CSV is named ``metadata.csv`` with ``file_name`` first so Hugging Face's ``imagefolder``
    loader picks it up (it refuses two metadata files of different types, hence the Parquet
    file's other name). Floats in the CSV keep 6 decimals; the Parquet file is exact.
    """
    import pandas as pd

    df = pd.DataFrame(list(rows))
    if "file_name" in df.columns:
        df = df[["file_name"] + [c for c in df.columns if c != "file_name"]]
    pq = io.BytesIO()
    df.to_parquet(pq, index=False, engine="pyarrow")
    csv = df.to_csv(index=False, lineterminator="\n", float_format="%.6f")
    return [
        atomic_write_bytes(Path(out_dir) / "samples.parquet", pq.getvalue()),
        atomic_write_bytes(Path(out_dir) / "metadata.csv", csv.encode("utf-8")),
    ]


def flatten(prefix: str, d: Mapping) -> dict:
    """``{"a": {"b": 1}}`` → ``{"prefix_a_b": 1}`` for table columns."""
    out = {}
    for k, v in d.items():
        key = f"{prefix}_{k}" if prefix else str(k)
        if isinstance(v, Mapping):
            out.update(flatten(key, v))
        else:
            out[key] = v
    return out
