"""Does a pretrained ImageNet classifier recognise our rendered objects? The pure parts.

``benchmarks/recognition.py`` renders objects (alone on an environment's ground, and as crops of
a generated dataset), runs a real ImageNet-1k classifier (EfficientNet-Lite0, `sceneforge weights
build efficientnet-lite0`) and scores the predictions here: per object class, how often the top-1
/ top-5 ImageNet classes hit the class's **ImageNet counterparts** (:data:`IMAGENET`).

Why a fixed, hand-checked mapping and not "any ImageNet class whose name contains the word":
ImageNet-1k has no ``person``, ``tree``, ``rock``, ``cactus``, ``deer``, ``traffic cone``, ``fire
hydrant`` or ``snowman`` class, and name matching would invent some (``fire engine`` for a
hydrant, ``Scottish deerhound`` for a deer). Classes without a counterpart are reported as "no
ImageNet class" instead of being scored against a stand-in. Every index below carries a fragment
of its ImageNet description; ``tests/probing/test_recognition.py`` checks them against the label
list that ships with timm, so a typo'd index cannot slip in.

Only numpy here (probing imports nothing of ours but ``core``); the benchmark does the rendering.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

# our class -> {ImageNet-1k index: fragment of its description}. None: ImageNet-1k has no class
# for it (the row is reported, never scored against a stand-in).
IMAGENET: dict[str, dict[int, str] | None] = {
    # ---- SpaRRTa classes
    "truck": {555: "fire engine", 569: "garbage truck", 675: "moving van", 717: "pickup", 864: "tow truck", 867: "trailer truck"},
    "taxi": {468: "cab"},
    "bike": {444: "bicycle-built-for-two", 671: "mountain bike"},
    "vespa": {670: "motor scooter", 665: "moped"},
    "camel": {354: "Arabian camel"},
    "barrel": {427: "barrel", 756: "rain barrel"},
    "bear": {294: "brown bear", 295: "American black bear", 296: "ice bear", 297: "sloth bear"},
    "fox": {277: "red fox", 278: "kit fox", 279: "Arctic fox", 280: "grey fox"},
    "husky": {248: "Eskimo dog", 249: "malamute", 250: "Siberian husky"},
    "tent": {672: "mountain tent"},
    "trash_bin": {412: "ashcan"},
    "rock": None,
    "tree": None,
    "cactus": None,
    "deer": None,
    "snowman": None,
    "cone": None,
    "fire_hydrant": None,
    "human": None,
    # ---- clutter classes with a counterpart
    "car": {
        436: "beach wagon",
        468: "cab",
        511: "convertible",
        609: "jeep",
        627: "limousine",
        656: "minivan",
        717: "pickup",
        734: "police van",
        751: "racer",
        817: "sports car",
    },
    "bench": {703: "park bench"},
    "fence": {489: "chainlink fence", 716: "picket fence", 912: "worm fence"},
    "bridge": {821: "steel arch bridge", 839: "suspension bridge", 888: "viaduct"},
    "crate": {519: "crate"},
    "sign": {919: "street sign"},
    # ---- classes only the character pack has (videos --characters, issue 49)
    "horse": {339: "sorrel"},
    "zebra": {340: "zebra"},
    "elephant": {101: "tusker", 385: "Indian elephant", 386: "African elephant"},
    "wolf": {269: "timber wolf", 270: "white wolf", 271: "red wolf"},
    "lion": {291: "lion"},
    "boar": {342: "wild boar"},
    "pig": {341: "hog"},
    "cattle": {345: "ox"},
    "sheep": {348: "ram"},
    "gazelle": {353: "gazelle"},
    "chicken": {7: "cock", 8: "hen"},
    "dog": {243: "bull mastiff", 244: "Tibetan mastiff"},  # the pack's dog is a mastiff
    "goat": None,
    "donkey": None,
    "giraffe": None,
}

# Nearest ImageNet family for classes without a counterpart, reported in a separate column and
# never as the class's own score: a deer called "impala" is at least seen as a horned ungulate;
# a husky called "timber wolf" at least as a wolf-like canid.
NEAREST: dict[str, tuple[str, dict[int, str]]] = {
    "deer": ("antelope", {350: "ibex", 351: "hartebeest", 352: "impala", 353: "gazelle"}),
    "husky": ("dog or wolf", {**{i: "" for i in range(151, 269)}, 269: "timber wolf", 270: "white wolf"}),
    "human": ("person classes", {981: "ballplayer", 982: "groom", 983: "scuba diver"}),
    "goat": ("wild goat or sheep", {349: "bighorn", 350: "ibex"}),
    "donkey": ("horse", {339: "sorrel"}),
}


def targets(cls: str) -> set[int] | None:
    """ImageNet indices that count as a hit for ``cls``; None when there is no counterpart."""
    m = IMAGENET.get(cls)
    return None if m is None else set(m)


def nearest_targets(cls: str) -> tuple[str, set[int]] | None:
    n = NEAREST.get(cls)
    return None if n is None else (n[0], set(n[1]))


def topk(logits: np.ndarray, k: int = 5) -> np.ndarray:
    """(N, 1000) scores → (N, k) class indices, best first (ties broken by the lower index)."""
    logits = np.asarray(logits)
    order = np.argsort(-logits, axis=1, kind="stable")
    return order[:, :k]


def hit_at(top: np.ndarray, wanted: set[int], k: int) -> np.ndarray:
    """(N,) bool: does any of the first ``k`` predictions of each row fall in ``wanted``?"""
    if not wanted:
        return np.zeros(len(top), bool)
    return np.isin(np.asarray(top)[:, :k], sorted(wanted)).any(axis=1)


def context_box(
    bbox: tuple[float, float, float, float], width: int, height: int, context: float = 0.25, min_side: int = 8
) -> tuple[int, int, int, int]:
    """Square crop around an object box (x0, y0, x1, y1 pixels, x1/y1 exclusive) with ``context``
    × the box's longer side added on every side, shifted (not shrunk) to stay inside the image
    where it fits, clipped where it does not. Classifiers saw photos where the object fills most
    of a square frame with some surroundings: a tight box cuts legs and ears, a square one keeps
    the object's aspect ratio when resized."""
    x0, y0, x1, y1 = (float(v) for v in bbox)
    if not (x1 > x0 and y1 > y0):
        raise ValueError(f"empty box {bbox}")
    side = max(x1 - x0, y1 - y0) * (1.0 + 2.0 * context)
    side = int(round(min(max(side, float(min_side)), float(max(width, height)))))
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    bx = int(round(cx - side / 2.0))
    by = int(round(cy - side / 2.0))
    bx = min(max(bx, 0), max(width - side, 0))
    by = min(max(by, 0), max(height - side, 0))
    return bx, by, min(bx + side, width), min(by + side, height)


