"""DSI-Bench questions: answers from trajectories, variant label transforms, the CSV layout.

Every answer is computed from world-frame trajectories (:mod:`scenarios.videos.motion`), expressed in
the frame the question names (the camera's *initial* frame for "left/right/toward/away"),
never from pixels. A variant's answer is recomputed by answering the *transformed* motion; the
table :data:`AUG_MAPS` states what that must equal, and the sampler rejects any clip where the
two disagree (a direction too close to a class boundary after the transform).

Categories (DSI-Bench's ``cate`` ints)::

    0 Obj:static cam      how the subject moves; camera static
    1 Obj:moving cam      how the subject moves relative to the ground; camera moving
    2 Cam:static scene    how the camera moves; subject static
    3 Cam:dynamic scene   how the camera moves; subject moving
    4 Obj-Cam distance    trend of the camera-subject distance
    5 Obj-Cam orientation trend of the subject's direction in the camera's view

Mixed patterns (``motion.MIXED_PATTERNS``, opt-in): a subject that translates *and* turns, or a
camera that translates *and* pans, is answered from its own space naming both components
(:data:`MIXED_SPACES`, e.g. "It moves to the right while turning clockwise"); each component
follows the rules and label tables of DSI's own answers, so the variants still form the same
Klein group. DSI's spaces, tables and clips are unchanged.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.videos import motion as mo

AUGS = ("std", "hflip", "reverse", "reverse_hflip")
CATE_NAMES = (
    "Obj:static cam",
    "Obj:moving cam",
    "Cam:static scene",
    "Cam:dynamic scene",
    "Obj-Cam distance",
    "Obj-Cam orientation",
)
CSV_COLUMNS = ("relative_path", "question", "options", "GT", "cate")
LETTERS = "ABCD"

# Answer spaces: key -> option text. Keys are stable identifiers stored in clips.parquet.
OBJ_SPACE = {
    "obj_left": "It moves to the left",
    "obj_right": "It moves to the right",
    "obj_away": "It moves away from the camera",
    "obj_toward": "It moves toward the camera",
    "obj_cw": "It turns clockwise (seen from above)",
    "obj_ccw": "It turns counter-clockwise (seen from above)",
    "obj_static": "It stays still",
}
CAM_SPACE = {
    "cam_forward": "The camera moves forward",
    "cam_backward": "The camera moves backward",
    "cam_left": "The camera moves to the left",
    "cam_right": "The camera moves to the right",
    "cam_pan_left": "The camera turns (pans) to the left",
    "cam_pan_right": "The camera turns (pans) to the right",
    "cam_static": "The camera stays still",
}
DIST_SPACE = {
    "dist_inc": "It increases",
    "dist_dec": "It decreases",
    "dist_flat": "It stays about the same",
    "dist_valley": "It first decreases, then increases",
    "dist_peak": "It first increases, then decreases",
}
ORIENT_SPACE = {
    "dir_left": "It shifts toward the left of the view",
    "dir_right": "It shifts toward the right of the view",
    "dir_flat": "It stays in about the same direction",
    "dir_leftright": "It shifts left first, then right",
    "dir_rightleft": "It shifts right first, then left",
}
SPACES = {"obj": OBJ_SPACE, "cam": CAM_SPACE, "dist": DIST_SPACE, "dir": ORIENT_SPACE}

# Mixed answers (opt-in patterns): a translation and a turn at once. key -> (translation key,
# turn key) of DSI's spaces; the text joins the two.
_MOVE_TEXT = {
    "left": "to the left",
    "right": "to the right",
    "away": "away from the camera",
    "toward": "toward the camera",
    "forward": "forward",
    "backward": "backward",
}
_TURN_TEXT = {
    "obj_cw": "turning clockwise (seen from above)",
    "obj_ccw": "turning counter-clockwise (seen from above)",
    "cam_pan_left": "turning (panning) to the left",
    "cam_pan_right": "turning (panning) to the right",
}
MIXED_PARTS = {f"obj_{d}_{s}": (f"obj_{d}", f"obj_{s}") for d in mo.OBJ_DIRS for s in ("cw", "ccw")}
MIXED_PARTS.update({f"cam_{d}_pan_{s}": (f"cam_{d}", f"cam_pan_{s}") for d in mo.CAM_DIRS for s in ("left", "right")})
_MIXED_KEY = {parts: key for key, parts in MIXED_PARTS.items()}
MIXED_SPACES = {
    "obj": {
        k: f"It moves {_MOVE_TEXT[m[4:]]} while {_TURN_TEXT[t]}" for k, (m, t) in MIXED_PARTS.items() if k.startswith("obj_")
    },
    "cam": {
        k: f"The camera moves {_MOVE_TEXT[m[4:]]} while {_TURN_TEXT[t]}"
        for k, (m, t) in MIXED_PARTS.items()
        if k.startswith("cam_")
    },
}

_SWAP_LR = {
    "obj_left": "obj_right",
    "cam_left": "cam_right",
    "cam_pan_left": "cam_pan_right",
    "obj_cw": "obj_ccw",
    "dir_left": "dir_right",
    "dir_leftright": "dir_rightleft",
}
_SWAP_TIME = {
    "obj_left": "obj_right",
    "obj_away": "obj_toward",
    "obj_cw": "obj_ccw",
    "cam_forward": "cam_backward",
    "cam_left": "cam_right",
    "cam_pan_left": "cam_pan_right",
    "dist_inc": "dist_dec",
    "dir_left": "dir_right",
}


def _sym(d: dict[str, str]) -> dict[str, str]:
    return {**d, **{v: k for k, v in d.items()}}


# What each variant does to an answer: hflip mirrors left/right and turn senses; reverse
# inverts time (left↔right motion, toward↔away, forward↔backward, cw↔ccw, increase↔decrease;
# "first A then B" patterns of a trend map to themselves under reversal).
AUG_MAPS = {"std": {}, "hflip": _sym(_SWAP_LR), "reverse": _sym(_SWAP_TIME)}
AUG_MAPS["reverse_hflip"] = {
    k: AUG_MAPS["hflip"].get(AUG_MAPS["reverse"].get(k, k), AUG_MAPS["reverse"].get(k, k))
    for k in set(AUG_MAPS["hflip"]) | set(AUG_MAPS["reverse"])
}


def transform_answer(key: str, aug: str) -> str:
    """The label a correct viewer of variant ``aug`` gives, from the std label."""
    if aug not in AUG_MAPS:
        raise ConfigError(f"unknown video variant {aug!r}; choose from {', '.join(AUGS)}")
    if key in MIXED_PARTS:  # each component by DSI's own table
        move, turn = MIXED_PARTS[key]
        return _MIXED_KEY[(AUG_MAPS[aug].get(move, move), AUG_MAPS[aug].get(turn, turn))]
    return AUG_MAPS[aug].get(key, key)


def space_of(kind: str, key: str) -> dict[str, str]:
    """The answer space ``key`` belongs to: DSI's space of ``kind``, or the mixed one."""
    return MIXED_SPACES[kind] if key in MIXED_PARTS else SPACES[kind]


