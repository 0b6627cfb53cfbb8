"""The pieces a resumed study relies on: torn last lines, row identity, `layers: auto`."""

from __future__ import annotations

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.study.results import append_row, read_rows, row_key
from sceneforge.study.run import _resolve, auto_layers


def test_a_torn_last_line_is_dropped_and_cut_but_a_bad_middle_line_is_an_error(tmp_path):
    path = tmp_path / "results.jsonl"
    rows = [
        {"kind": "model", "backbone": "a", "dataset": "d", "env": "e", "task": "ego", "layer": k, "n_train": 9} for k in (1, 2)
    ]
    for r in rows:
        append_row(path, r)
    whole = path.read_bytes()
    path.write_bytes(whole + b'{"kind": "mo')
    assert read_rows(path) == rows and path.read_bytes() != whole  # read only: the file is left as it is
    assert read_rows(path, repair=True) == rows and path.read_bytes() == whole  # repaired: cut
    path.write_bytes(whole + b"not json\n")  # a kill between the bytes and ... a newline: still the last line
    assert read_rows(path, repair=True) == rows and path.read_bytes() == whole
    path.write_bytes(b"garbage\n" + whole)
    with pytest.raises(ConfigError, match="line 1 is not a JSON row"):
        read_rows(path)
    assert row_key(rows[0]) == ("model", "a", "d", "e", "ego", 1, 9)


def test_layers_auto_is_the_quarter_depth_blocks_and_negative_layers_count_from_the_end():
    assert auto_layers(12) == [3, 6, 9, 12]
    assert auto_layers(24) == [6, 12, 18, 24]
    assert auto_layers(5) == [1, 2, 4, 5]  # EfficientNet's five stages
    assert _resolve(("auto",), 12) == [3, 6, 9, 12]
    assert _resolve((-1, 9), 12) == [9, 12]
    with pytest.raises(ConfigError, match=r"\[13\] out of range \(1..12"):
        _resolve((13,), 12)
