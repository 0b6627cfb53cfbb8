"""``finalize`` of the VQA scenario: questions in index order, tables, COCO annotations."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import numpy as np

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.output.writers import atomic_write_bytes, atomic_write_json
from sceneforge.scenarios.output.scene_graph import coco_annotations, graph_rows
from sceneforge.scenarios.sampling.rejection import sample_rng
from sceneforge.scenarios.vqa.record import load_scene
from sceneforge.scenarios.vqa.templates import CATEGORIES, Rules, letter_options, questions


def write_dataset(cfg, out: Path, samples: list[tuple[str, int]]) -> dict:
    import pandas as pd
    from PIL import Image

    rules = Rules(cfg.min_visible_ratio, cfg.min_bbox_px, cfg.margin_deg, cfg.rank_gap)
    counters: Counter = Counter()
    qs_out, images, objects, anns = [], [], [], []
    recs = []
    for env, i in samples:
        rec = load_scene(out, env, i)
        if rec is None:
            raise ConfigError(f"{out}: sample {env}/{i} is incomplete; rerun to finish it")
        recs.append(rec)
    classes = sorted({o["class"] for r in recs for o in r["graph"]["objects"]})
    categories = {c: k + 1 for k, c in enumerate(classes)}
    for image_id, rec in enumerate(recs, 1):
        env, i, graph = rec["env"], rec["index"], rec["graph"]
        rng = sample_rng(cfg.seed, env, "vqa", "questions", i)
        picked = []
        all_q = questions(graph, rules)
        for cat in CATEGORIES:
            qs = [q for q in all_q if q.category == cat]
            picked += [qs[j] for j in sorted(rng.permutation(len(qs))[: cfg.max_per_category])]
        for k, q in enumerate(letter_options(picked, rng, counters)):
            qs_out.append({"id": f"{env}_{i:06d}_{k:02d}", "image": rec["files"]["image"], "env": env, "index": i, **q})
        sample = {"image_id": image_id, "file_name": rec["files"]["image"], "env": env, "index": i}
        images.append({**sample, "n_objects": len(graph["objects"]), "n_questions": len(picked)})
        objects += graph_rows(graph, sample)
        mask = np.asarray(Image.open(out / rec["files"]["mask"]).convert("RGB"))
        anns += coco_annotations(mask, graph, image_id, categories, first_id=len(anns) + 1)
    atomic_write_bytes(out / "questions.jsonl", "".join(json.dumps(q, sort_keys=True) + "\n" for q in qs_out).encode())
    for name, rows in (("samples", images), ("objects", objects)):
        buf = io.BytesIO()
        pd.DataFrame(rows).to_parquet(buf, index=False, engine="pyarrow")
        atomic_write_bytes(out / f"{name}.parquet", buf.getvalue())
    h, w = (recs[0]["camera"]["height"], recs[0]["camera"]["width"]) if recs else (0, 0)
    coco = {
        "info": {"description": "sceneforge template-VQA scenes", "version": "1"},
        "images": [{"id": r["image_id"], "file_name": r["file_name"], "width": w, "height": h} for r in images],
        "categories": [{"id": k, "name": c} for c, k in categories.items()],
        "annotations": anns,
    }
    atomic_write_json(out / "annotations.coco.json", coco)
    by_cat = Counter(q["category"] for q in qs_out)
    return {
        "images": len(images),
        "questions": len(qs_out),
        "by_category": dict(sorted(by_cat.items())),
        "annotations": len(anns),
    }