def card_tables(patterns: tuple[str, ...]) -> dict:
    """Extra dataset-card entries for the mixed patterns' answers ({} without them, so DSI's
    cards keep their bytes): their spaces and each variant's label map."""
    if not set(patterns) & set(mo.MIXED_PATTERNS):
        return {}
    return {
        "mixed_answer_spaces": MIXED_SPACES,
        "mixed_label_transforms": {
            a: {k: transform_answer(k, a) for k in sorted(MIXED_PARTS) if transform_answer(k, a) != k} for a in AUGS
        },
    }


@dataclass(frozen=True)
class Thresholds:
    """Where an answer is clear enough to ask. Between the bands a question is not asked."""

    class_margin_deg: float = 10.0  # direction must be this far from a 45° class boundary
    still_cm: float = 5.0  # total displacement below this = not translating
    still_deg: float = 1.0  # total rotation below this = not rotating
    moving_cm: float = 40.0  # translation must be at least this to be asked about
    turning_deg: float = 8.0  # rotation must be at least this
    dist_flat: float = 0.02  # distance range / mean distance below this = "same"
    dist_change: float = 0.08  # relative net change (or bump) that counts as a change
    dir_flat_deg: float = 1.5  # bearing range below this = "same direction"
    dir_change_deg: float = 5.0  # bearing net change (or bump) that counts as a shift


