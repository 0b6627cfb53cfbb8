"""Questions from one view's scene graph (:mod:`scenarios.output.scene_graph`), by deterministic rules.

Only objects passing CRISP's visibility rule may be asked about: visible ratio ≥ 0.8 (visible /
unoccluded pixels) and 2-D box longest edge ≥ 40 px (``min_bbox_px``, scale it with the image).
An object is named by its class, so a class is only used when exactly one object of it is in view
(any visible pixel): "the car" must be unambiguous. Counting asks about a class only when every
instance of it in view passes the rule.

Every answer is computed from the graph, never stored by hand; questions whose answer would sit
near a decision boundary are not asked (direction within ``margin_deg`` of a 45° sector edge,
rankings whose top two differ by less than ``rank_gap``).

Categories (``CATEGORIES``), answer type:

=====================  =========  ===========================================================
counting               number     how many <class> are visible
object_size            number     longest dimension of <a>, cm
object_distance        number     distance between the centres of <a> and <b>, m
camera_distance        number     distance from the camera to <a>'s centre, m
direction_ego          choice     where is <b> relative to <a>, seen from the camera (SpaRRTa ego)
direction_allo         choice     where is <b> relative to <a>, seen from <o> (SpaRRTa allo)
relative_ranking       choice     which of these is closest to / farthest from the camera
view_transformation    choice     standing at <x> facing <y>, where is <z>
multi_hop              choice     the object nearest to <a>: is it left or right of <b> (camera)
=====================  =========  ===========================================================
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from sceneforge.scenarios.sampling.relations import angle_and_cross, classify

CATEGORIES = (
    "counting",
    "object_size",
    "object_distance",
    "camera_distance",
    "direction_ego",
    "direction_allo",
    "relative_ranking",
    "view_transformation",
    "multi_hop",
)
NUMERICAL = ("counting", "object_size", "object_distance", "camera_distance")
# SpaRRTa's labels are observer-centric along the line of sight: "front" = the target lies beyond
# the source (farther away), which plain English calls "behind it"; say so in the options.
DIRECTION_WORDS = {
    "front": "behind it (farther away)",
    "back": "in front of it (closer)",
    "left": "to its left",
    "right": "to its right",
}
LETTERS = "ABCD"


@dataclass
class Question:
    category: str
    question: str
    answer: object  # number, or the correct option's text before lettering
    options: list[str] = field(default_factory=list)  # choice questions only
    objects: list[str] = field(default_factory=list)  # scene-graph names the question is about
    unit: str | None = None

    @property
    def kind(self) -> str:
        return "numerical" if self.category in NUMERICAL else "choice"


@dataclass(frozen=True)
class Rules:
    min_visible_ratio: float = 0.8
    min_bbox_px: float = 40.0
    margin_deg: float = 15.0
    rank_gap: float = 0.15


def box_longest(o: Mapping) -> float:
    """Longest edge in pixels of the visible-pixel box (the server's box is inclusive)."""
    b = o.get("box2d")
    return float(max(b[2] - b[0], b[3] - b[1]) + 1) if b else 0.0


def passes(o: Mapping, rules: Rules) -> bool:
    """CRISP's visibility rule."""
    return (o.get("visible_ratio") or 0.0) >= rules.min_visible_ratio and box_longest(o) >= rules.min_bbox_px


def in_view(o: Mapping) -> bool:
    return (o.get("visible_px") or 0) > 0


def askable(graph: Mapping, rules: Rules) -> list[dict]:
    """Objects that may be named: they pass the rule and are the only one of their class in view."""
    classes = Counter(o["class"] for o in graph["objects"] if in_view(o))
    return [o for o in graph["objects"] if passes(o, rules) and classes[o["class"]] == 1]


def noun(o: Mapping) -> str:
    return "the " + o["class"].replace("_", " ")


IRREGULAR = {"cactus": "cacti", "person": "people", "human": "people", "bush": "bushes", "fish": "fish"}


def plural(cls: str) -> str:
    word = cls.replace("_", " ")
    if word in IRREGULAR:
        return IRREGULAR[word]
    return word + ("es" if word.endswith(("s", "sh", "ch", "x")) else "s")


def _centre(o: Mapping) -> np.ndarray:
    return np.asarray(o["box3d"]["centre"], dtype=float)


def _xy(o: Mapping) -> tuple[float, float]:
    c = o["box3d"]["centre"]
    return (c[0], c[1])


def sector(angle_deg: float, cross: float, margin: float) -> str | None:
    """SpaRRTa's 4-way label with its ambiguity margin (None near a boundary)."""
    return classify(angle_deg, cross, margin)


# --- numerical -------------------------------------------------------------------------------------
def counting(graph, rules, objs) -> list[Question]:
    out = []
    by_cls: dict[str, list] = {}
    for o in graph["objects"]:
        if in_view(o):
            by_cls.setdefault(o["class"], []).append(o)
    for cls in sorted(by_cls):
        group = by_cls[cls]
        if all(passes(o, rules) for o in group):
            out.append(
                Question(
                    "counting",
                    f"How many {plural(cls)} are visible in the image?",
                    len(group),
                    objects=[o["name"] for o in group],
                )
            )
    return out


def object_size(graph, rules, objs) -> list[Question]:
    return [
        Question(
            "object_size",
            f"What is the length of the longest dimension (length, width, or height) of {noun(o)}, in centimeters?",
            round(max(o["box3d"]["size_cm"]), 1),
            objects=[o["name"]],
            unit="cm",
        )
        for o in objs
    ]


def object_distance(graph, rules, objs) -> list[Question]:
    out = []
    for i, a in enumerate(objs):
        for b in objs[i + 1 :]:
            d = float(np.linalg.norm(_centre(a) - _centre(b))) / 100.0
            out.append(
                Question(
                    "object_distance",
                    f"What is the distance between the centres of {noun(a)} and {noun(b)}, in meters?",
                    round(d, 2),
                    objects=[a["name"], b["name"]],
                    unit="m",
                )
            )
    return out


def camera_distance(graph, rules, objs) -> list[Question]:
    return [
        Question(
            "camera_distance",
            f"How far is the centre of {noun(o)} from the camera, in meters?",
            round(o["distance_to_camera_cm"] / 100.0, 2),
            objects=[o["name"]],
            unit="m",
        )
        for o in objs
    ]


# --- choice ------------------------------------------------------------------------------------------
def _direction(category, prompt, observer_xy, a, b, rules) -> Question | None:
    try:
        angle, cross = angle_and_cross(observer_xy, _xy(a), _xy(b))
    except Exception:
        return None
    label = sector(angle, cross, rules.margin_deg)
    if label is None:
        return None
    return Question(category, prompt, DIRECTION_WORDS[label], list(DIRECTION_WORDS.values()))


def direction_ego(graph, rules, objs) -> list[Question]:
    cam = graph["camera"]["location"]
    out = []
    for a in objs:
        for b in objs:
            if a is b:
                continue
            q = _direction(
                "direction_ego", f"From the camera's viewpoint, where is {noun(b)} relative to {noun(a)}?", cam[:2], a, b, rules
            )
            if q:
                q.objects = [a["name"], b["name"]]
                out.append(q)
    return out


def direction_allo(graph, rules, objs) -> list[Question]:
    out = []
    for o in objs:
        for a in objs:
            for b in objs:
                if len({id(o), id(a), id(b)}) < 3:
                    continue
                q = _direction(
                    "direction_allo",
                    f"Seen from the position of {noun(o)}, looking towards {noun(a)}, where is {noun(b)} relative to {noun(a)}?",
                    _xy(o),
                    a,
                    b,
                    rules,
                )
                if q:
                    q.objects = [o["name"], a["name"], b["name"]]
                    out.append(q)
    return out


def relative_ranking(graph, rules, objs) -> list[Question]:
    """Closest / farthest from the camera among up to four objects (in the graph's order)."""
    cands = objs[:4]
    if len(cands) < 3:
        return []
    dist = [o["distance_to_camera_cm"] for o in cands]
    order = np.argsort(dist)
    out = []
    for word, first, second in (("closest to", order[0], order[1]), ("farthest from", order[-1], order[-2])):
        if abs(dist[first] - dist[second]) < rules.rank_gap * min(dist[first], dist[second]):
            continue
        names = [noun(o)[4:] for o in cands]
        out.append(
            Question(
                "relative_ranking",
                f"Which of these objects is {word} the camera?",
                names[first],
                names,
                objects=[o["name"] for o in cands],
            )
        )
    return out


def view_transformation(graph, rules, objs) -> list[Question]:
    """Standing at x facing y: z's direction is the 4-way sector of (z − x) around (y − x)."""
    out = []
    for x in objs:
        for y in objs:
            for z in objs:
                if len({id(x), id(y), id(z)}) < 3:
                    continue
                fx, fy = _xy(y)[0] - _xy(x)[0], _xy(y)[1] - _xy(x)[1]
                rx, ry = _xy(z)[0] - _xy(x)[0], _xy(z)[1] - _xy(x)[1]
                if math.hypot(fx, fy) == 0 or math.hypot(rx, ry) == 0:
                    continue
                cross = fx * ry - fy * rx
                angle = math.degrees(math.atan2(abs(cross), fx * rx + fy * ry))
                label = sector(angle, cross, rules.margin_deg)
                if label is None:
                    continue
                words = {"front": "in front of you", "back": "behind you", "left": "to your left", "right": "to your right"}
                out.append(
                    Question(
                        "view_transformation",
                        f"If you stood at {noun(x)} facing {noun(y)}, where would {noun(z)} be?",
                        words[label],
                        list(words.values()),
                        objects=[x["name"], y["name"], z["name"]],
                    )
                )
    return out


def multi_hop(graph, rules, objs) -> list[Question]:
    """Hop 1: the askable object nearest to <a> (3-D centres, unique by ``rank_gap``);
    hop 2: is it left or right of <b> in the image (camera frame, beyond ``margin`` in angle)."""
    out = []
    cam = graph["camera"]
    for a in objs:
        others = [o for o in objs if o is not a]
        if len(others) < 3:
            continue
        d = [float(np.linalg.norm(_centre(o) - _centre(a))) for o in others]
        order = np.argsort(d)
        if d[order[1]] - d[order[0]] < rules.rank_gap * d[order[0]]:
            continue
        x = others[order[0]]
        for b in others:
            if b is x:
                continue
            axes = np.asarray(cam["world_to_camera_axes"])
            rel = axes @ (_centre(x) - _centre(b))  # (forward, right, up) of x from b
            if abs(math.degrees(math.atan2(abs(rel[1]), abs(rel[0])))) < rules.margin_deg:
                continue  # nearly straight ahead/behind: ambiguous
            side = "right" if rel[1] > 0 else "left"
            out.append(
                Question(
                    "multi_hop",
                    f"Consider the object that is closest to {noun(a)} (other than it). "
                    f"From the camera's viewpoint, is that object to the left or to the right of "
                    f"{noun(b)}?",
                    side,
                    ["left", "right"],
                    objects=[a["name"], x["name"], b["name"]],
                )
            )
    return out


TEMPLATES = {
    "counting": counting,
    "object_size": object_size,
    "object_distance": object_distance,
    "camera_distance": camera_distance,
    "direction_ego": direction_ego,
    "direction_allo": direction_allo,
    "relative_ranking": relative_ranking,
    "view_transformation": view_transformation,
    "multi_hop": multi_hop,
}


def questions(graph: Mapping, rules: Rules = Rules(), categories=CATEGORIES) -> list[Question]:
    """Every question the templates can ask about this view, in a fixed order."""
    objs = askable(graph, rules)
    out: list[Question] = []
    for cat in categories:
        out += TEMPLATES[cat](graph, rules, objs)
    return out


def letter_options(qs: list[Question], rng: np.random.Generator, counters: Counter | None = None) -> list[dict]:
    """JSON-ready questions; choice answers are lettered with balanced positions: the k-th choice
    question of a category (counted across the dataset by ``counters``) puts its answer at position
    ``k mod n_options``, the distractors in a random order from ``rng``."""
    counters = Counter() if counters is None else counters
    out = []
    for q in qs:
        d = {"category": q.category, "kind": q.kind, "question": q.question, "objects": q.objects}
        if q.kind == "numerical":
            d.update({"answer": q.answer, "unit": q.unit})
        else:
            others = [o for o in q.options if o != q.answer]
            others = [others[i] for i in rng.permutation(len(others))]
            pos = counters[q.category] % len(q.options)
            counters[q.category] += 1
            opts = others[:pos] + [q.answer] + others[pos:]
            d.update(
                {"options": [f"{LETTERS[i]}. {o}" for i, o in enumerate(opts)], "answer": LETTERS[pos], "answer_text": q.answer}
            )
        out.append(d)
    return out
