"""An independent audit of a VQA dataset: every answer recomputed from the recorded 3-D geometry.

Run: ``python benchmarks/vqa_audit.py DATASET [DATASET ...] [--min-bbox-px 40]``
(e.g. after ``sceneforge vqa --env desert --n 25 --seed 1 --out d`` and ``--env city --n 15``).

Written apart from ``scenarios/vqa/templates.py`` on purpose (it imports nothing from it): the
rules are re-implemented from docs/vqa.md, from the record's raw fields (box corners, camera
location and axes, the mask PNG), so a bug in the templates shows as a disagreement here.
Checks, per question:

* **things only**: every object a question names or is about is a thing (not a street, water,
  dune, terrain, nor flat (height <= 15 % of the footprint) and 10 m or longer), and no question
  text or option names a surface class;
* **pixels**: each object's ``visible_px`` and ``box2d`` equal its colour's pixels in the written
  mask; every named object passes the rule (visible / alone >= 0.8, mask box >= min px) and is
  the only thing of its class in view;
* **answers**: counting (instances of the class with a pixel in the mask), object size
  (longest box side), distances (centres = mean of the 8 corners), ego / allo / view directions
  (45° sectors, nothing within the 15° margin), ranking (gap >= 15 %), multi-hop (the nearest
  thing in view among *all* things, then its ego direction), letters (the letter names the
  answer's option).

Prints the number of questions, disagreements (by category, with the first few), the share of
questions naming non-things, and the letters per category; exit 1 on any disagreement.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from PIL import Image

GROUND = {"street", "road", "sidewalk", "water", "river", "pond", "lake", "dune", "terrain", "ground", "hill"}
WORDS = {"front": "behind it (farther away)", "back": "in front of it (closer)", "left": "to its left", "right": "to its right"}
YOU = {"front": "in front of you", "back": "behind you", "left": "to your left", "right": "to your right"}


def is_ground(o: dict) -> bool:
    length, width, height = o["box3d"]["size_cm"]
    flat = max(length, width) >= 1000 and height <= 0.15 * max(length, width)
    return o.get("role") == "ground" or o["class"] in GROUND or flat


def centre(o: dict) -> np.ndarray:
    return np.mean(np.asarray(o["box3d"]["corners"], float), axis=0)


def sector(observer, ref, target, margin: float = 15.0):
    """(label, ambiguous): the 45°-sector of ``target - ref`` around the line ``observer -> ref`` (XY)."""
    v = np.asarray(ref[:2], float) - np.asarray(observer[:2], float)
    w = np.asarray(target[:2], float) - np.asarray(ref[:2], float)
    cross = v[0] * w[1] - v[1] * w[0]  # UE: X forward, Y right (left-handed): positive = right
    ang = math.degrees(math.atan2(abs(cross), float(v @ w)))
    label = "front" if ang < 45 else "back" if ang > 135 else ("right" if cross > 0 else "left")
    return label, min(abs(ang - 45), abs(ang - 135)) < margin


def plural_to_class(word: str, classes: set[str]) -> str | None:
    for c in classes:
        w = c.replace("_", " ")
        forms = {w + "s", w + "es", {"cactus": "cacti", "person": "people", "human": "people", "bush": "bushes"}.get(w, "")}
        if word in forms:
            return c
    return None


def audit(root: Path, min_px: float) -> dict:
    qs = [json.loads(line) for line in (root / "questions.jsonl").read_text().splitlines() if line.strip()]
    wrong: list[tuple[str, str, str]] = []
    non_thing = 0
    graphs: dict[tuple[str, int], dict] = {}
    pixel_bad = 0

    def load(env: str, i: int) -> dict:
        nonlocal pixel_bad
        if (env, i) not in graphs:
            rec = json.loads((root / env / f"scene_{i:06d}.json").read_text())
            g = rec["graph"]
            mask = np.asarray(Image.open(root / rec["files"]["mask"]).convert("RGB")).astype(np.int64)
            code = (mask[..., 0] << 16) | (mask[..., 1] << 8) | mask[..., 2]
            for o in g["objects"]:
                r, gg, b = o["color"]
                sel = code == ((r << 16) | (gg << 8) | b)
                n = int(sel.sum())
                box = None
                if n:
                    ys, xs = np.nonzero(sel)
                    box = [int(xs.min()), int(ys.min()), int(xs.max()), int(ys.max())]
                if n != o.get("visible_px") or box != o.get("box2d"):
                    pixel_bad += 1
                o["_px"], o["_box"] = n, box
                o["_ratio"] = n / o["alone_px"] if o.get("alone_px") else 0.0
            graphs[(env, i)] = {"graph": g, "by": {o["name"]: o for o in g["objects"]}}
        return graphs[(env, i)]

    def passes(o: dict) -> bool:
        b = o["_box"]
        return o["_ratio"] >= 0.8 and b is not None and max(b[2] - b[0], b[3] - b[1]) + 1 >= min_px

    for q in qs:
        G = load(q["env"], q["index"])
        g, by = G["graph"], G["by"]
        things = [o for o in g["objects"] if not is_ground(o)]
        seen = [o for o in things if o["_px"] > 0]
        cls_seen = Counter(o["class"] for o in seen)
        objs = [by[n] for n in q["objects"]]
        text = q["question"] + " " + " ".join(q.get("options", []))
        if any(is_ground(o) for o in objs) or any(re.search(rf"\b{c}s?\b", text) for c in GROUND):
            non_thing += 1
        cat = q["category"]
        named = [o for k, o in enumerate(objs) if not (cat == "multi_hop" and k == 1) and cat != "counting"]
        problems = []
        for o in named:
            if not passes(o):
                problems.append(f"{o['name']} fails the visibility rule ({o['_ratio']:.2f}, box {o['_box']})")
            if cls_seen[o["class"]] != 1:
                problems.append(f"{o['name']} is not the only {o['class']} in view")
        ans = q["answer"] if q["kind"] == "numerical" else q["answer_text"]
        if q["kind"] == "choice":
            opt = q["options"]["ABCD".index(q["answer"])]
            if opt != f"{q['answer']}. {q['answer_text']}":
                problems.append(f"letter {q['answer']} names {opt!r}")
        cam = g["camera"]["location"]
        if cat == "counting":
            word = re.match(r"How many (.+) are visible in the image\?", q["question"]).group(1)
            cls = plural_to_class(word, {o["class"] for o in g["objects"]} | set(g.get("classes", [])))
            inst = [o for o in seen if o["class"] == cls]
            if cls is None or len(inst) != ans or not all(passes(o) for o in inst):
                problems.append(f"count of {word}: {len(inst)} in view (all pass: {all(passes(o) for o in inst)})")
        elif cat == "object_size":
            if round(max(objs[0]["box3d"]["size_cm"]), 1) != ans:
                problems.append(f"size {max(objs[0]['box3d']['size_cm'])}")
        elif cat == "object_distance":
            d = float(np.linalg.norm(centre(objs[0]) - centre(objs[1]))) / 100
            if abs(d - ans) > 0.0051:
                problems.append(f"distance {d:.4f}")
        elif cat == "camera_distance":
            d = float(np.linalg.norm(centre(objs[0]) - np.asarray(cam))) / 100
            if abs(d - ans) > 0.0051:
                problems.append(f"camera distance {d:.4f}")
        elif cat in ("direction_ego", "direction_allo", "view_transformation", "multi_hop"):
            if cat == "direction_ego":
                a, b = objs
                label, amb = sector(cam, centre(a), centre(b))
                words = WORDS
            elif cat == "direction_allo":
                o, a, b = objs
                label, amb = sector(centre(o), centre(a), centre(b))
                words = WORDS
            elif cat == "view_transformation":
                x, y, z = objs
                # standing at x facing y: the sector of z - x around y - x (observer x "behind" x)
                fwd = centre(y)[:2] - centre(x)[:2]
                label, amb = sector(centre(x)[:2] - fwd, centre(x), centre(z))
                words = YOU
            else:
                a, x, b = objs
                others = [o for o in seen if o["name"] != a["name"]]
                d = sorted((float(np.linalg.norm(centre(o) - centre(a))), o["name"]) for o in others)
                if d[0][1] != x["name"]:
                    problems.append(f"nearest to {a['name']} is {d[0][1]}, not {x['name']}")
                if d[1][0] - d[0][0] < 0.15 * d[0][0]:
                    problems.append("nearest not unique by the 15 % gap")
                if not passes(x):
                    problems.append(f"nearest {x['name']} cannot be found (fails the rule)")
                label, amb = sector(cam, centre(b), centre(x))
                words = WORDS
            if amb:
                problems.append("within the 15° margin")
            if words[label] != ans:
                problems.append(f"direction {label}")
        elif cat == "relative_ranking":
            d = {o["class"].replace("_", " "): float(np.linalg.norm(centre(o) - np.asarray(cam))) for o in objs}
            order = sorted(d, key=d.get)
            first, second = (order[-1], order[-2]) if "farthest" in q["question"] else (order[0], order[1])
            if first != ans or abs(d[first] - d[second]) < 0.15 * min(d[first], d[second]):
                problems.append(f"ranking {order}")
        if problems:
            wrong.append((q["id"], cat, "; ".join(problems)))
    letters: dict[str, Counter] = {}
    for q in qs:
        if q["kind"] == "choice":
            letters.setdefault(q["category"], Counter())[q["answer"]] += 1
    return {
        "n": len(qs),
        "wrong": wrong,
        "non_thing": non_thing,
        "letters": letters,
        "pixel_bad": pixel_bad,
        "images": len(graphs),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("datasets", nargs="+", type=Path)
    p.add_argument("--min-bbox-px", type=float, default=40.0)
    args = p.parse_args(argv)
    total, bad, nt, pix = 0, 0, 0, 0
    for root in args.datasets:
        r = audit(root, args.min_bbox_px)
        total, bad, nt, pix = total + r["n"], bad + len(r["wrong"]), nt + r["non_thing"], pix + r["pixel_bad"]
        print(f"{root}: {r['n']} questions on {r['images']} images, {len(r['wrong'])} wrong, "
              f"{r['non_thing']} naming non-things, {r['pixel_bad']} objects whose pixels differ from the mask")  # fmt: skip
        for c, v in Counter(c for _, c, _ in r["wrong"]).items():
            print(f"  wrong {c}: {v}")
        for w in r["wrong"][:8]:
            print("  ", *w)
        for c, cnt in sorted(r["letters"].items()):
            n = sum(cnt.values())
            print(f"  letters {c:<20} " + " ".join(f"{k} {v / n:.2f}" for k, v in sorted(cnt.items())) + f"  (n={n})")
    share = nt / total if total else 0.0
    print(f"total: {total} questions, {bad} wrong, share naming non-things {share:.4f}, pixel mismatches {pix}")
    return 0 if bad == 0 and nt == 0 and pix == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
