"""Video clips carry a metric scene graph per frame, consistent with the clip record."""

import json

import pytest

from sceneforge.scenarios.contract import Shard
from sceneforge.scenarios.videos import scenario as videos

CONFIG = {"env": "desert", "n": 1, "seed": 5, "motion": {"n_frames": 4, "fps": 4.0, "patterns": ["cam_static-obj_translate"]}}


@pytest.mark.render
def test_clip_has_per_frame_scene_graphs(server, tmp_path):
    res = videos.run(CONFIG, Shard(0, (0,)), tmp_path, server=server.address)
    assert res.done == [0]
    g = json.loads((tmp_path / "graphs" / "000000.json").read_text())
    rec = json.loads((tmp_path / "records" / "000000.json").read_text())
    assert len(g["frames"]) == rec["n_frames"] == 4
    for t, f in enumerate(g["frames"]):
        subj = f["objects"][0]
        assert subj["role"] == "subject" and subj["location"] == pytest.approx(rec["subject_location"][t], abs=1e-3)
        assert subj["visible_px"] == rec["visible_px"][t] and f["camera"]["location"] == pytest.approx(
            rec["camera_location"][t], abs=1e-3
        )
        assert len(f["objects"]) == 1 + rec["n_scenery"] and f["relations"] == []
    # the subject moves between frames, the scenery does not
    assert g["frames"][0]["objects"][0]["location"] != g["frames"][-1]["objects"][0]["location"]
    if rec["n_scenery"]:
        assert (
            g["frames"][0]["objects"][1] == g["frames"][-1]["objects"][1]
            or g["frames"][0]["objects"][1]["location"] == g["frames"][-1]["objects"][1]["location"]
        )
