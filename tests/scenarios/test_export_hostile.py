"""Issue 48 items 2, 3, 7, 8: ``sceneforge export`` on a dataset whose table was edited by someone
else. A table row is data: it may not make the export write outside OUT (``--layout sparrta``)
nor copy a file from outside the dataset into the export (``--format hf``); a value the export
cannot use is one line naming the table, row, field and value, exit 2, nothing written.

Each case starts from a real small dataset (``generate_small``, 12 desert samples) copied to the
test's tmp dir, then edits one row of its ``samples.parquet``.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from sceneforge.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "explorer"))
from explorer_helpers import generate_small  # noqa: E402

pytestmark = pytest.mark.render


@pytest.fixture(scope="module")
def small(server, tmp_path_factory):
    return generate_small(tmp_path_factory.mktemp("export_hostile") / "data", server.address)


def _edited(small: Path, tmp_path: Path, **row0) -> Path:
    """A copy of the dataset whose samples.parquet row 1 has ``row0``'s values."""
    data = tmp_path / "a" / "b" / "c" / "data"  # deep: a path that climbs 4 levels stays in tmp_path
    shutil.copytree(small, data, symlinks=True)
    df = pd.read_parquet(data / "samples.parquet")
    for k, v in row0.items():
        if k in df.columns and df[k].dtype != object and not isinstance(v, (int, float)):
            df[k] = df[k].astype(str)  # a string column (parquet wants one type per column)
        df.loc[0, k] = v
    df.to_parquet(data / "samples.parquet", index=False)
    return data


def _one_line_exit_2(capsys, argv: list[str], *words: str) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    err = "\n".join(line for line in lines if line.strip() and "examples/s" not in line)  # datasets' progress bars
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*") if p.is_file() or p.is_symlink()}


@pytest.mark.parametrize(
    "field, value",
    [
        ("env", "../../pwn"),
        ("env", "{abs}/pwn"),
        ("triple_id", "x/../../../../pwn"),
        ("triple_id", "{abs}/pwn"),
    ],
)
def test_sparrta_export_refuses_names_that_leave_out(small, tmp_path, capsys, field, value):
    """Item 2: ``env=../../pwn``, an absolute ``env`` or ``triple_id=x/../../../../pwn`` (with a
    class outside SpaRRTa's triples, so the folder is ``<env>_<triple_id>``) gave rc 0 and 16 files
    outside OUT."""
    value = value.format(abs=tmp_path / "abs")
    data = _edited(small, tmp_path, **{field: value, "source_class": "pwnclass"})
    out = data.parent / "out"
    before = _files(tmp_path)
    _one_line_exit_2(capsys, ["export", "--layout", "sparrta", str(data), str(out)], f"row 1 {field}", repr(value)[:40])
    assert _files(tmp_path) == before  # nothing written anywhere: not in OUT, not outside it
    assert not out.exists() and not [p for p in data.parent.iterdir() if p.name.startswith(".out.")]


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("unit_index", float("nan"), "unit_index 'nan': expected a whole number"),
        ("unit_index", "abc", "unit_index 'abc': expected a whole number"),
        ("env", "e" * 300, "row 1 env"),
    ],
)
def test_sparrta_export_bad_values_are_one_line(small, tmp_path, capsys, field, value, words):
    """Item 7: ``unit_index`` NaN or "abc" and a 300-character env were tracebacks."""
    data = _edited(small, tmp_path, **{field: value})
    _one_line_exit_2(capsys, ["export", "--layout", "sparrta", str(data), str(tmp_path / "out")], words)
    assert not (tmp_path / "out").exists()


def test_sparrta_export_of_the_untouched_dataset_still_works(small, tmp_path):
    assert main(["export", "--layout", "sparrta", str(small), str(tmp_path / "out")]) == 0
    assert len(list((tmp_path / "out").rglob("img_*.jpg"))) == len(pd.read_parquet(small / "samples.parquet"))


