"""Issue 13 item 4 (names that become paths) and item 11's environment-file errors.

``id: ../../../escaped_triple`` in a user environment wrote outside ``--out`` with exit 0; a
directory symlink inside ``--out`` pointing elsewhere was followed.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from sceneforge.core.errors import ConfigError, PathSecurityError
from sceneforge.core.paths import check_component, confined
from sceneforge.scenarios.world.environments import load_env

BASE = "name: {name}\ntriples:\n  - {{id: '{tid}', source: rock, target: truck}}\n"


def _env(tmp_path: Path, name="harbour", tid="rock_truck", extra="") -> Path:
    p = tmp_path / "envs" / "harbour.yaml"
    p.parent.mkdir(exist_ok=True)
    p.write_text(BASE.format(name=name, tid=tid) + textwrap.dedent(extra))
    return p


@pytest.mark.parametrize("tid", ["../../../escaped_triple", "a/b", ".hidden", "-rf", "", "x" * 129, "a b"])
def test_triple_id_that_is_not_a_directory_name_is_refused(tmp_path, tid):
    with pytest.raises(ConfigError, match=r"harbour.yaml:3: triples\[0\].id: .*triple id") as ei:
        load_env(_env(tmp_path, tid=tid))
    assert "\n" not in str(ei.value)


def test_env_name_with_a_path_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="environment name"):
        load_env(_env(tmp_path, name="../../up"))


def test_generate_with_an_escaping_triple_writes_nothing(tmp_path):
    from sparrta_helpers import generate

    out = tmp_path / "a" / "b" / "out"
    with pytest.raises(ConfigError, match="triple id"):
        generate(
            {"envs": [str(_env(tmp_path, tid="../../../escaped_triple"))], "tasks": ["ego"], "n": 1},
            out,
            server="127.0.0.1:1",
            progress=False,
        )
    assert not (tmp_path / "escaped_triple").exists() and not out.exists()


def test_confined_refuses_symlinks_leaving_the_root(tmp_path):
    root, outside = tmp_path / "out", tmp_path / "elsewhere"
    (root / "inside").mkdir(parents=True)
    outside.mkdir()
    (root / "desert").symlink_to(outside, target_is_directory=True)
    (root / "alias").symlink_to(root / "inside", target_is_directory=True)
    with pytest.raises(PathSecurityError, match="symlink to .*elsewhere.*outside the output directory"):
        confined(root, "desert/ego/t/img_0000.jpg")
    assert confined(root, "alias/x.jpg") == root / "alias" / "x.jpg"
    assert confined(root, "new/dir/x.jpg") == root / "new" / "dir" / "x.jpg"
    for bad in ("../x", "/etc/passwd", "a/../../x"):
        with pytest.raises(PathSecurityError):
            confined(root, bad)
    assert check_component("rock_truck", "triple id") == "rock_truck"


def test_generate_does_not_follow_a_symlinked_env_dir_out_of_out(server, tmp_path):
    from sparrta_helpers import generate

    out, outside = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    outside.mkdir()
    (out / "desert").symlink_to(outside, target_is_directory=True)
    with pytest.raises(PathSecurityError, match="outside the output directory"):
        generate(
            {"envs": ["desert"], "tasks": ["ego"], "n": 1, "size": 64, "seed": 3}, out, server=server.address, progress=False
        )
    assert list(outside.iterdir()) == []


# --- item 11: environment-file values ---------------------------------------------------------
def test_huge_ground_extent_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as ei:
        load_env(_env(tmp_path, extra="ground: {extent_cm: 1.0e+30}\n"))
    msg = str(ei.value)
    assert "harbour.yaml:4" in msg and "ground.extent" in msg and "outside the allowed range" in msg
    assert "\n" not in msg


def test_env_name_typo_suggests_the_closest():
    with pytest.raises(ConfigError, match="unknown environment 'winter_twon'; did you mean 'winter_town'"):
        load_env("winter_twon")
