"""Runs one farm job in a real subprocess, so tests can kill -9 / SIGTERM it mid-run.

Usage: ``python farm_runner.py SCENARIO OUT_DIR CONFIG_JSON [--workers N] [--backend B]
[--servers a,b] [--shard-size K] [--ray-address HOST:PORT]``. Exit 0 when complete, 1 with failures, 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def main() -> int:
    from sceneforge.core.errors import SceneforgeError
    from sceneforge.renderfarm import exit_code, run_job

    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("out_dir")  # a directory or a URL (s3://bucket/prefix)
    p.add_argument("config")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--backend", default="local")
    p.add_argument("--servers", default=None)
    p.add_argument("--shard-size", type=int, default=None)
    p.add_argument("--ray-address", default=None)
    a = p.parse_args()
    try:
        summary = run_job(
            a.scenario,
            json.loads(a.config),
            a.out_dir,
            workers=a.workers,
            backend=a.backend,
            servers=a.servers,
            shard_size=a.shard_size,
            ray_address=a.ray_address,
            progress=False,
        )
    except KeyboardInterrupt:
        return 130
    except SceneforgeError as e:  # as the CLI does: one line, exit 2
        print(f"error: {e}", file=sys.stderr)
        return 2
    return exit_code(summary)


if __name__ == "__main__":
    sys.exit(main())
