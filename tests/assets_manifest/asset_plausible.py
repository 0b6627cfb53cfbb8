"""Plausible real-world sizes per class (cm): (measure, low, high).

measure: "length" = extent along UE X (forward), "height" = Z extent, "horizontal" = max(X, Y).
Ranges are wide on purpose (variants differ) but exclude unit mistakes (×100) and figurines.
"""

PLAUSIBLE = {
    "truck": ("length", 500, 1300),
    "taxi": ("length", 380, 530),
    "car": ("length", 300, 650),
    "bike": ("length", 110, 210),
    "vespa": ("length", 140, 220),
    "human": ("height", 150, 200),
    "cone": ("height", 40, 100),
    "fire_hydrant": ("height", 50, 110),
    "trash_bin": ("height", 50, 130),
    "barrel": ("height", 60, 120),
    "tent": ("horizontal", 150, 450),
    "snowman": ("height", 100, 230),
    "rock": ("horizontal", 40, 300),
    "tree": ("height", 300, 1600),
    "cactus": ("height", 150, 700),
    "camel": ("height", 170, 260),
    "bear": ("length", 140, 300),
    "fox": ("length", 50, 130),
    "husky": ("length", 60, 140),
    "deer": ("height", 120, 260),
    "building": ("height", 500, 6000),
    "house": ("height", 300, 1200),
    "bridge": ("length", 1000, 10000),
    "bench": ("horizontal", 100, 260),
    "lamp_post": ("height", 250, 800),
    "bush": ("height", 40, 300),
    "fence": ("horizontal", 150, 700),
    "dune": ("horizontal", 500, 4000),
    "crate": ("height", 30, 200),
    "sign": ("height", 150, 450),
    "hut": ("height", 150, 500),
    "street": ("horizontal", 5000, 30000),
    "water": ("horizontal", 1000, 30000),
}
VEHICLES = ("truck", "taxi", "car", "bike", "vespa")


def measure(size_cm, kind: str) -> float:
    L, W, H = size_cm
    return {"length": L, "height": H, "horizontal": max(L, W)}[kind]