def _direction_class(vec_fr: np.ndarray, names: dict[str, float], margin: float) -> str | None:
    """Nearest base direction of a (forward, right) vector, None within ``margin`` of a
    boundary. ``names`` maps class -> base angle (deg, + = right)."""
    ang = math.degrees(math.atan2(vec_fr[1], vec_fr[0]))
    best = min(names, key=lambda k: abs(mo.wrap_deg(ang - names[k])))
    return best if abs(mo.wrap_deg(ang - names[best])) <= 45.0 - margin else None


def _motion_class(
    disp_fr: np.ndarray, turn: float, dirs: dict[str, float], prefix: str, spins: tuple[str, str], th: Thresholds
) -> str | None:
    """Shared rule for subject and camera: translate XOR rotate XOR still, else None."""
    dist = float(np.hypot(*disp_fr))
    if dist <= th.still_cm and abs(turn) <= th.still_deg:
        return f"{prefix}_static"
    if dist >= th.moving_cm and abs(turn) <= th.still_deg:
        c = _direction_class(disp_fr, dirs, th.class_margin_deg)
        return f"{prefix}_{c}" if c else None
    if dist <= th.still_cm and abs(turn) >= th.turning_deg:
        return spins[0] if turn > 0 else spins[1]
    return None


def _mixed_class(
    disp_fr: np.ndarray, turn: float, dirs: dict[str, float], prefix: str, spins: tuple[str, str], th: Thresholds
) -> str | None:
    """Rule of a mixed mover: translates (>= ``moving_cm``, direction clear of a class boundary
    by ``class_margin_deg``) *and* turns (>= ``turning_deg``), else None (not asked)."""
    if float(np.hypot(*disp_fr)) < th.moving_cm or abs(turn) < th.turning_deg:
        return None
    c = _direction_class(disp_fr, dirs, th.class_margin_deg)
    return _MIXED_KEY[(f"{prefix}_{c}", spins[0] if turn > 0 else spins[1])] if c else None


def object_answer(clip: mo.ClipMotion, th: Thresholds = Thresholds()) -> str | None:
    """How the subject moves relative to the ground, in the camera's initial frame."""
    s = clip.subject
    cam0, yaw0 = clip.camera.location[0], clip.camera.yaw[0]
    disp = mo.in_camera_frame(s.location[-1], cam0, yaw0) - mo.in_camera_frame(s.location[0], cam0, yaw0)
    turn = float(s.yaw[-1] - s.yaw[0])
    rule = _mixed_class if mo.parse_pattern(clip.pattern)[1] == "mixed" else _motion_class
    return rule(disp, turn, mo.OBJ_DIRS, "obj", ("obj_cw", "obj_ccw"), th)


def camera_answer(clip: mo.ClipMotion, th: Thresholds = Thresholds()) -> str | None:
    """How the camera moves, in its own initial frame (translation) or its yaw (pan)."""
    c = clip.camera
    disp = mo.in_camera_frame(c.location[-1], c.location[0], c.yaw[0])
    turn = float(c.yaw[-1] - c.yaw[0])
    rule = _mixed_class if mo.parse_pattern(clip.pattern)[0] == "mixed" else _motion_class
    return rule(disp, turn, mo.CAM_DIRS, "cam", ("cam_pan_right", "cam_pan_left"), th)