@dataclass
class Tally:
    """Predictions of one (source, pack, class) cell."""

    n: int = 0
    top1: int = 0
    top5: int = 0
    near5: int = 0
    labels: Counter = field(default_factory=Counter)  # top-1 ImageNet index -> count

    def add(self, top: np.ndarray, cls: str) -> None:
        top = np.atleast_2d(top)
        self.n += len(top)
        self.labels.update(int(t) for t in top[:, 0])
        want = targets(cls)
        if want is not None:
            self.top1 += int(hit_at(top, want, 1).sum())
            self.top5 += int(hit_at(top, want, 5).sum())
        near = nearest_targets(cls)
        if near is not None:
            self.near5 += int(hit_at(top, near[1], 5).sum())

    def row(self, cls: str, names: dict[int, str] | None = None, n_labels: int = 2) -> dict:
        """JSON-ready summary; rates are None for classes without an ImageNet counterpart."""
        scored = targets(cls) is not None and self.n > 0
        near = nearest_targets(cls)
        common = [(names.get(i, str(i)) if names else str(i), c) for i, c in self.labels.most_common(n_labels)]
        return {
            "n": self.n,
            "top1": round(self.top1 / self.n, 3) if scored else None,
            "top5": round(self.top5 / self.n, 3) if scored else None,
            "nearest": (near[0], round(self.near5 / self.n, 3)) if near and self.n else None,
            "top1_labels": common,
        }


def short_name(description: str) -> str:
    """First synonym of an ImageNet description: ``'cab, hack, taxi, taxicab'`` → ``'cab'``."""
    return description.split(",")[0].strip()


def markdown_table(rows: list[dict], packs: list[str]) -> str:
    """One line per class, one column group per pack: ``top-1 / top-5 (n)`` and the commonest
    top-1 label. ``rows``: ``{"class", "pack", "n", "top1", "top5", "nearest", "top1_labels"}``."""
    by = {(r["class"], r["pack"]): r for r in rows}
    classes = sorted({r["class"] for r in rows}, key=_class_order)
    head = (
        "| class | ImageNet counterpart | " + " | ".join(f"{p}: top-1 / top-5 (n) | {p}: commonest top-1" for p in packs) + " |"
    )
    out = [head, "|" + "---|" * (2 + 2 * len(packs))]
    for c in classes:
        m = IMAGENET.get(c)
        cp = ", ".join(m.values()) if m else "no ImageNet class"
        cells = []
        for p in packs:
            r = by.get((c, p))
            if r is None or r["n"] == 0:
                cells += ["–", "–"]
                continue
            score = f"{r['top1']:.2f} / {r['top5']:.2f} ({r['n']})" if r["top1"] is not None else f"n/a ({r['n']})"
            if r.get("nearest"):
                score += f"; {r['nearest'][0]} top-5 {r['nearest'][1]:.2f}"
            cells += [score, ", ".join(f"{name} {cnt}" for name, cnt in r["top1_labels"])]
        out.append(f"| {c} | {cp} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def _class_order(c: str):
    keys = list(IMAGENET)
    return (keys.index(c) if c in keys else len(keys), c)
