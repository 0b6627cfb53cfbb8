"""Questions from one view's scene graph (:mod:`scenarios.output.scene_graph`), by deterministic rules.

**What a question may name** (:func:`askable`): a *thing* — a discrete object a person can point
at, labelled or clutter alike (a tree, a lamp post, a barrel are as visible as the taxi) — never a
*surface* (:func:`is_surface`: the ground-like and scene-scale actors: streets, water, dunes,
terrain, anything flat and larger than 10 m), which a person cannot count, measure or stand at.
A thing is named by its class, so a class is used only when exactly one thing of it is in view
(any visible pixel): "the car" must be unambiguous. It must pass **CRISP's visibility rule**:
visible ratio ≥ 0.8 and visible-box longest edge ≥ 40 px (``min_bbox_px``, scale it with the
image). In a VQA record the visible ratio is ``visible_px / alone_px``, the pixels the object
covers alone on an *unbounded* image plane (``scenarios.vqa.scenario``): the part outside the
frame counts as not visible, so an object cut by the border fails like an occluded one.

**Counting** (:func:`counting`): "visible" = at least one visible pixel in the written mask. A
class is counted only when every instance of it in view passes the visibility rule (no instance
half-hidden or cut by the border, where a person and the mask could disagree); the answer is the
number of instances in view, 0 for a thing class of the scene with no instance in view.

**Closest** (:func:`multi_hop`): "the object closest to X" is taken over every thing in view
(any visible pixel, named or not, labelled or clutter), by 3-D centre distance; the question is
asked only when that object passes the visibility rule (a person can find it) and is closer than
the runner-up by ``rank_gap``.

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
multi_hop              choice     the thing nearest to <a>: where is it relative to <b> (camera)
=====================  =========  ===========================================================
"""

from __future__ import annotations

import math
import zlib
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


# Classes that are ground or terrain whatever their size (the library tags its landmarks
# ``ground``: street, water; dunes are terrain drawn as clutter). Records made before surfaces had
# their own role still name these classes, so the templates check the class too.
SURFACE_CLASSES = frozenset({"street", "road", "sidewalk", "water", "river", "pond", "lake", "dune", "terrain", "ground", "hill"})
SURFACE_MIN_CM = 1000.0  # a flat actor (height <= 15 % of its footprint) this long is ground-like
SURFACE_FLATNESS = 0.15


def is_surface(cls: str, size_cm, role: str | None = None) -> bool:
    """Ground-like or scene-scale: a person cannot count, measure or stand at it (a 180 m street
    crossing 12 cm high, a 30 m dune). ``size_cm``: the scaled (L, W, H)."""
    if role == "ground" or cls in SURFACE_CLASSES:
        return True
    length, width, height = (float(v) for v in size_cm)
    footprint = max(length, width)
    return footprint >= SURFACE_MIN_CM and height <= SURFACE_FLATNESS * footprint


def is_thing(o: Mapping) -> bool:
    """A discrete object a question may name (:func:`is_surface` is not)."""
    return not is_surface(o["class"], o["box3d"]["size_cm"], o.get("role"))


def passes(o: Mapping, rules: Rules) -> bool:
    """CRISP's visibility rule (on a VQA record, ``visible_ratio`` counts the part of the object
    outside the frame as not visible: see the module docstring)."""
    return (o.get("visible_ratio") or 0.0) >= rules.min_visible_ratio and box_longest(o) >= rules.min_bbox_px


def in_view(o: Mapping) -> bool:
    return (o.get("visible_px") or 0) > 0


def askable(graph: Mapping, rules: Rules) -> list[dict]:
    """Things that may be named: they pass the rule and are the only one of their class in view."""
    things = [o for o in graph["objects"] if is_thing(o)]
    classes = Counter(o["class"] for o in things if in_view(o))
    return [o for o in things if passes(o, rules) and classes[o["class"]] == 1]


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
def _pick(classes: list[str], graph: Mapping) -> str:
    """One of ``classes``, the same for the same view, not always the first in the alphabet."""
    key = repr(graph["camera"]["location"])
    return min(classes, key=lambda c: (zlib.crc32(f"{c}|{key}".encode()), c))


