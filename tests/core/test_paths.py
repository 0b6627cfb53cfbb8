"""Issue 39 item 1: :func:`core.paths.inside`, the one check every reader of a dataset table or
scene record uses before it reads or writes a path the table names."""

from __future__ import annotations

import os

import pytest

from sceneforge.core.errors import PathSecurityError, SceneforgeError
from sceneforge.core.paths import inside


def test_relative_paths_below_the_root_pass(tmp_path):
    assert inside(tmp_path, "a/b/img.jpg", "t row 1 file_name") == tmp_path / "a/b/img.jpg"
    assert inside(tmp_path, "a/../img.jpg", "t row 1 file_name") == tmp_path / "a/../img.jpg"  # stays inside


@pytest.mark.parametrize(
    "value, says",
    [
        ("../x/victim.jpg", "outside the dataset"),
        ("a/../../victim.jpg", "outside the dataset"),
        ("/etc/hostname", "absolute path"),
        ("..", "outside the dataset"),
        ("", "not a file path"),
        (float("nan"), "not a file path"),
        (None, "not a file path"),
        (7, "not a file path"),
    ],
)
def test_escapes_and_non_paths_are_one_line_naming_where(tmp_path, value, says):
    with pytest.raises(PathSecurityError) as ei:
        inside(tmp_path / "ds", value, "ds/metadata.csv row 3 mask_file")
    msg = str(ei.value)
    assert isinstance(ei.value, SceneforgeError) and "\n" not in msg
    assert msg.startswith("ds/metadata.csv row 3 mask_file ") and says in msg


def test_a_symlink_that_points_out_is_refused_one_inside_is_not(tmp_path):
    ds = tmp_path / "ds"
    (ds / "real").mkdir(parents=True)
    os.symlink(tmp_path, ds / "out")
    os.symlink(ds / "real", ds / "alias")
    with pytest.raises(PathSecurityError, match="outside the dataset"):
        inside(ds, "out/victim.jpg", "t row 1 file_name")
    assert inside(ds, "alias/img.jpg", "t row 1 file_name") == ds / "alias/img.jpg"