def trend(x: np.ndarray, flat: float, change: float) -> str | None:
    """inc / dec / flat / valley / peak of a series, None when in between.

    Symmetric by construction: reversing ``x`` swaps inc↔dec and keeps valley/peak; negating it
    swaps inc↔dec and valley↔peak; so the variant tables hold exactly.
    """
    x = np.asarray(x, float)
    span = float(x.max() - x.min())
    if span < flat:
        return "flat"
    net = float(x[-1] - x[0])
    if abs(net) >= change and abs(net) >= 0.9 * span:
        return "inc" if net > 0 else "dec"
    dip = float(min(x[0], x[-1]) - x.min())
    bump = float(x.max() - max(x[0], x[-1]))
    if dip >= change and bump < flat / 2:
        return "valley"
    if bump >= change and dip < flat / 2:
        return "peak"
    return None


def distance_answer(clip: mo.ClipMotion, th: Thresholds = Thresholds()) -> str | None:
    d = mo.distances(clip)
    t = trend(d / d.mean(), th.dist_flat, th.dist_change)
    return f"dist_{t}" if t else None


def orientation_answer(clip: mo.ClipMotion, th: Thresholds = Thresholds()) -> str | None:
    """Trend of the subject's bearing in the *current* camera frame (+ = right of view)."""
    t = trend(np.unwrap(mo.bearings(clip), period=360.0), th.dir_flat_deg, th.dir_change_deg)
    names = {"inc": "dir_right", "dec": "dir_left", "flat": "dir_flat", "valley": "dir_leftright", "peak": "dir_rightleft"}
    return names[t] if t else None


@dataclass(frozen=True)
class Question:
    """One MCQ about a clip: category, template, option keys (fixed order) and per-variant GT."""

    cate: int
    kind: str  # obj | cam | dist | dir
    text: str
    options: tuple[str, ...]  # answer keys, in display order
    answers: dict  # aug -> answer key

    def options_text(self) -> str:
        space = space_of(self.kind, self.options[0])
        return " ".join(f"{LETTERS[i]}. {space[k]}" for i, k in enumerate(self.options))

    def gt(self, aug: str) -> str:
        return LETTERS[self.options.index(self.answers[aug])]


TEMPLATES = {
    0: "The camera is static. How does the {obj} move?",
    1: (
        "The camera is moving. Ignoring the camera's own motion, how does the {obj} move relative "
        "to the ground? Directions are judged from the camera's viewpoint at the start of the video."
    ),
    2: "Everything in the scene is static. How does the camera move?",
    3: "The {obj} may be moving. How does the camera itself move?",
    4: "How does the distance between the camera and the {obj} change during the video?",
    5: "How does the direction of the {obj}, as seen from the camera, change during the video?",
}
_ANSWER_FNS = {"obj": object_answer, "cam": camera_answer, "dist": distance_answer, "dir": orientation_answer}
# Question kinds never asked for a camera mode (scenarios/videos/camera_paths.py): an orbit
# translates *and* turns, a zoom neither moves nor turns, and DSI's camera answer space names
# neither. Every other kind is answered by the same rules as DSI's nine patterns.
EXCLUDED_KINDS = {"orbit": ("cam",), "zoom": ("cam",)}


def excluded(kind: str, clip: mo.ClipMotion) -> bool:
    """True when ``kind`` has no DSI answer for this clip's camera path (never asked)."""
    return kind in EXCLUDED_KINDS.get(mo.parse_pattern(clip.pattern)[0], ())


def _category(kind: str, clip: mo.ClipMotion) -> int:
    """DSI category; a zooming camera does not move (its pose is fixed), so its subject
    question is cate 0 ("The camera is static")."""
    cam_mode, obj_mode = mo.parse_pattern(clip.pattern)
    return {"obj": 0 if cam_mode in ("static", "zoom") else 1, "cam": 2 if obj_mode == "static" else 3, "dist": 4, "dir": 5}[kind]


def variant_answers(clip: mo.ClipMotion, kind: str, th: Thresholds = Thresholds()) -> dict[str, str | None]:
    """Answer of each variant, each computed from that variant's transformed motion."""
    fn = _ANSWER_FNS[kind]
    return {aug: fn(mo.transform_motion(clip, aug), th) for aug in AUGS}


