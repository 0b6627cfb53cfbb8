"""The study's leaderboard.html in a real browser (Debian's chromium driven by Playwright, as the
explorer's tests): it opens from disk with every leaderboard row, sorts by a column on a click,
filters, and its cells link to run reports that exist."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from study_helpers import make_data, run_study, write_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "explorer"))
from explorer_helpers import browser  # noqa: E402  (the explorer tests' chromium launcher)


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("lb")
    cfg = write_config(tmp / "study.yaml", make_data(tmp / "data"), layers=[1, 2])
    r = run_study(str(cfg), "--out", str(tmp / "out"), "--quiet")
    assert r.returncode == 0, r.stderr
    return tmp / "out"


def test_the_page_shows_every_row_sorts_and_links_to_reports(study, tmp_path):
    launch, kwargs = browser()
    df = pd.read_csv(study / "leaderboard.csv")
    copy = tmp_path / "moved"  # the folder travels whole: every link is relative
    shutil.copytree(study, copy, ignore=shutil.ignore_patterns("cache"))
    with launch() as p:
        b = p.chromium.launch(**kwargs)
        page = b.new_page(viewport={"width": 1400, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        page.goto((copy / "leaderboard.html").as_uri())
        page.wait_for_function("window.SF_READY === true")
        assert page.locator("#lb tbody tr").count() == len(df)
        assert page.get_attribute("#count", "data-count") == str(len(df))
        # sort by test_acc: descending on the second click
        col = page.locator("#lb thead th", has_text="test_acc")
        col.click()
        col.click()
        idx = list(df.columns.drop(["n_val", "dataset", "precision", "data_fingerprint", "protocol"])).index("test_acc")
        shown = [
            float(x)
            for x in page.eval_on_selector_all(f"#lb tbody tr td:nth-child({idx + 1})", "els => els.map(e => e.dataset.v)")
        ]
        assert shown == sorted(shown, reverse=True) and len(shown) == len(df)
        assert shown[0] == pytest.approx(df["test_acc"].max())
        # a filter: only that backbone's rows
        page.fill("#filter", "vit-b efficient")
        want = int(((df["backbone"] == "vit-b") & (df["head"] == "efficient")).sum())
        assert page.get_attribute("#count", "data-count") == str(want)
        # every report link resolves to a file in the moved folder
        links = page.eval_on_selector_all("#lb a", "els => els.map(e => e.href)")
        assert links and all(Path(l.replace("file://", "")).is_file() for l in links)
        assert page.locator(".plot img").count() >= 2  # bars per task, layer curves
        page.screenshot(path=tmp_path / "leaderboard.png")
        b.close()
    assert not errors, errors
    assert all(u.startswith("file://") for u in requests), [u for u in requests if not u.startswith("file://")]
    assert os.path.getsize(tmp_path / "leaderboard.png") > 0
