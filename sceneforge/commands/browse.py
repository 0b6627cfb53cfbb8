"""``sceneforge browse OUT``: write a static, offline explorer of a dataset and print its address.

sceneforge browse data/desert_ego                       # data/desert_ego/explorer/index.html
sceneforge browse data/desert_ego --serve --port 8765   # also serve it on 127.0.0.1:8765
sceneforge browse data/desert_ego --predictions runs/desert   # a `probe` output: misclassified one click away
sceneforge browse data/desert_ego --predictions runs/desert --run efficient:9:within   # one of its probes
sceneforge browse data/desert_ego --predictions preds.csv   # any model's CSV file_name,prediction
"""

from __future__ import annotations

import argparse
from pathlib import Path

from sceneforge.core.errors import ConfigError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "browse",
        help="write a static dataset explorer (grid, filters, overlays, top-down maps)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("data", type=Path, help="a finished `generate`, `vqa` or `videos` output directory")
    p.add_argument("--out", type=Path, help="where to write the explorer (default DATA/explorer)")
    p.add_argument(
        "--predictions",
        type=Path,
        help="a `sceneforge probe` output directory (its predictions/*.csv), or a CSV with columns "
        "file_name,prediction: adds prediction/correct filters, misclassified one click away",
    )
    p.add_argument(
        "--run",
        metavar="HEAD:LAYER:PROTOCOL",
        help="which probe of a --predictions directory that holds several (e.g. efficient:9:within)",
    )
    p.add_argument("--serve", action="store_true", help="serve the explorer over HTTP on 127.0.0.1 until Ctrl-C")
    p.add_argument("--port", type=int, default=8765, help="port for --serve (default 8765; 0 = any free port)")
    p.set_defaults(func=run)


def run(args) -> int:
    from sceneforge.explorer import DEFAULT_DIR, read_dataset, write_site  # pandas, PIL: not at parser build

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port {args.port}: not a port number (0-65535)")
    out = args.out or args.data / DEFAULT_DIR
    table = read_dataset(args.data, predictions=args.predictions, run=args.run)
    try:
        page = write_site(table, args.data, out)
    except OSError as e:  # a full disk, a read-only --out: one line (the writers leave no temp files)
        raise ConfigError(f"--out {out}: cannot write the explorer ({e.strerror or e}: {e.filename or out})") from None
    print(f"explorer: {page.resolve().as_uri()}", flush=True)
    if not args.serve:
        return 0
    from sceneforge.explorer.serve import make_server, media_files, page_url, serve_root  # pandas, PIL: not at parser build

    root = serve_root(args.data, out)
    server = make_server(root, args.port, out_dir=out, allowed=media_files(args.data, table.media))
    print(f"serving {root} at {page_url(server, root, page)} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