# --- --format hf ---------------------------------------------------------------------------------
def _canary(tmp_path: Path) -> Path:
    canary = tmp_path / "secret" / "canary.png"
    canary.parent.mkdir()
    shutil.copyfile(next(Path(__file__).resolve().parents[2].glob("docs/img/*.png")), canary)
    return canary


def _no_canary_bytes(root: Path, canary: Path) -> None:
    needle = canary.read_bytes()[-4096:]
    for p in root.rglob("*"):
        if p.is_file() and not p.is_symlink():  # the planted link itself is not an export
            assert needle not in p.read_bytes(), p


@pytest.mark.parametrize("how", ["absolute file_name", "symlink file_name", "absolute mask_file"])
def test_hf_export_refuses_files_outside_the_dataset(small, tmp_path, capsys, how):
    """Item 3: ``file_name=<absolute path>``, a symlink to one, or an absolute ``mask_file`` put the
    outside file's bytes into ``train/*.arrow`` and ``data/*.parquet`` (3/3 canaries)."""
    pytest.importorskip("datasets")
    canary = _canary(tmp_path)
    if how == "symlink file_name":
        data = _edited(small, tmp_path)
        link = data / "desert" / "link.png"
        link.symlink_to(canary)
        data = _edited_in_place(data, file_name="desert/link.png")
        field = "file_name"
    else:
        field = how.split()[1]
        data = _edited(small, tmp_path, **{field: str(canary)})
    out = tmp_path / "hf"
    _one_line_exit_2(capsys, ["export", "--format", "hf", str(data), str(out)], f"row 1 {field}")
    assert not out.exists() and not list(tmp_path.glob(".hf.*"))
    _no_canary_bytes(tmp_path / "a", canary)


def _edited_in_place(data: Path, **row0) -> Path:
    df = pd.read_parquet(data / "samples.parquet")
    for k, v in row0.items():
        df.loc[0, k] = v
    df.to_parquet(data / "samples.parquet", index=False)
    return data


@pytest.mark.parametrize(
    "field, value, words",
    [
        ("split", "holdout", "row 1 split 'holdout': expected one of train, val, test"),
        ("label", "above", "row 1 label 'above': expected one of front, back, left, right"),
        ("file_name", "desert/ego/rock_truck/img_9999.jpg", "row 1 file_name 'desert/ego/rock_truck/img_9999.jpg': no such file"),
    ],
)
def test_hf_export_refuses_what_it_would_drop_or_trip_on(small, tmp_path, capsys, field, value, words):
    """Items 7-8: a split other than train/val/test was silently dropped, a label outside
    front/back/left/right and a missing image were tracebacks."""
    pytest.importorskip("datasets")
    data = _edited(small, tmp_path, **{field: value})
    _one_line_exit_2(capsys, ["export", "--format", "hf", str(data), str(tmp_path / "hf")], words)
    assert not (tmp_path / "hf").exists() and not list(tmp_path.glob(".hf.*"))


@pytest.fixture
def small_disk(small_disk_of):
    return small_disk_of("64k")


def test_hf_export_onto_a_full_disk_is_one_line_and_leaves_no_temp_dir(small, small_disk, capsys):
    """Item 7: a full disk was a traceback and left ``.OUT.PID.tmp`` behind."""
    pytest.importorskip("datasets")
    _one_line_exit_2(capsys, ["export", "--format", "hf", str(small), str(small_disk / "hf")], "No space left on device")
    assert list(small_disk.iterdir()) == []


def test_sparrta_export_onto_a_full_disk_is_one_line_and_leaves_nothing(small, small_disk, capsys):
    """Item 7: export onto a full disk was a traceback."""
    _one_line_exit_2(capsys, ["export", "--layout", "sparrta", str(small), str(small_disk / "sp")], "No space left on device")
    assert list(small_disk.iterdir()) == []
