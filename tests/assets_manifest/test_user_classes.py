"""Issue 13 item 3: classes are data.

A user pack may declare new classes (with the label text written into SpaRRTa records),
triples may use them, a user asset of an existing class joins that class instead of taking it
over, and an environment can pin a specific asset id.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from sceneforge.assets_manifest import AssetLibrary
from sceneforge.assets_manifest.schema import class_label, load_manifest
from sceneforge.core.errors import ConfigError

PACK = """\
pack: harbour_pack
defaults: {license: cc0-1.0, units: cm}
classes:
  lighthouse: {label: Lighthouse, description: a striped tower}
assets:
  - {id: dense_lighthouse, class: lighthouse, procedural: {generator: lamp_post}, size: {height_cm: 1200}}
  - {id: harbour_truck, class: truck, procedural: {generator: truck, params: {color: [200, 30, 30]}}, size: {length_cm: 650}}
"""


@pytest.fixture
def pack(tmp_path) -> Path:
    p = tmp_path / "harbour_pack.yaml"
    p.write_text(PACK)
    return p


def test_a_pack_declares_a_class_with_its_label(pack, tmp_path):
    m = load_manifest(pack)
    assert set(m.classes) == {"lighthouse"} and class_label("lighthouse") == "Lighthouse"
    assert class_label("fire_hydrant") == "FireHydrant"  # built-in default unchanged
    lib = AssetLibrary.default(cache_dir=tmp_path / "cache", extra_manifests=[pack])
    assert [i.id for i in lib.by_class("lighthouse")] == ["dense_lighthouse"]
    assert "lighthouse" in lib.classes()


def test_undeclared_or_builtin_class_is_one_clear_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(PACK.replace("classes:\n  lighthouse: {label: Lighthouse, description: a striped tower}\n", ""))
    with pytest.raises(
        ConfigError,
        match=r"bad.yaml:4: assets\[0\].class .asset .dense_lighthouse..: unknown class .lighthouse.; "
        r"declare it under 'classes:'",
    ):
        load_manifest(bad)
    bad.write_text(PACK.replace("lighthouse: {label", "truck: {label"))
    with pytest.raises(ConfigError, match="class 'truck' is built in"):
        load_manifest(bad)
    bad.write_text(PACK.replace("lighthouse: {label", "Light-House: {label"))
    with pytest.raises(ConfigError, match="lower-case"):
        load_manifest(bad)


def test_a_user_asset_joins_its_class_instead_of_taking_it_over(pack, tmp_path):
    lib = AssetLibrary.default(cache_dir=tmp_path / "empty-cache", extra_manifests=[pack])
    trucks = [i.id for i in lib.by_class("truck")]
    assert "harbour_truck" in trucks and "proc_truck" in trucks and "proc_truck_blue" in trucks


def _env(tmp_path: Path, source: str, target: str, assets: str = "[harbour_pack.yaml]") -> Path:
    p = tmp_path / "harbour.yaml"
    p.write_text(
        textwrap.dedent(f"""\
        name: harbour
        assets: {assets}
        landmarks:
          - {{class: dense_lighthouse, location_cm: [0, 4000]}}
        triples:
          - {{id: pair, source: {source}, target: {target}}}
        """)
    )
    return p


def test_env_uses_a_user_class_and_pins_asset_ids(pack, tmp_path, monkeypatch):
    from sceneforge.scenarios.world.environments import load_env

    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "cache"))
    env = load_env(_env(tmp_path, "lighthouse", "proc_truck_blue"))
    assert env.variants("lighthouse") == ["dense_lighthouse"]
    assert env.variants("proc_truck_blue") == ["proc_truck_blue"]  # pinned: this asset only
    assert "harbour_truck" in env.variants("truck")
    with pytest.raises(ConfigError, match="unknown class\\(es\\) or asset id\\(s\\) no_such_thing"):
        load_env(_env(tmp_path, "no_such_thing", "truck"))
    with pytest.raises(ConfigError, match="lighthouse"):  # without the pack: unknown
        load_env(_env(tmp_path, "lighthouse", "truck", assets="[]"))


@pytest.mark.render
def test_dataset_with_a_user_class_writes_its_label(pack, tmp_path, monkeypatch):
    """End to end: the env file by path; the runner starts the server with the env's packs."""
    from sceneforge.renderfarm import run_job

    monkeypatch.setenv("SCENEFORGE_CACHE", str(tmp_path / "cache"))
    envs = tmp_path / "envs"
    envs.mkdir()
    (envs / "harbour_pack.yaml").write_text(PACK)
    env_file = _env(envs, "lighthouse", "proc_truck_blue")
    out = tmp_path / "ds"
    summary = run_job(
        "sparrta",
        {"envs": [str(env_file)], "tasks": ["ego"], "n": 2, "seed": 1, "size": 64},
        out,
        backend="inline",
        progress=False,
    )
    assert not summary["failed"], summary["failed"]
    params = [json.loads(p.read_text()) for p in sorted(out.rglob("params_*.json"))]
    assert len(params) == 2
    for prm in params:
        assert prm["source_label"] == "Lighthouse" and prm["target_label"] == "Truck"
        assert prm["assets"]["source"] == "dense_lighthouse" and prm["assets"]["target"] == "proc_truck_blue"
        assert prm["actors"]["/sceneforge/actors/source"]["label"] == "Lighthouse"
