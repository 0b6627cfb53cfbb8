"""DSI-Bench evaluation: sample-wise and group-wise accuracy, exactly as DSI's published code.

Reproduced rules (DSI-Bench README, "Evaluate model performance"):

* a prediction is ``str(final_answer).strip()``; its *first character* is compared with
  ``str(GT).strip()`` (so ``"B"``, ``"B."`` and ``"B) left"`` all mean B; NaN reads as ``"nan"``);
* **sample-wise**: every row of every variant is an independent sample; accuracy per ``cate``
  (mean over rows) and overall (mean over all rows);
* **group-wise (n)**: row i of the four variants is one group; it counts as correct when at
  least ``n`` of its 4 variants are right; the group's category is row i's ``cate`` in the first
  variant of ``VIDEO_AUGS`` (std); accuracy per category and overall;
* per-category lines are printed as ``category = {cate} {name:<20} Acc = {ratio:.2%}``.

Extension: a prediction file without ``final_answer`` may carry the model's raw text in
``result_text`` (or ``response``/``text``/``output``); the letter is extracted with DSI's own
regex ``<answer>\\s*([A-D])\\s*</answer>`` and ``E`` when absent, as DSI's inference script does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.videos.dsi import CATE_NAMES  # DSI-Bench's six categories, one list

# DSI's evaluation iterates the variants in this order (std first: the group's category).
VIDEO_AUGS = ("std", "reverse", "hflip", "reverse_hflip")
RAW_COLUMNS = ("result_text", "response", "text", "output")
_ANSWER_RE = re.compile(r"<answer>\s*([A-D])\s*</answer>", re.IGNORECASE)


def extract_answer(text) -> str:
    """DSI's extraction: the letter inside ``<answer>X</answer>``, ``"E"`` when absent."""
    m = _ANSWER_RE.search(str(text)) if isinstance(text, str) else None
    return m.group(1).upper() if m else "E"


