"""Issue 47 item 8, the explorer in Debian's chromium (Playwright) on a small `videos` dataset: the
question-category facet shows the categories' names (it showed codes ``0,3,4,5``), the sidebar
does not scroll sideways on long values, and no axis label of a plot is cut off."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from explorer_helpers import browser
from sceneforge.explorer import build_explorer


@pytest.fixture(scope="module")
def videos(tmp_path_factory):
    out = tmp_path_factory.mktemp("videos") / "v"
    cmd = [sys.executable, "-m", "sceneforge.cli", "videos", "--env", "desert", "--n", "3", "--out", str(out)]
    r = subprocess.run(
        cmd + ["--inline", "--frames", "4", "--fps", "2", "--size", "64", "--quiet", "--no-fetch"], capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-2000:]
    return out


@pytest.mark.render
def test_categories_by_name_sidebar_without_sideways_scroll_and_whole_axis_labels(videos, tmp_path):
    names = set(json.loads((videos / "dataset_card.json").read_text())["categories"].values())
    launch, kwargs = browser()
    page_path = build_explorer(videos, tmp_path / "explorer")
    with launch() as p:
        b = p.chromium.launch(**kwargs)
        page = b.new_page(viewport={"width": 1300, "height": 900})
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(page_path.as_uri())
        page.wait_for_function("window.SF_READY === true")
        values = page.eval_on_selector_all('fieldset[data-facet="categories"] label', "ls => ls.map(l => l.title)")
        assert values, "no categories facet"
        for v in values:  # names joined by " + ", never bare codes
            assert set(v.split(" + ")) <= names, v
        scroll = page.eval_on_selector("#filters", "a => [a.scrollWidth, a.clientWidth]")
        assert scroll[0] <= scroll[1], f"sidebar scrolls sideways: scrollWidth {scroll[0]} > clientWidth {scroll[1]}"

        page.click("#nav-plots")
        page.wait_for_selector("#plots svg")
        clipped = page.evaluate(
            """() => [...document.querySelectorAll('#plots svg')].flatMap(svg => {
                 const box = svg.getBoundingClientRect();
                 return [...svg.querySelectorAll('text')].map(t => [svg.id, t.textContent, t.getBoundingClientRect()])
                   .filter(([, , r]) => r.left < box.left - 1 || r.right > box.right + 1
                                      || r.top < box.top - 1 || r.bottom > box.bottom + 1)
                   .map(([id, text]) => id + ': ' + text);
               })"""
        )
        assert page.locator("#plots svg").count() >= 3
        assert clipped == [], f"axis labels cut off: {clipped[:5]}"

        page.goto(page_path.as_uri() + "#sample/0")
        page.wait_for_selector("#qa")
        first = page.locator("#qa td").first.text_content()
        assert any(first.startswith(f"[{n}]") for n in names), first
        assert errors == [], errors
        b.close()
