"""``scenarios.output.scene_graph.relation`` as it was before the pair tables (issue 33, item 3), kept
verbatim as the reference: one pure-Python call per ordered pair, each recomputing both boxes'
corners, the camera transform and a rotation matrix (~50 µs a pair; a city view has 68 objects,
4,556 pairs).

``tests/scenarios/test_scene_graph_relations.py`` checks that ``scenarios.output.scene_graph.relations``
gives exactly these dicts (same floats, same labels, same key order), pair for pair.
"""

from __future__ import annotations

import math

import numpy as np

from sceneforge.engine.world import Camera
from sceneforge.scenarios.output.scene_graph import SceneObject, _r, four_way


def reference_relation(a: SceneObject, b: SceneObject, cam: Camera) -> dict:
    ca, cb = a.centre(), b.centre()
    d = cb - ca
    cam_d = cam.to_camera(cb[None])[0] - cam.to_camera(ca[None])[0]
    own = d @ a.actor.transform.rotation.matrix()  # (forward, right, up) in a's frame
    ea, eb = a.extent_cm(), b.extent_cm()
    return {
        "a": a.name,
        "b": b.name,
        "distance_cm": _r(np.linalg.norm(d)),
        "horizontal_cm": _r(math.hypot(d[0], d[1])),
        "camera": {
            "right": _r(cam_d[1]),
            "up": _r(cam_d[2]),
            "farther": _r(cam_d[0]),
            "horizontal": "right" if cam_d[1] > 0 else "left",
            "vertical": "above" if cam_d[2] > 0 else "below",
            "depth": "farther" if cam_d[0] > 0 else "closer",
            "label": four_way(cam_d[0], cam_d[1]),
        },
        "object": {
            "forward": _r(own[0]),
            "right": _r(own[1]),
            "up": _r(own[2]),
            "azimuth_deg": _r(math.degrees(math.atan2(own[1], own[0]))),
            "label": four_way(own[0], own[1]),
        },
        "size_ratio": {
            "volume": _r(np.prod(eb) / np.prod(ea), 6),
            "height": _r(eb[2] / ea[2], 6),
            "longest": _r(eb.max() / ea.max(), 6),
        },
    }


def reference_relations(objs: list[SceneObject], cam: Camera) -> list[dict]:
    """The old ``scene_graph`` relation list: every ordered pair, ``a is not b``."""
    return [reference_relation(a, b, cam) for a in objs for b in objs if a is not b]
