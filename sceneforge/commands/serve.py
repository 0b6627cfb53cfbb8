"""``sceneforge serve``: the embedded headless render server (UnrealCV protocol).

Example::

    sceneforge serve --port 9000 --output-dir out/
    python -c "from unrealcv import Client; c=Client(('127.0.0.1',9000)); c.connect(); \\
               print(c.request('vget /unrealcv/status'))"
"""
from __future__ import annotations

import argparse
import logging
import os
import signal
import threading
from pathlib import Path

log = logging.getLogger(__name__)


def register(subparsers) -> None:
    p = subparsers.add_parser("serve", help="run the headless render server (UnrealCV protocol)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1; others are reachable from the network)")
    p.add_argument("--port", type=int, default=9000, help="TCP port; 0 picks a free one (default 9000)")
    p.add_argument("--output-dir", type=Path, default=None,
                   help="where commands given a file name write images (none: file outputs are refused)")
    p.add_argument("--assets", nargs="+", default=None, metavar="PACK.yaml",
                   help="asset manifests to serve (default: the built-in library)")
    p.add_argument("--threads", type=int, default=1, help="renderer threads (llvmpipe), default 1")
    p.add_argument("--ready-file", type=Path, default=None, help="write the bound port here once listening")
    p.add_argument("--max-frame", type=int, default=None, metavar="BYTES", help="largest request frame accepted (default 64 MiB)")
    p.set_defaults(func=run)


def _validate(args) -> None:
    from engine.errors import ConfigError

    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    if args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    if args.max_frame is not None and args.max_frame < 64:
        raise ConfigError(f"--max-frame must be >= 64 bytes, got {args.max_frame}")
    if args.output_dir is not None and args.output_dir.exists() and not args.output_dir.is_dir():
        raise ConfigError(f"--output-dir {args.output_dir} exists and is not a directory")


def _write_ready(path: Path, port: int) -> None:
    """Atomically publish the port, so a waiting launcher never reads half a number."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(f"{port}\n")
    os.replace(tmp, path)


def _build_server(args):
    """Validated args → an unstarted RenderServer (the asset library warms in the background)."""
    from engine.protocol import DEFAULT_MAX_FRAME
    from engine.server.app import RenderServer
    from engine.server.catalog import AssetCatalog
    from engine.server.state import ServerState

    _validate(args)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("serve: binding %s: the server is reachable from other machines and has no authentication", args.host)
    output_dir = args.output_dir.resolve() if args.output_dir else None
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    # Explicit --assets are validated before listening (bad input → exit 2); the default library
    # loads in the background so the port is ready in well under a second.
    catalog = AssetCatalog.load(args.assets) if args.assets else AssetCatalog.deferred()
    threading.Thread(target=catalog.warm, name="sceneforge-assets", daemon=True).start()
    state = ServerState(catalog, output_dir=output_dir, threads=args.threads)
    return RenderServer(state, args.host, args.port, max_frame=args.max_frame or DEFAULT_MAX_FRAME)


def run(args) -> int:
    from engine.errors import ConfigError

    server = _build_server(args)
    try:
        host, port = server.start()
    except OSError as e:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if args.ready_file:
            try:
                _write_ready(args.ready_file, port)
            except OSError as e:
                raise ConfigError(f"cannot write --ready-file {args.ready_file}: {e.strerror or e}") from None
        print(f"listening on {host}:{port}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        log.info("serve: shutting down")
        server.shutdown()
    return 0