def _read_csv(path: Path, what: str):
    import pandas as pd

    if not path.is_file():
        raise ConfigError(f"{what} not found: {path}")
    try:
        return pd.read_csv(path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: not a readable CSV ({e})") from e


def _predictions(path: Path):
    """Prediction column as a Series of strings-or-NaN, from final_answer or raw text."""
    res = _read_csv(path, "prediction file")
    if "final_answer" in res.columns:
        return res["final_answer"]
    for col in RAW_COLUMNS:
        if col in res.columns:
            return res[col].map(extract_answer)
    raise ConfigError(
        f"{path}: needs a 'final_answer' column (or raw text in one of {', '.join(RAW_COLUMNS)}); found {list(res.columns)}"
    )


def find_model(pred_dir: Path) -> str:
    """The single model name under ``pred_dir/std/*.csv`` (error if none or several)."""
    names = sorted(p.stem for p in (pred_dir / "std").glob("*.csv"))
    if len(names) != 1:
        raise ConfigError(f"{pred_dir}/std: expected exactly one <model>.csv, found {names or 'none'}; pass --model")
    return names[0]


def load_all(meta_dir: str | Path, pred_dir: str | Path, model: str | None = None) -> dict:
    """{aug: {"meta": DataFrame, "pred": Series}} with DSI's checks, as one-line errors."""
    meta_dir, pred_dir = Path(meta_dir), Path(pred_dir)
    model = model or find_model(pred_dir)
    data = {}
    for aug in VIDEO_AUGS:
        meta_path, res_path = meta_dir / f"{aug}.csv", pred_dir / aug / f"{model}.csv"
        meta = _read_csv(meta_path, "metadata")
        for col in ("GT", "cate"):
            if col not in meta.columns:
                raise ConfigError(f"'{col}' column missing in metadata: {meta_path}")
        pred = _predictions(res_path)
        if len(meta) != len(pred):
            raise ConfigError(f"length mismatch in {aug}: meta={len(meta)} ({meta_path}), result={len(pred)} ({res_path})")
        data[aug] = {"meta": meta, "pred": pred}
    lengths = {aug: len(data[aug]["meta"]) for aug in VIDEO_AUGS}
    if len(set(lengths.values())) > 1:
        raise ConfigError(f"inconsistent sample counts: {lengths}")
    return data


def _is_correct(gt, pred) -> bool:
    """DSI: ``str(GT).strip() == first char of str(pred).strip()``."""
    p = str(pred).strip()
    return str(gt).strip() == (p[0] if p else "")


@dataclass(frozen=True)
class Scores:
    """Accuracy per category (ascending cate) and overall, as fractions."""

    by_cate: dict[int, float]
    overall: float
    count: int


def _correct_flags(data: dict, aug: str) -> list[bool]:
    meta, pred = data[aug]["meta"], data[aug]["pred"]
    return [_is_correct(g, p) for g, p in zip(meta["GT"].tolist(), pred.tolist())]


def _scores(cates: list[int], correct: list[int]) -> Scores:
    import pandas as pd

    df = pd.DataFrame({"cate": cates, "correct": correct})
    by = df.groupby("cate")["correct"].mean()
    return Scores({int(k): float(v) for k, v in by.items()}, float(df["correct"].mean()), len(df))


def sample_wise(data: dict) -> Scores:
    """All rows of all variants as independent samples (DSI "Method 1")."""
    cates, correct = [], []
    for aug in VIDEO_AUGS:
        cates += [int(c) for c in data[aug]["meta"]["cate"].tolist()]
        correct += [int(c) for c in _correct_flags(data, aug)]
    return _scores(cates, correct)


def group_wise(data: dict, n: int = 3) -> Scores:
    """Row i across the 4 variants is one group, correct when >= n variants are (DSI "Method 2")."""
    if not (1 <= int(n) <= len(VIDEO_AUGS)):
        raise ConfigError(f"--n-group must be in 1..{len(VIDEO_AUGS)}, got {n}")
    flags = [_correct_flags(data, aug) for aug in VIDEO_AUGS]
    counts = [sum(col) for col in zip(*flags)]
    cates = [int(c) for c in data[VIDEO_AUGS[0]]["meta"]["cate"].tolist()]
    return _scores(cates, [int(c >= n) for c in counts])


def single_view(data: dict, aug: str) -> Scores:
    """One variant only (DSI "Method 3")."""
    if aug not in VIDEO_AUGS:
        raise ConfigError(f"invalid augmentation {aug!r}; choose from {', '.join(VIDEO_AUGS)}")
    cates = [int(c) for c in data[aug]["meta"]["cate"].tolist()]
    return _scores(cates, [int(c) for c in _correct_flags(data, aug)])


def format_scores(title: str, s: Scores) -> str:
    """DSI's print_metrics layout."""
    lines = [title]
    for cat, ratio in s.by_cate.items():
        name = CATE_NAMES[cat] if 0 <= cat < len(CATE_NAMES) else f"Category {cat}"
        lines.append("category = {0} {1:<20} Acc = {2:.2%}".format(cat, name, ratio))
    lines.append(f"\nOverall Acc = {s.overall:.2%}\n")
    return "\n".join(lines)


def evaluate(meta_dir: str | Path, pred_dir: str | Path, model: str | None = None, n_group: int = 3) -> dict:
    """Both DSI metrics; returns {"sample_wise": Scores, "group_wise": Scores, "model": name}.

    >>> r = evaluate("dsi_city/metadata", "runs/mymodel")   # doctest: +SKIP
    >>> print(format_scores("=== Method 1 ===", r["sample_wise"]))  # doctest: +SKIP
    """
    pred_dir = Path(pred_dir)
    model = model or find_model(pred_dir)
    data = load_all(meta_dir, pred_dir, model)
    return {"model": model, "sample_wise": sample_wise(data), "group_wise": group_wise(data, n_group)}
