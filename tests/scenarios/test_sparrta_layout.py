"""`sceneforge export --layout sparrta`: SpaRRTa's training loader finds our samples with our labels.

The loader's path and label logic (turhancan97/SpaRRTa sparrta/datasets/unreal_position.py) is
re-implemented here from its description, not copied: jpgs in `<root>/<env>/mid-objects/`, the
params file of the same number, actors found by label, X negated, observer → reference vs
reference → target angle, front < 45-amb, back > 135+amb, left if the signed angle is positive.
"""

import json
import math
import re
from pathlib import Path

import pytest

from sceneforge.core.errors import ConfigError
from sparrta_helpers import generate
from sceneforge.scenarios.sparrta.layout import export_sparrta

CFG = {"envs": ["city"], "tasks": ["ego", "allo"], "n": 6, "seed": 3, "layout": "sparrta"}
THEIR_LABELS = {"city": ("Cone", "Vespa"), "city_2": ("Hydrant", "Taxi"), "city_3": ("Cone", "Bike")}


def their_label(observer, ref, tgt, amb):
    f = (ref[0] - observer[0], ref[1] - observer[1])
    r = (tgt[0] - ref[0], tgt[1] - ref[1])
    ang = math.degrees(math.atan2(f[0] * r[1] - f[1] * r[0], f[0] * r[0] + f[1] * r[1]))
    a = abs(ang)
    if 45 - amb <= a <= 45 + amb or 135 - amb <= a <= 135 + amb:
        return "Ambiguous"
    return "Front" if a < 45 - amb else "Back" if a > 135 + amb else ("Left" if ang > 0 else "Right")


def their_samples(root: Path, env: str, reference: str, target: str, perspective: str, amb: int):
    out = []
    for img in sorted((root / env / "mid-objects").glob("*.jpg")):
        n = re.search(r"img_(\d+)\.jpg$", img.name).group(1)
        params = json.loads((img.parent / f"params_{n}.json").read_text())
        pos = {a["label"]: a["location"] for a in params["actors"].values()}
        if reference not in pos or target not in pos:
            continue
        xy = lambda p: (-p["x"], p["y"])  # noqa: E731  (their X inversion)
        observer = params["camera"]["location"] if perspective == "camera" else pos.get("Human")
        if observer is None:
            continue
        out.append((params, their_label(xy(observer), xy(pos[reference]), xy(pos[target]), amb)))
    return out


@pytest.fixture(scope="module")
def exported(server, tmp_path_factory):
    data = tmp_path_factory.mktemp("sparrta_layout") / "ds"
    generate(CFG, data, server=server.address, progress=False)
    out = data.parent / "sparrta"
    return data, out, export_sparrta(data, out)


def test_their_loader_finds_every_sample_with_our_label(exported):
    data, out, counts = exported
    assert counts == {"city": 4, "city_2": 4, "city_3": 4}  # ego + allo per triple in one folder
    assert sorted(p.name for p in out.iterdir()) == ["city", "city_2", "city_3"]
    for env, (ref, tgt) in THEIR_LABELS.items():
        ego = their_samples(out, env, ref, tgt, "camera", amb=0)
        allo = their_samples(out, env, ref, tgt, "human", amb=0)
        assert len(ego) == counts[env] and len(allo) == sum(p["task"] == "allo" for p, _ in ego)
        for params, label in ego:
            if params["task"] == "ego":
                assert label.lower() == params["label"], (env, params["index"])
        for params, label in allo:
            assert label.lower() == params["label"], (env, params["index"])
        # and with their configured ambiguity margins nothing is thrown away (ours are larger)
        assert all(l != "Ambiguous" for _, l in their_samples(out, env, ref, tgt, "camera", amb=10) if _["task"] == "ego")


def test_generate_layout_sparrta_writes_the_same_tree_as_export(exported):
    data, out, _ = exported
    inline = data / "sparrta"
    files = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(inline) for p in inline.rglob("*") if p.is_file()) and files
    assert all((out / f).read_bytes() == (inline / f).read_bytes() for f in files)


def test_layout_field_keeps_old_dataset_identity():
    from sceneforge.scenarios.sparrta.config import parse_config

    plain = {k: v for k, v in CFG.items() if k != "layout"}
    assert parse_config(plain).fingerprint() == parse_config({**plain, "layout": "sceneforge"}).fingerprint()
    assert parse_config(plain).fingerprint() != parse_config(CFG).fingerprint()
    with pytest.raises(ConfigError, match="layout"):
        parse_config({**plain, "layout": "kitti"})


def test_hydrant_is_named_as_in_their_city_2_config(exported):
    _, out, _ = exported
    labels = {
        a["label"]
        for p in (out / "city_2" / "mid-objects").glob("params_*.json")
        for a in json.loads(p.read_text())["actors"].values()
    }
    assert "Hydrant" in labels and "FireHydrant" not in labels


def test_export_refuses_a_non_empty_target_and_leaves_nothing(exported, tmp_path):
    data, out, _ = exported
    with pytest.raises(ConfigError, match="not empty"):
        export_sparrta(data, out)
    with pytest.raises(ConfigError, match="no samples.parquet"):
        export_sparrta(tmp_path, tmp_path / "x")
    assert not (tmp_path / "x").exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".x.")]
