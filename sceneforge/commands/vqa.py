"""``sceneforge vqa-eval``: score VQA predictions (accuracy for choices, MRA for numbers).

Example::

    sceneforge vqa-eval --questions vqa/questions.jsonl --pred runs/model.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
from pathlib import Path

from sceneforge.commands.common import add_runner_flags, out_flag, run_scenario
from sceneforge.commands.config_flags import add_config_flags, config_from_args
from sceneforge.core.atomic import atomic_write_bytes
from sceneforge.core.errors import ConfigError, JobIncomplete
from sceneforge.scenarios.vqa.record import read_record, rerender
from sceneforge.scenarios.vqa.scenario import VqaConfig  # numpy, no renderer: flags from its fields


def register(subparsers) -> None:
    e = subparsers.add_parser(
        "vqa-eval",
        help="score template-VQA predictions (accuracy, MRA) per category",
        description="Score predictions (JSONL lines {id, prediction}, or a CSV with id and "
        "prediction columns) against questions.jsonl: exact-match accuracy for "
        "multiple choice (a letter or the option's text), Mean Relative Accuracy "
        "for numbers; per category and their macro average (VSI-Bench/CRISP).",
    )
    e.add_argument("--questions", type=Path, required=True, help="questions.jsonl written by the VQA generator")
    e.add_argument("--pred", type=Path, help="predictions (.jsonl or .csv); required unless --baselines")
    e.add_argument(
        "--baselines",
        action="store_true",
        help="print the blind baselines per category (best constant letter, median number) and their macro average",
    )
    e.add_argument("--json", action="store_true", help="print the scores as JSON")
    e.set_defaults(func=run_eval)
    register_generate(subparsers)


def run_eval(args: argparse.Namespace) -> int:
    from sceneforge.scenarios.vqa import evaluate  # not at parser build: `sceneforge --help` start-up

    if args.pred is None and not args.baselines:
        raise ConfigError("vqa-eval: give --pred PREDICTIONS, --baselines, or both")
    qs = evaluate.read_jsonl(args.questions, "questions file")
    if args.baselines:
        b = evaluate.baselines(qs)
        print(json.dumps(b, indent=2, sort_keys=True) if args.json else evaluate.format_baselines(b))
    if args.pred is not None:
        r = evaluate.score(qs, evaluate.load_predictions(args.pred))
        print(json.dumps(r, indent=2, sort_keys=True) if args.json else evaluate.format_scores(r))
    return 0


def register_generate(subparsers) -> None:
    g = subparsers.add_parser(
        "vqa",
        help="render scenes and template questions (counting, size, distance, direction, ...)",
        description="Render scenes with 3-6 labelled objects, write each scene's record and "
        "metric scene graph, then template questions (questions.jsonl), tables and "
        "COCO annotations. Resumable: rerun the same command.",
    )
    g.add_argument("--out", required=True, help="output directory")
    g.add_argument("--config", help="YAML file of config fields (flags override it)")
    add_config_flags(g, VqaConfig, required=("n",))
    add_runner_flags(g)
    g.set_defaults(func=run_generate)

    r = subparsers.add_parser(
        "render-record",
        help="re-render a sample from its scene record and compare the bytes",
        description="Replay a scene record (scene_NNNNNN.json) on a fresh render server and "
        "check the image is byte-identical to the stored one (exit 1 if not).",
    )
    r.add_argument("record", type=Path, help="scene_NNNNNN.json")
    r.add_argument("--server", help="a running render server host:port (default: start one)")
    r.add_argument("--out", help="also write the re-rendered image here")
    r.set_defaults(func=run_render_record)


def run_generate(args: argparse.Namespace) -> int:
    cfg, _ = config_from_args(args, VqaConfig, command="sceneforge vqa")
    summary = run_scenario("vqa", cfg, args.out, args)
    fin = summary.get("finalize", {})
    print(f"{fin.get('images')} images, {fin.get('questions')} questions in {args.out}: {fin.get('by_category')}")
    return 0  # run_scenario raised JobIncomplete (exit 1) unless every image is done


def run_render_record(args: argparse.Namespace) -> int:
    from sceneforge.engine.client import RenderClient  # its codecs: not at parser build

    rec, image = read_record(args.record)
    with contextlib.ExitStack() as stack:
        address = args.server
        if not address:
            from sceneforge.engine.server.launch import start_server  # not at parser build: `sceneforge --help` start-up
            from sceneforge.scenarios.world.environments import load_env  # pydantic: not at parser build

            packs = list(load_env(rec["env"]).asset_packs())  # what the job's servers served
            address = stack.enter_context(start_server(port=0, assets=packs or None)).address
        with RenderClient(address) as client:
            data = rerender(rec, client)
    if args.out is not None:
        atomic_write_bytes(out_flag(args.out), data)
    same = image.is_file() and image.read_bytes() == data
    print(f"{'identical' if same else 'DIFFERENT'}: re-rendered {rec['files']['image']} ({len(data)} bytes)")
    if not same:
        raise JobIncomplete(f"{args.record}: the re-rendered image differs from {rec['files']['image']}")
    return 0