def consistent(answers: dict[str, str | None]) -> bool:
    """All four answers exist and equal the label table applied to the std answer."""
    std = answers["std"]
    return std is not None and all(answers[a] == transform_answer(std, a) for a in AUGS)


def _options(kind: str, answer: str, rng: np.random.Generator) -> tuple[str, ...]:
    """Four options: the answer's orbit under the variants (so every variant's GT is present,
    with identical texts) plus distractors from the same space, shuffled."""
    orbit = list(dict.fromkeys(transform_answer(answer, a) for a in AUGS))
    rest = [k for k in space_of(kind, answer) if k not in orbit]
    picks = orbit + [rest[i] for i in rng.permutation(len(rest))[: 4 - len(orbit)]]
    return tuple(picks[i] for i in rng.permutation(4))


def make_questions(
    clip: mo.ClipMotion,
    obj_name: str,
    rng: np.random.Generator,
    th: Thresholds = Thresholds(),
    kinds: tuple[str, ...] = ("obj", "cam", "dist", "dir"),
) -> tuple[list[Question], list[str]]:
    """Questions for a clip, plus the kinds skipped as ambiguous (not asked in any variant)."""
    qs, skipped = [], []
    for kind in kinds:
        if excluded(kind, clip):
            skipped.append(kind)
            continue
        answers = variant_answers(clip, kind, th)
        if not consistent(answers):
            skipped.append(kind)
            continue
        cate = _category(kind, clip)
        qs.append(Question(cate, kind, TEMPLATES[cate].format(obj=obj_name), _options(kind, answers["std"], rng), answers))
    return qs, skipped


def csv_rows(relative_path: str, questions: list[Question], aug: str) -> list[dict]:
    """The rows of ``metadata/{aug}.csv`` for one clip (same order in every variant)."""
    return [
        {"relative_path": relative_path, "question": q.text, "options": q.options_text(), "GT": q.gt(aug), "cate": q.cate}
        for q in questions
    ]


def csv_text(rows: list[dict]) -> str:
    """CSV text with exactly :data:`CSV_COLUMNS`, pandas-readable, ``\\n`` line ends."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: r[k] for k in CSV_COLUMNS})
    return buf.getvalue()


def clips_parquet(records: list[dict]) -> bytes:
    """One row per clip (``clips.parquet``): trajectories as nested lists, questions/spec as JSON."""
    import pandas as pd

    rows = []
    for r in records:
        row = {
            k: v for k, v in r.items() if k not in ("rows", "questions", "spec", "skipped_questions", "scenery_assets", "world")
        }
        row.update(
            spec=json.dumps(r["spec"], sort_keys=True),
            questions=json.dumps(r["questions"], sort_keys=True),
            world=json.dumps(r.get("world"), sort_keys=True),  # the clip's drawn look
            skipped_questions=",".join(r["skipped_questions"]),
            scenery_assets=",".join(r["scenery_assets"]),
            **({"distractors": json.dumps(r["distractors"], sort_keys=True)} if "distractors" in r else {}),
            # which actors are characters: JSON, as a clip may have none (an empty struct has no parquet type)
            **({"characters": json.dumps(r["characters"], sort_keys=True)} if "characters" in r else {}),
            bbox=[b if b else [-1, -1, -1, -1] for b in r["bbox"]],
        )
        rows.append(row)
    buf = io.BytesIO()
    pd.DataFrame(rows).to_parquet(buf, index=False, engine="pyarrow")
    return buf.getvalue()


def dataset_stats(records: list[dict]) -> dict:
    """Counts per pattern, category and answer (for the summary and docs)."""
    cates = Counter(q["cate"] for r in records for q in r["questions"])
    answers = Counter(q["answers"]["std"] for r in records for q in r["questions"])
    return {
        "clips": len(records),
        "questions": sum(cates.values()),
        "patterns": dict(sorted(Counter(r["pattern"] for r in records).items())),
        "by_cate": {CATE_NAMES[c]: n for c, n in sorted(cates.items())},
        "answers": dict(sorted(answers.items())),
    }