def counting(graph, rules, objs) -> list[Question]:
    """Counts that vary: every countable thing class with 2+ instances in view (VQA scenes place
    2-6 instances of one class on purpose) and one more class: one of the environment with no
    instance in view (answer 0; the record's ``classes``, else the scene's) or, when every class is
    in view, one seen once. A class is countable when every instance in view passes the rule."""
    by_cls: dict[str, list] = {c: [] for c in graph.get("classes", ())}
    for o in graph["objects"]:
        if is_thing(o):
            by_cls.setdefault(o["class"], []).append(o)
    seen = {c: [o for o in g if in_view(o)] for c, g in by_cls.items()}
    countable = {c: g for c, g in seen.items() if all(passes(o, rules) for o in g)}
    many = sorted(c for c, g in countable.items() if len(g) >= 2)
    once = [c for c, g in countable.items() if len(g) == 1]
    none = [c for c, g in countable.items() if not g]
    extra = none or once  # 0 whenever the environment has a class not in view: 1 is the group's neighbour
    chosen = many + ([_pick(extra, graph)] if extra else [])
    return [
        Question(
            "counting",
            f"How many {plural(cls)} are visible in the image?",
            len(countable[cls]),
            objects=[o["name"] for o in countable[cls]],
        )
        for cls in sorted(chosen)
    ]


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
    """Hop 1: the thing nearest to <a> among **every thing in view** (any visible pixel, named or
    not, clutter included: a person looking for "the closest object" sees them all), by 3-D
    centres, unique by ``rank_gap`` and passing the visibility rule itself (a person can find it);
    hop 2: where is it relative to <b> from the camera's viewpoint (SpaRRTa's ego rule, as
    :func:`direction_ego`, four options, nothing within ``margin_deg`` of a sector edge)."""
    out = []
    cam = graph["camera"]["location"]
    seen = [o for o in graph["objects"] if is_thing(o) and in_view(o)]
    for a in objs:
        others = [o for o in seen if o["name"] != a["name"]]
        if len(others) < 2:
            continue
        d = [float(np.linalg.norm(_centre(o) - _centre(a))) for o in others]
        order = np.argsort(d, kind="stable")
        if d[order[1]] - d[order[0]] < rules.rank_gap * d[order[0]]:
            continue
        x = others[order[0]]
        if not passes(x, rules):
            continue  # the nearest thing is too hidden or small to be found: not asked
        for b in objs:
            if b["name"] in (a["name"], x["name"]):
                continue
            q = _direction(
                "multi_hop",
                f"Consider the object that is closest to {noun(a)} (other than it), among all the objects you can "
                f"see. From the camera's viewpoint, where is that object relative to {noun(b)}?",
                cam[:2],
                b,
                x,
                rules,
            )
            if q:
                q.objects = [a["name"], x["name"], b["name"]]
                out.append(q)
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
    question of a category with n options (counted across the dataset by ``counters``, per
    category *and* n: a category mixing 3- and 4-option questions would otherwise favour A) puts
    its answer at position ``k mod n``, the distractors in a random order from ``rng``."""
    counters = Counter() if counters is None else counters
    out = []
    for q in qs:
        d = {"category": q.category, "kind": q.kind, "question": q.question, "objects": q.objects}
        if q.kind == "numerical":
            d.update({"answer": q.answer, "unit": q.unit})
        else:
            others = [o for o in q.options if o != q.answer]
            others = [others[i] for i in rng.permutation(len(others))]
            key = (q.category, len(q.options))
            pos = counters[key] % len(q.options)
            counters[key] += 1
            opts = others[:pos] + [q.answer] + others[pos:]
            d.update(
                {"options": [f"{LETTERS[i]}. {o}" for i, o in enumerate(opts)], "answer": LETTERS[pos], "answer_text": q.answer}
            )
        out.append(d)
    return out
