"""Export a sceneforge SpaRRTa dataset in SpaRRTa's own training layout (turhancan97/SpaRRTa).

Their loader (``sparrta/datasets/unreal_position.py``, Hydra ``configs/dataset/unreal_position.yaml``)
reads ``$SPARRTA_DATA_ROOT/<environment>/mid-objects/img_NNNN.jpg`` with ``params_NNNN.json`` beside
it, where ``<environment>`` is ``forest``, ``forest_2``, ``forest_3``... (one folder per triple), and
computes the label itself from the positions of the actors labelled ``reference_label`` and
``target_label`` (and ``Human`` for the allocentric perspective). Ego and allo samples therefore
share one folder; the perspective is chosen by their config. Only ``*.jpg``/``*.jpeg`` are read.

Our layout is ``<env>/<task>/<triple>/img_NNNN.jpg``; this module maps it:

* folder: :data:`SPARRTA_FOLDERS` (their ``scripts/position_config.yaml`` environment → labels
  table) by ``(env, source class, target class)``; a triple they do not have goes to
  ``<env>_<triple_id>``.
* actor labels: :func:`sparrta_label` (``fire_hydrant`` → ``Hydrant`` as their ``city_2`` config
  names it; everything else CamelCase as ours: ``trash_bin`` → ``TrashBin``).
* numbering: per folder, ego samples first then allo, each in our index order, ``img_0000``...

Everything is written into a temporary directory next to ``out`` and renamed at the end, so a
failed export leaves nothing behind. Mapping documented in docs/datasets.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.core.paths import check_component, inside
from sceneforge.scenarios.output.writers import display_label

# (env, source class, target class) → SpaRRTa's environment folder (their position_config.yaml).
SPARRTA_FOLDERS = {
    ("bridge", "tree", "truck"): "bridge",
    ("bridge", "trash_bin", "bike"): "bridge_2",
    ("bridge", "trash_bin", "vespa"): "bridge_3",
    ("forest", "tree", "rock"): "forest",
    ("forest", "tent", "bear"): "forest_2",
    ("forest", "rock", "fox"): "forest_3",
    ("desert", "rock", "truck"): "desert",
    ("desert", "cactus", "camel"): "desert_2",
    ("desert", "barrel", "camel"): "desert_3",
    ("winter_town", "tree", "truck"): "winter_town",
    ("winter_town", "snowman", "husky"): "winter_town_2",
    ("winter_town", "tree", "deer"): "winter_town_3",
    ("city", "cone", "vespa"): "city",
    ("city", "fire_hydrant", "taxi"): "city_2",
    ("city", "cone", "bike"): "city_3",
}
# Classes whose SpaRRTa label is not our CamelCase display label.
SPARRTA_LABELS = {"fire_hydrant": "Hydrant"}
_TASK_ORDER = {"ego": 0, "allo": 1}


def sparrta_label(cls: str) -> str:
    return SPARRTA_LABELS.get(cls, display_label(cls))


def sparrta_folder(env: str, source_class: str, target_class: str, triple_id: str) -> str:
    """SpaRRTa's folder for a triple, else ``<env>_<triple_id>``: one path component (issue 48:
    ``env=../../pwn`` or ``triple_id=x/../../pwn`` wrote outside OUT), else ConfigError."""
    folder = SPARRTA_FOLDERS.get((env, source_class, target_class))
    if folder is not None:
        return folder
    return check_component(f"{env}_{triple_id}", f"folder <env>_<triple_id> of env {str(env)[:60]!r}, triple_id")


def _check_row(r: dict) -> dict:
    """A table row's fields that become names and numbers, checked before anything is written:
    ``env``/``triple_id`` single path components, ``unit_index`` a whole number (``NaN`` and
    ``"abc"`` used to be tracebacks). Returns the row with ``unit_index`` an int."""
    where = r["_where"]
    for field in ("env", "triple_id", "source_class", "target_class", "task"):
        check_component(r[field], f"{where} {field}")
    value = r["unit_index"]
    try:
        index = int(value) if not isinstance(value, bool) and float(value) == int(value) else None
    except (TypeError, ValueError, OverflowError):
        index = None
    if index is None or index < 0:
        raise ConfigError(f"{where} unit_index {str(value)[:40]!r}: expected a whole number >= 0")
    return {**r, "unit_index": index, "_folder": sparrta_folder(r["env"], r["source_class"], r["target_class"], r["triple_id"])}


def _read_table(data: Path):
    import pandas as pd

    for name in ("samples.parquet", "metadata.csv"):
        p = data / name
        if p.is_file():
            return (pd.read_parquet(p) if name.endswith(".parquet") else pd.read_csv(p)), p
    raise ConfigError(f"{data}: no samples.parquet or metadata.csv (not a sceneforge SpaRRTa dataset)")


def _relabel(params: dict, label_of: dict[str, str]) -> dict:
    """Actor labels → SpaRRTa's names (by our display label); everything else kept."""
    out = dict(params)
    out["actors"] = {k: {**v, "label": label_of.get(v.get("label"), v.get("label"))} for k, v in params.get("actors", {}).items()}
    return out


