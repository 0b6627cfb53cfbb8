"""``sceneforge vqa-eval``: score VQA predictions (accuracy for choices, MRA for numbers).

Example::

    sceneforge vqa-eval --questions vqa/questions.jsonl --pred runs/model.jsonl
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path


def register(subparsers) -> None:
    e = subparsers.add_parser("vqa-eval", help="score template-VQA predictions (accuracy, MRA) per category",
                              description="Score predictions (JSONL lines {id, prediction}, or a CSV with id and "
                                          "prediction columns) against questions.jsonl: exact-match accuracy for "
                                          "multiple choice (a letter or the option's text), Mean Relative Accuracy "
                                          "for numbers; per category and their macro average (VSI-Bench/CRISP).")
    e.add_argument("--questions", type=Path, required=True, help="questions.jsonl written by the VQA generator")
    e.add_argument("--pred", type=Path, required=True, help="predictions (.jsonl or .csv)")
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.set_defaults(func=run_eval)


def run_eval(args: argparse.Namespace) -> int:
    from scenarios.vqa import evaluate

    qs = evaluate.read_jsonl(args.questions, "questions file")
    r = evaluate.score(qs, evaluate.load_predictions(args.pred))
    print(json.dumps(r, indent=2, sort_keys=True) if args.json else evaluate.format_scores(r))
    return 0
