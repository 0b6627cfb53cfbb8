"""Manifest validation: a good manifest loads; each kind of mistake names file, line and field."""

from __future__ import annotations

import textwrap

import pytest
import trimesh

from sceneforge.assets_manifest import AssetLibrary
from sceneforge.assets_manifest.schema import load_manifest
from sceneforge.core.errors import AssetError, ConfigError

GOOD = """\
pack: mine
defaults: {license: cc-by-4.0, source: "https://example.org"}
assets:
  - id: box_truck
    class: truck
    mesh: box.obj
    units: m
    up: "+y"
    forward: "+z"
    size: {length_cm: 700}
    attribution: "Box by Jane"
    tags: [vehicle]
    unreal_class: /Game/Vehicles/BP_Truck.BP_Truck_C
  - id: gen_cone
    class: cone
    procedural: {generator: traffic_cone, params: {height_cm: 60}}
    license: cc0-1.0
"""


def write(tmp_path, text: str, name: str = "pack.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


@pytest.fixture
def good(tmp_path):
    trimesh.creation.box(extents=(2.0, 3.0, 7.0)).export(tmp_path / "box.obj")
    return write(tmp_path, GOOD)


def test_good_manifest_loads_with_defaults_applied(good):
    m = load_manifest(good)
    assert m.pack == "mine" and [a.id for a in m.assets] == ["box_truck", "gen_cone"]
    truck = m.assets[0]
    assert truck.cls == "truck" and truck.license == "cc-by-4.0" and truck.source == "https://example.org"
    assert truck.unreal_class.startswith("/Game/") and truck.size.length_cm == 700
    assert m.assets[1].license == "cc0-1.0"  # asset value beats the default


def _error(tmp_path, text: str, exc=ConfigError) -> str:
    with pytest.raises(exc) as ei:
        load_manifest(write(tmp_path, text))
    return str(ei.value)


def test_unknown_class_names_file_line_field_and_asset(tmp_path):
    msg = _error(tmp_path, GOOD.replace("class: truck", "class: spaceship"))
    assert "pack.yaml:5:" in msg and "assets[0].class" in msg and "'box_truck'" in msg and "spaceship" in msg


def test_bad_units_listed(tmp_path):
    msg = _error(tmp_path, GOOD.replace("units: m", "units: furlong"))
    assert "pack.yaml:7:" in msg and "assets[0].units" in msg and "furlong" in msg and "cm" in msg


def test_bad_yaml_gives_line(tmp_path):
    msg = _error(tmp_path, GOOD.replace("  - id: gen_cone", "  - id: [gen_cone"))
    assert "pack.yaml:" in msg and "bad YAML" in msg
    assert int(msg.split("pack.yaml:")[1].split(":")[0]) >= 13


def test_missing_license_and_two_geometry_sources(tmp_path):
    msg = _error(tmp_path, GOOD.replace("    license: cc0-1.0\n", "    mesh: x.obj\n"))
    assert "assets[1]" in msg and "license" in msg and "exactly one of mesh, procedural, build" in msg


def test_size_needs_exactly_one_target(tmp_path):
    msg = _error(tmp_path, GOOD.replace("{length_cm: 700}", "{length_cm: 700, height_cm: 300}"))
    assert "assets[0].size" in msg and "exactly one" in msg


def test_bad_axis_and_same_axes(tmp_path):
    assert "assets[0].up" in _error(tmp_path, GOOD.replace('up: "+y"', 'up: "+w"'))
    assert "different axes" in _error(tmp_path, GOOD.replace('forward: "+z"', 'forward: "-y"'))


def test_duplicate_ids_and_unknown_field(tmp_path):
    assert "duplicate asset id" in _error(tmp_path, GOOD.replace("id: gen_cone", "id: box_truck"))
    msg = _error(tmp_path, GOOD.replace("    tags: [vehicle]", "    colour: red"))
    assert "assets[0].colour" in msg and "pack.yaml:12:" in msg


def test_missing_file_and_not_a_mapping(tmp_path):
    assert "file not found" in str(pytest.raises(ConfigError, load_manifest, tmp_path / "nope.yaml").value)
    assert "must be a mapping" in _error(tmp_path, "- a\n- b\n")


def test_missing_mesh_file_names_manifest_asset_and_field(good):
    (good.parent / "box.obj").unlink()
    lib = AssetLibrary.from_manifests([good], cache_dir=good.parent / "cache")
    with pytest.raises(AssetError) as ei:
        lib.mesh("box_truck")
    assert "pack.yaml" in str(ei.value) and "box_truck" in str(ei.value) and "mesh" in str(ei.value)


def test_unknown_generator_and_param(tmp_path):
    lib = AssetLibrary.from_manifests([write(tmp_path, GOOD.replace("traffic_cone", "warp_drive"))], tmp_path)
    with pytest.raises(ConfigError, match="unknown procedural generator 'warp_drive'"):
        lib.mesh("gen_cone")
    lib = AssetLibrary.from_manifests([write(tmp_path, GOOD.replace("height_cm: 60", "hieght_cm: 60"))], tmp_path)
    with pytest.raises(ConfigError, match="unknown params"):
        lib.mesh("gen_cone")


def test_unreadable_mesh_file(tmp_path, good):
    (good.parent / "box.obj").write_bytes(b"\x00\x01garbage")
    lib = AssetLibrary.from_manifests([good], cache_dir=tmp_path / "cache")
    with pytest.raises(AssetError, match="box"):
        lib.mesh("box_truck")
