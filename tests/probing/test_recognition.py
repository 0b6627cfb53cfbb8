"""The pure parts of the recognition benchmark (benchmarks/recognition.py): the class → ImageNet
mapping is checked against the label list that ships with timm, and the scoring/cropping helpers
against hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from sceneforge.probing import recognition as rec


def _descriptions() -> dict[int, str]:
    timm_data = pytest.importorskip("timm.data")
    info = timm_data.ImageNetInfo()
    return {i: info.index_to_description(i) for i in range(1000)}


def test_every_mapped_index_is_the_imagenet_class_it_claims():
    names = _descriptions()
    tables = [m for m in rec.IMAGENET.values() if m] + [n[1] for n in rec.NEAREST.values()]
    for table in tables:
        for index, fragment in table.items():
            assert 0 <= index < 1000
            assert fragment.lower() in names[index].lower(), (index, fragment, names[index])
    # the dog/wolf family really is dogs and wolves (151 Chihuahua .. 268 Mexican hairless)
    assert names[151].startswith("Chihuahua") and names[268].startswith("Mexican hairless")


def test_every_sparrta_class_is_mapped_or_declared_unmapped():
    from sceneforge.assets_manifest.schema import SPARRTA_CLASSES

    assert set(SPARRTA_CLASSES) <= set(rec.IMAGENET)
    # classes ImageNet-1k has no class for are reported, never scored against a stand-in
    for c in ("human", "tree", "rock", "cactus", "deer", "snowman", "cone", "fire_hydrant"):
        assert rec.targets(c) is None
    assert rec.targets("camel") == {354}


def test_topk_and_hits():
    logits = np.zeros((2, 1000))
    logits[0, [354, 10, 20, 30, 40, 50]] = [1, 6, 5, 4, 3, 2]  # camel 6th
    logits[1, [354, 10]] = [9, 1]  # camel first
    top = rec.topk(logits, 5)
    assert top[0].tolist() == [10, 20, 30, 40, 50] and top[1, 0] == 354
    assert rec.hit_at(top, {354}, 1).tolist() == [False, True]
    assert rec.hit_at(top, {354}, 5).tolist() == [False, True]
    assert rec.hit_at(top, {50}, 5).tolist() == [True, False]
    assert rec.hit_at(top, set(), 5).tolist() == [False, False]


def test_tally_rows_and_table():
    t = rec.Tally()
    t.add(np.array([[354, 1, 2, 3, 4], [5, 354, 6, 7, 8], [9, 10, 11, 12, 13]]), "camel")
    row = t.row("camel", {354: "Arabian camel", 5: "x", 9: "y"})
    assert (row["n"], row["top1"], row["top5"]) == (3, 0.333, 0.667)
    assert row["top1_labels"][0][1] == 1
    d = rec.Tally()
    d.add(np.array([[352, 0, 0, 0, 0], [0, 1, 2, 3, 4]]), "deer")
    r = d.row("deer")
    assert r["top1"] is None and r["nearest"] == ("antelope", 0.5)
    table = rec.markdown_table(
        [{"class": "camel", "pack": "procedural", **row}, {"class": "deer", "pack": "procedural", **r}], ["procedural"]
    )
    lines = table.splitlines()
    assert len(lines) == 4 and "0.33 / 0.67 (3)" in lines[2] and "no ImageNet class" in lines[3]


@pytest.mark.parametrize(
    "box,expect",
    [
        ((100, 100, 120, 110), (95, 90, 125, 120)),  # 20 px wide → 30 px square around the centre
        ((0, 0, 20, 20), (0, 0, 30, 30)),  # shifted inside at the corner, not shrunk
        ((210, 100, 224, 140), (164, 90, 224, 150)),  # right edge: the 60 px square shifted left to fit
        ((0, 0, 224, 224), (0, 0, 224, 224)),  # never larger than the image
    ],
)
def test_context_box(box, expect):
    x0, y0, x1, y1 = rec.context_box(box, 224, 224, context=0.25)
    assert (x0, y0, x1, y1) == expect
    assert 0 <= x0 < x1 <= 224 and 0 <= y0 < y1 <= 224


def test_context_box_clips_what_cannot_fit():
    assert rec.context_box((0, 0, 60, 40), 100, 50, context=0.25) == (0, 0, 90, 50)


def test_context_box_rejects_empty():
    with pytest.raises(ValueError):
        rec.context_box((5, 5, 5, 9), 224, 224)