def _jpeg_bytes(src: Path) -> bytes:
    if src.suffix.lower() in (".jpg", ".jpeg"):
        return src.read_bytes()
    import io

    from PIL import Image

    buf = io.BytesIO()
    Image.open(src).convert("RGB").save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def _sample_paths(data: Path, r: dict) -> tuple[Path, Path]:
    """A row's image and params file, both inside ``data`` (:func:`core.paths.inside`: a table
    naming ``../../x`` or ``/etc/...`` is refused in one line, not copied into the export)."""
    image = inside(data, r["file_name"], f"{r['_where']} file_name")
    params_file = r.get("params_file")
    if not isinstance(params_file, str) or not params_file:
        name = Path(r["file_name"])
        return image, inside(
            data,
            str(name.with_name(name.name.replace("img_", "params_").rsplit(".", 1)[0] + ".json")),
            f"{r['_where']} file_name",
        )
    return image, inside(data, params_file, f"{r['_where']} params_file")


def _read_params(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise ConfigError(f"{path}: cannot read the sample's params ({type(e).__name__}: {e})") from None


def export_sparrta(data: Path, out: Path, *, replace: bool = False) -> dict[str, int]:
    """Write ``data`` (a finished ``sceneforge generate`` output) to ``out`` in SpaRRTa's layout.

    Returns ``{folder: samples}``. ``out`` must not exist yet (or be an empty directory) unless
    ``replace`` (what ``generate --layout sparrta`` uses: a resumed job rewrites it whole).
    """
    data, out = Path(data), Path(out)
    if out.exists() and not replace and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"{out}: exists and is not empty (export writes a fresh directory)")
    table, source = _read_table(data)
    needed = {"file_name", "env", "task", "triple_id", "source_class", "target_class", "unit_index"}
    missing = sorted(needed - set(table.columns))
    if missing:
        raise ConfigError(f"{data}: table lacks column(s) {missing}")
    table = table.assign(_where=[f"{source} row {i + 1}" for i in range(len(table))])
    rows = sorted(
        (_check_row(r) for r in table.to_dict("records")),
        key=lambda r: (r["_folder"], _TASK_ORDER.get(r["task"], 2), r["triple_id"], r["unit_index"]),
    )
    paths = [_sample_paths(data, r) for r in rows]  # every row checked before anything is written
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    counts: dict[str, int] = {}
    try:
        for r, (image, params_path) in zip(rows, paths):
            folder = r["_folder"]
            k = counts.get(folder, 0)
            counts[folder] = k + 1
            params = _read_params(params_path)
            label_of = {display_label(c): sparrta_label(c) for c in (r["source_class"], r["target_class"])}
            dest = tmp / folder / "mid-objects"
            dest.mkdir(parents=True, exist_ok=True)
            (dest / f"img_{k:04d}.jpg").write_bytes(_jpeg_bytes(image))
            (dest / f"params_{k:04d}.json").write_text(json.dumps(_relabel(params, label_of), indent=1))
        old = None
        if out.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.old.", dir=out.parent))
            os.replace(out, old / "x")
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return counts
