"""One short mp4 per motion pattern (docs/img/videos_pattern_<pattern>.mp4), reproducibly.

Run: ``python benchmarks/video_patterns.py [--out docs/img] [--size 112] [--frames 12] [--seed 2]``

Renders one clip per pattern — DSI's nine, the opt-in camera paths and the mixed patterns — with
the ``videos`` scenario itself (city, the std variant, no distractors), copies each std mp4 to
``OUT/videos_pattern_<pattern>.mp4`` and prints a markdown table of the files with each clip's
subject and std answers (for docs/videos.md). Same arguments give the same bytes.
``--distractors N --distractor-motions ...`` adds one more file, ``videos_distractors.mp4``;
``--articulated`` draws subjects and distractors as posed rigs (``articulation: true``; the docs
files are the default, rigid clips).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _config(args, patterns: tuple[str, ...], **extra) -> dict:
    if args.articulated:
        extra["articulation"] = True
    return {
        "env": args.env,
        "n": len(patterns),
        "seed": args.seed,
        "image_size": args.size,
        "motion": {"n_frames": args.frames, "fps": args.fps, "patterns": list(patterns)},
        **extra,
    }


def render(config: dict, server: str, tmp: Path) -> list[dict]:
    """Run the scenario inline on ``server``; the records of its clips, in index order."""
    import json

    from sceneforge.scenarios.contract import Shard
    from sceneforge.scenarios.videos import scenario as videos

    res = videos.run(config, Shard(0, tuple(range(config["n"]))), tmp, server=server)
    if res.failed:
        raise SystemExit(f"clips failed: {res.failed}")
    return [json.loads((tmp / "records" / f"{i:06d}.json").read_text()) for i in range(config["n"])]


def _answers(rec: dict) -> str:
    from sceneforge.scenarios.videos import dsi

    texts = []
    for q in rec["questions"]:
        if q["kind"] in ("obj", "cam"):
            texts.append(dsi.space_of(q["kind"], q["answers"]["std"])[q["answers"]["std"]])
    return "; ".join(texts)


def main(argv: list[str] | None = None) -> int:
    from sceneforge.engine.server.launch import start_server
    from sceneforge.scenarios.videos import motion as mo

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("docs/img"))
    p.add_argument("--env", default="city")
    p.add_argument("--size", type=int, default=112)
    p.add_argument("--frames", type=int, default=12)
    p.add_argument("--fps", type=float, default=6.0)
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--distractors", type=int, default=0, help="also write videos_distractors.mp4 with N movers")
    p.add_argument("--distractor-motions", nargs="+", default=["straight", "curve", "stop_and_go", "turn"])
    p.add_argument("--articulated", action="store_true", help="subjects and distractors as posed rigs")
    args = p.parse_args(argv)
    patterns = mo.ALL_PATTERNS
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="video-patterns-") as tmp, start_server() as srv:
        recs = render(_config(args, patterns), srv.address, Path(tmp) / "patterns")
        for rec in recs:
            dst = args.out / f"videos_pattern_{rec['pattern']}.mp4"
            shutil.copyfile(Path(tmp) / "patterns" / "videos" / "std" / rec["relative_path"], dst)
            rows.append((rec["pattern"], dst, rec["subject_class"], _answers(rec)))
        if args.distractors:
            cfg = _config(
                args, ("cam_static-obj_mixed",), distractors=args.distractors, distractor_motions=args.distractor_motions
            )
            (rec,) = render(cfg, srv.address, Path(tmp) / "distractors")
            dst = args.out / "videos_distractors.mp4"
            shutil.copyfile(Path(tmp) / "distractors" / "videos" / "std" / rec["relative_path"], dst)
            kinds = ", ".join(m.get("motion", "straight") for m in rec["distractors"])
            rows.append((f"{rec['pattern']} + distractors ({kinds})", dst, rec["subject_class"], _answers(rec)))
    print("| pattern | clip | subject | std answers (subject; camera) |\n|---|---|---|---|")
    for pattern, dst, cls, answers in rows:
        print(f"| `{pattern}` | [{dst.name}](img/{dst.name}) ({dst.stat().st_size // 1024} kB) | {cls} | {answers} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
