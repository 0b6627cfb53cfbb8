"""Scoring VQA predictions as VSI-Bench / CRISP do: exact-match accuracy for multiple choice,
Mean Relative Accuracy for numbers, per category, and their macro average.

MRA = (1/10) Σ_{θ ∈ {0.50, 0.55, …, 0.95}} 1(|ŷ − y| / |y| < 1 − θ).
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from pathlib import Path

from sceneforge.core.errors import ConfigError

THRESHOLDS = tuple(0.5 + 0.05 * i for i in range(10))
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")
_LETTER = re.compile(r"^\s*\(?([A-Da-d])(?:[\s.):]|$)")


def mra(pred: float | None, truth: float) -> float:
    """Mean Relative Accuracy of one prediction (0 for a missing or unparsable one)."""
    if pred is None or not math.isfinite(pred):
        return 0.0
    if truth == 0:
        return 1.0 if pred == 0 else 0.0
    rel = abs(pred - truth) / abs(truth)
    return sum(rel < 1 - t for t in THRESHOLDS) / len(THRESHOLDS)


def parse_number(text) -> float | None:
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    m = _NUMBER.search(str(text))
    return float(m.group(0)) if m else None


def parse_choice(text, options: list[str]) -> str | None:
    """A letter ("B", "b)", "(B) ...") or an option's text (case-insensitive) → the letter."""
    s = str(text).strip()
    m = _LETTER.match(s)
    if m:
        return m.group(1).upper()
    low = s.lower().rstrip(".")
    for opt in options:
        letter, _, body = opt.partition(". ")
        if low == body.lower():
            return letter
    return None


def read_jsonl(path: Path, what: str) -> list[dict]:
    if not Path(path).is_file():
        raise ConfigError(f"{what} not found: {path}")
    out = []
    for n, line in enumerate(Path(path).read_text().splitlines(), 1):
        if line.strip():
            try:
                out.append(json.loads(line))
            except ValueError as e:
                raise ConfigError(f"{path}:{n}: not JSON ({e})") from None
    return out


def score(questions: list[dict], predictions: dict[str, object]) -> dict:
    """``predictions``: question id → the model's answer. Missing predictions score 0."""
    per: dict[str, list[float]] = {}
    for q in questions:
        pred = predictions.get(q["id"])
        if q["kind"] == "numerical":
            s = mra(parse_number(pred) if pred is not None else None, float(q["answer"]))
        else:
            s = float(pred is not None and parse_choice(pred, q["options"]) == q["answer"])
        per.setdefault(q["category"], []).append(s)
    cats = {
        c: {"n": len(v), "score": sum(v) / len(v), "metric": "MRA" if c in _numerical(questions) else "accuracy"}
        for c, v in sorted(per.items())
    }
    overall = sum(c["score"] for c in cats.values()) / len(cats) if cats else 0.0
    return {
        "categories": cats,
        "overall": overall,
        "n": len(questions),
        "answered": sum(q["id"] in predictions for q in questions),
    }


def _numerical(questions) -> set[str]:
    return {q["category"] for q in questions if q["kind"] == "numerical"}


def load_predictions(path: Path) -> dict[str, object]:
    """JSONL lines ``{"id": ..., "prediction": ...}`` or a CSV with ``id`` and ``prediction``."""
    path = Path(path)
    if path.suffix == ".csv":
        import pandas as pd

        if not path.is_file():
            raise ConfigError(f"predictions not found: {path}")
        t = pd.read_csv(path, dtype={"id": str})
        if not {"id", "prediction"} <= set(t.columns):
            raise ConfigError(f"{path}: needs columns id and prediction, found {list(t.columns)}")
        return dict(zip(t["id"], t["prediction"]))
    rows = read_jsonl(path, "predictions")
    for n, r in enumerate(rows, 1):
        if "id" not in r or "prediction" not in r:
            raise ConfigError(f"{path}:{n}: each line needs 'id' and 'prediction'")
    return {str(r["id"]): r["prediction"] for r in rows}


def baselines(questions: list[dict]) -> dict:
    """Blind baselines per category, scored as :func:`score` scores a model: for a choice category
    the best constant letter (the letter most often right, so an upper bound of any constant
    guess), for a numerical one the category's (lower) median answer (MRA; the median of the very answers
    scored: an upper bound of a constant number learnt from the data). A set whose letters or
    numbers a blind guess can exploit shows here; ``overall`` is the macro average over categories."""
    by: dict[str, list[dict]] = {}
    for q in questions:
        by.setdefault(q["category"], []).append(q)
    cats = {}
    for c, qs in sorted(by.items()):
        if qs[0]["kind"] == "numerical":
            values = sorted(float(q["answer"]) for q in qs)
            guess = values[(len(values) - 1) // 2]  # the lower median: an answer of the set (never 0.5 items)
            s = sum(mra(guess, v) for v in values) / len(values)
            cats[c] = {"n": len(qs), "baseline": "median number", "guess": guess, "score": s}
        else:
            letters = Counter(q["answer"] for q in qs)
            guess, hits = max(sorted(letters.items()), key=lambda kv: kv[1])
            n_options = sorted({len(q["options"]) for q in qs})
            shares = {k: round(v / len(qs), 4) for k, v in sorted(letters.items())}
            cats[c] = {
                "n": len(qs),
                "baseline": "constant letter",
                "guess": guess,
                "score": hits / len(qs),
                "letters": shares,
                "options": n_options,
                "chance": sum(1 / len(q["options"]) for q in qs) / len(qs),
            }
    overall = sum(c["score"] for c in cats.values()) / len(cats) if cats else 0.0
    return {"categories": cats, "overall": overall, "n": len(questions)}


def format_baselines(r: dict) -> str:
    lines = []
    for c, v in r["categories"].items():
        extra = f"  letters {v['letters']} (chance {v['chance']:.2%})" if "letters" in v else ""
        lines.append(f"{c:<22} {v['baseline']:<16} n={v['n']:<5} guess {v['guess']!s:<8} {v['score']:.2%}{extra}")
    lines.append(f"{'overall (macro)':<22} {'':<16} n={r['n']:<5} {'':<14} {r['overall']:.2%}")
    return "\n".join(lines)


def format_scores(r: dict) -> str:
    lines = [f"{c:<22} {v['metric']:<8} n={v['n']:<5} {v['score']:.2%}" for c, v in r["categories"].items()]
    lines.append(f"{'overall (macro)':<22} {'':<8} n={r['n']:<5} {r['overall']:.2%}   answered {r['answered']}/{r['n']}")
    return "\n".join(lines)
