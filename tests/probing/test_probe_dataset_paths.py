"""Issue 39 item 1 (probing side): a table row whose ``file_name`` leaves the dataset is refused
in one line naming the table, row and value; it used to be read (``/etc/...`` as an image)."""

from __future__ import annotations

import pandas as pd
import pytest

from sceneforge.core.errors import PathSecurityError
from sceneforge.probing.data import read_metadata


@pytest.mark.parametrize("value", ["../x/victim.jpg", "/etc/hostname"])
def test_file_name_outside_the_dataset_is_refused(tmp_path, value):
    pd.DataFrame(
        [
            {"file_name": "img_0.png", "label": "left", "split": "train", "env": "e", "task": "ego", "triple": "t"},
            {"file_name": value, "label": "left", "split": "train", "env": "e", "task": "ego", "triple": "t"},
        ]
    ).to_csv(tmp_path / "metadata.csv", index=False)
    with pytest.raises(PathSecurityError) as ei:
        read_metadata(tmp_path)
    assert str(ei.value).startswith(f"{tmp_path / 'metadata.csv'} row 2 file_name {value!r}")
