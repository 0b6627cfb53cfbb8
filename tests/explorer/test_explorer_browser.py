"""The explorer in a real browser: Debian's chromium driven by Playwright, the page from disk.

Screenshots go under the test's tmp dir (``screenshots/``; the path is printed, ``pytest -s``).
Without chromium or playwright the tests skip, naming the install command; ``.ci/run`` installs both.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import subprocess
import sys
import urllib.parse
import urllib.request

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from explorer_helpers import browser, generate_small
from sceneforge.explorer import build_explorer


@pytest.fixture(scope="module")
def dataset(server, tmp_path_factory):
    return generate_small(tmp_path_factory.mktemp("explore") / "data", server.address)


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), np.int16)


@pytest.mark.render
def test_filter_sample_mask_overlay_and_top_down_frame_in_chromium(dataset, tmp_path):
    launch, kwargs = browser()
    page_path = build_explorer(dataset, tmp_path / "explorer")
    df = pd.read_parquet(dataset / "samples.parquet")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    with launch() as p:
        b = p.chromium.launch(**kwargs)
        page = b.new_page(viewport={"width": 1300, "height": 1000})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        page.wait_for_function("window.SF_READY === true")
        assert page.get_attribute("#count", "data-count") == str(len(df))
        assert page.locator(".cell").count() == min(len(df), 48)
        page.screenshot(path=shots / "grid.png")

        # a facet and a range: the count is the table's
        page.check('input[data-facet="task"][value="1"]')  # vocabulary sorted: allo, ego
        page.fill('input[data-range="angle"][data-end="0"]', "60")
        page.press('input[data-range="angle"][data-end="0"]', "Tab")  # change fires on blur
        want = int(((df["task"] == "ego") & (df["angle_deg"] >= 60)).sum())
        assert 0 < want < len(df)
        assert page.get_attribute("#count", "data-count") == str(want)
        assert page.locator(".cell").count() == want
        page.screenshot(path=shots / "filtered.png")

        # a sample: the mask overlay changes the pixels of the view
        page.click(".cell >> nth=0")
        page.wait_for_selector("#stage")
        page.wait_for_function(
            "document.querySelector('#layer-image').complete && document.querySelector('#layer-mask').complete"
        )
        page.uncheck("#toggle-boxes")
        page.uncheck("#toggle-label")
        before = page.locator("#stage").screenshot(path=shots / "sample_plain.png")
        page.check("#toggle-mask")
        after = page.locator("#stage").screenshot(path=shots / "sample_mask.png")
        changed = np.any(np.abs(_pixels(before) - _pixels(after)) > 30, axis=2)
        assert changed.sum() > 100, f"mask overlay changed {changed.sum()} pixels"
        page.check("#toggle-depth")
        depth = page.locator("#stage").screenshot(path=shots / "sample_depth.png")
        assert np.any(np.abs(_pixels(depth) - _pixels(after)) > 30, axis=2).mean() > 0.5

        # the top-down map: the label's sector, at the angle of the line of sight
        frame = page.locator("#label-frame")
        assert frame.count() == 1
        row = df[df["index"] == int(page.get_attribute("#sample-key", "data-key"))].iloc[0]
        params = json.loads((dataset / row["params_file"]).read_text())
        obs = (params["actors"]["/sceneforge/actors/human"] if row["task"] == "allo" else params["camera"])["location"]
        src = params["actors"]["/sceneforge/actors/source"]["location"]
        f = math.degrees(math.atan2(src["y"] - obs["y"], src["x"] - obs["x"]))
        assert float(frame.get_attribute("data-f-deg")) == pytest.approx(f, abs=0.01)
        mine = page.locator(f"#frame-{row['label']}")
        box = mine.bounding_box()
        assert box and box["width"] > 10 and box["height"] > 10
        assert mine.get_attribute("fill-opacity") == "0.45"  # drawn as this sample's label
        assert page.locator("#label-frame .ambiguity").count() == 4
        page.locator("#topdown").screenshot(path=shots / "topdown.png")
        page.screenshot(path=shots / "sample.png", full_page=True)

        page.goto(page_path.as_uri() + "#plots")
        page.wait_for_selector("#balance-label")
        assert page.locator("#rejections rect").count() > 0
        page.screenshot(path=shots / "plots.png", full_page=True)
        b.close()
    print(f"explorer screenshots: {shots}")
    assert not errors, errors


@pytest.mark.render
def test_browse_serve_prints_its_loopback_address_and_serves_the_page(dataset, tmp_path):
    out = tmp_path / "explorer"
    proc = subprocess.Popen(
        [sys.executable, "-m", "sceneforge.cli", "browse", str(dataset), "--out", str(out), "--serve", "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[0].startswith("explorer: file://"), lines
        url = re.search(r"at (http://127\.0\.0\.1:\d+/\S+)", lines[1]).group(1)
        html = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "app.js" in html
        thumb = url.rsplit("/", 1)[0] + "/thumbs/0.jpg"
        assert Image.open(io.BytesIO(urllib.request.urlopen(thumb, timeout=30).read())).size[0] == 112
        first = dataset / pd.read_parquet(dataset / "samples.parquet")["file_name"][0]
        image = urllib.parse.urljoin(url, os.path.relpath(first, out))  # as the page refers to it
        assert urllib.request.urlopen(image, timeout=30).read() == first.read_bytes()
    finally:
        proc.terminate()
        proc.wait(timeout=30)
