"""``sceneforge serve``: the embedded headless render server (UnrealCV protocol).

Example::

    sceneforge serve --port 9000 --output-dir out/
    sceneforge serve --assets my_pack.yaml --licenses cc0,cc-by --renderer gl
    python -c "from unrealcv import Client; c=Client(('127.0.0.1',9000)); c.connect(); \\
               print(c.request('vget /unrealcv/status'))"

The same server runs as ``python -m sceneforge.engine.server`` (what the farm and ``start_server`` launch).
"""

from __future__ import annotations

import argparse

from sceneforge.engine.server.main import add_arguments, run as run_server


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "serve",
        help="run the headless render server (UnrealCV protocol)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_arguments(p)
    p.set_defaults(func=run)


def run(args) -> int:
    return run_server(args)
