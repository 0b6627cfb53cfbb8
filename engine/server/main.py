"""The render server's entry point: ``python -m sceneforge.engine.server [--port N] [--assets PACK ...] ...``.

This is the server's composition root: it parses the arguments, builds the asset library that
the server serves (default library + ``--assets`` packs, filtered by ``--licenses``) and hands it
to :class:`~engine.server.catalog.AssetCatalog`, picks the renderer from the registry
(``--renderer``), and runs the socket loop until SIGTERM/SIGINT. Everything a server needs comes
in as arguments, never through the process environment, so servers started by the farm, on Ray
nodes or by hand all serve the same library when given the same flags.

``sceneforge serve`` is this same entry point with the CLI's one-line error handling.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Sequence

from sceneforge.core.errors import AssetError, ConfigError, SceneforgeError, exit_code_of
from sceneforge.core.atomic import atomic_write_text
from sceneforge.engine.limits import MAX_LOG_RECORD
from sceneforge.engine.protocol import DEFAULT_MAX_FRAME
from sceneforge.engine.server.gl import llvm_order

log = logging.getLogger(__name__)
DESCRIPTION = "Headless render server speaking the UnrealCV protocol (embedded renderer by default)."


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The server's flags (shared by ``python -m sceneforge.engine.server`` and ``sceneforge serve``)."""
    # lazy: the registry imports the renderer interface (numpy); `sceneforge --help` does not need it
    from sceneforge.engine.server.renderers import DEFAULT_RENDERER, renderer_names

    p.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1; others are reachable from the network)")
    p.add_argument("--port", type=int, default=9000, help="TCP port; 0 picks a free one (default 9000)")
    p.add_argument(
        "--output-dir",
        type=Path,
        default=None,
        help="where commands given a file name write images (none: file outputs are refused)",
    )
    p.add_argument(
        "--assets",
        nargs="+",
        default=None,
        metavar="PACK.yaml",
        help="extra asset packs (manifests) served beside the default library",
    )
    p.add_argument(
        "--licenses",
        default=None,
        metavar="FAMILIES",
        help="serve only assets of these license families, comma-separated (e.g. cc0,cc-by)",
    )
    p.add_argument(
        "--renderer",
        default=DEFAULT_RENDERER,
        metavar="NAME[:OPTIONS]",
        help=f"render backend: {', '.join(renderer_names())} (default {DEFAULT_RENDERER}); "
        "e.g. cycles:samples=32 (see `sceneforge renderers list`)",
    )
    p.add_argument("--threads", type=int, default=1, help="renderer threads (llvmpipe), default 1")
    p.add_argument("--ready-file", type=Path, default=None, help="write the bound port here once listening")
    p.add_argument(
        "--exit-with-parent",
        action="store_true",
        help="shut down when the process that started the server dies (even by kill -9); "
        "start_server passes it, so no server outlives its worker",
    )
    p.add_argument("--max-frame", type=int, default=None, metavar="BYTES", help="largest request frame accepted (default 64 MiB)")
    p.add_argument(
        "--max-clients",
        type=int,
        default=64,
        metavar="N",
        help="connections served at once (default 64); when all are taken a new client "
        "replaces the connection stalled mid-frame the longest, else the one idle the longest "
        "(nothing in flight); it is refused only when every connection has a request in flight",
    )
    p.add_argument(
        "--frame-timeout",
        type=float,
        default=10.0,
        metavar="S",
        help="a request frame must arrive whole within S seconds of its first byte, plus 1 s "
        "per MiB (default 10); a late one gets an error and the connection is closed",
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="close a connection with nothing in flight after S seconds (default 600; 0: never)",
    )
    p.add_argument(
        "--client-buffer",
        type=int,
        default=128 * 2**20,
        metavar="BYTES",
        help="request bytes held for one client, read but not yet answered (default 128 MiB); "
        "a client over it gets one error line and is disconnected",
    )
    p.add_argument(
        "--total-buffer",
        type=int,
        default=512 * 2**20,
        metavar="BYTES",
        help="the same for all clients together (default 512 MiB)",
    )
    p.add_argument(
        "--max-request-pixels",
        type=int,
        default=None,
        metavar="N",
        help="budget of one render request: width x height x passes (each image kind asked "
        "for, and a visibility count, is one pass); default 2^26 (8192^2 x 1, 4096^2 x 4)",
    )
    p.add_argument(
        "--max-scene-triangles",
        type=int,
        default=None,
        metavar="N",
        help="budget of the scene a render draws: triangles of the visible actors at full "
        "detail (default 2^24, ~30x the largest shipped environment)",
    )


def parse_licenses(value: str | Sequence[str] | None) -> list[str] | None:
    """``"cc0,cc-by"`` or a list → ``["cc0", "cc-by"]``; None/empty → None (no filter)."""
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [str(x).strip() for x in items if str(x).strip()]
    return items or None


def load_library(packs: Sequence[str] | None, licenses: Sequence[str] | None) -> Any | None:
    """The default ``AssetLibrary`` plus user ``packs``, filtered by ``licenses``; None (primitives
    only) if the asset package is not installed and no pack was asked for."""
    try:
        from sceneforge.assets_manifest import AssetLibrary  # slow to import (trimesh): called off the listen path
    except ImportError as e:
        if packs:
            raise AssetError(f"--assets given but the asset library is unavailable: {e}") from e
        log.warning("assets_manifest unavailable (%s): serving primitives only", e)
        return None
    return AssetLibrary.default(licenses=list(licenses) if licenses else None, extra_manifests=tuple(str(p) for p in packs or ()))


def load_characters() -> Any | None:
    """The installed character pack (``sceneforge assets install characters``) or None."""
    try:
        from sceneforge.assets_manifest.characters.library import CharacterLibrary  # off the listen path, like the library
    except ImportError as e:
        log.warning("character pack unavailable (%s)", e)
        return None
    return CharacterLibrary.installed()


def _validate(args: argparse.Namespace) -> None:
    if not 0 <= args.port <= 65535:
        raise ConfigError(f"--port must be in 0..65535, got {args.port}")
    if args.threads < 1:
        raise ConfigError(f"--threads must be >= 1, got {args.threads}")
    if args.max_frame is not None and args.max_frame < 64:
        raise ConfigError(f"--max-frame must be >= 64 bytes, got {args.max_frame}")
    if not 1 <= args.max_clients <= 4096:
        raise ConfigError(f"--max-clients must be in 1..4096, got {args.max_clients}")
    for flag, value in (("--frame-timeout", args.frame_timeout), ("--idle-timeout", args.idle_timeout)):
        if not (value == value and 0 <= value <= 86400) or (flag == "--frame-timeout" and value <= 0):
            raise ConfigError(
                f"{flag} must be {'> 0' if flag == '--frame-timeout' else '>= 0'} and at most 86400 seconds, got {value}"
            )
    max_frame = args.max_frame or DEFAULT_MAX_FRAME
    if args.client_buffer < max_frame:
        raise ConfigError(f"--client-buffer ({args.client_buffer}) must be at least --max-frame ({max_frame})")
    if args.total_buffer < args.client_buffer:
        raise ConfigError(f"--total-buffer ({args.total_buffer}) must be at least --client-buffer ({args.client_buffer})")
    if args.max_request_pixels is not None and not 1 <= args.max_request_pixels <= 2**40:
        raise ConfigError(f"--max-request-pixels must be in 1..2^40, got {args.max_request_pixels}")
    if args.max_scene_triangles is not None and not 1 <= args.max_scene_triangles <= 2**40:
        raise ConfigError(f"--max-scene-triangles must be in 1..2^40, got {args.max_scene_triangles}")
    if args.output_dir is not None and args.output_dir.exists() and not args.output_dir.is_dir():
        raise ConfigError(f"--output-dir {args.output_dir} exists and is not a directory")
    for pack in args.assets or ():
        if not Path(pack).is_file():
            raise ConfigError(f"--assets: {pack}: no such asset pack file")


def build_server(args: argparse.Namespace):
    """Validated args → an unstarted RenderServer (the asset library warms in the background)."""
    # lazy: the server's modules (numpy, the renderer registry) load when a server is built,
    # not for `--help` or a flag error
    from sceneforge.engine.server.app import RenderServer
    from sceneforge.engine.server.catalog import AssetCatalog
    from sceneforge.engine.server.renderers import backend_factory, check_renderer
    from sceneforge.engine.server.state import ServerState

    _validate(args)
    llvm_order.PRELOAD = False  # a render server never imports triton (see llvm_order)
    factory = backend_factory(args.renderer)
    check_renderer(args.renderer)  # e.g. cycles not installed: one line before listening
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        log.warning("serve: binding %s: the server is reachable from other machines and has no authentication", args.host)
    output_dir = args.output_dir.resolve() if args.output_dir else None
    if output_dir is not None:
        output_dir.mkdir(parents=True, exist_ok=True)
    packs, licenses = args.assets, parse_licenses(args.licenses)
    if packs or licenses:  # explicit choices are validated before listening (bad input → exit 2)
        catalog = AssetCatalog(load_library(packs, licenses), characters=load_characters)
    else:  # the default library loads in the background so the port is ready in well under a second
        catalog = AssetCatalog.deferred(lambda: load_library(None, None), characters=load_characters)
    threading.Thread(target=catalog.warm, name="sceneforge-assets", daemon=True).start()
    serving = {"packs": sorted(str(Path(p).resolve()) for p in packs or ()), "licenses": licenses, "renderer": args.renderer}
    state = ServerState(catalog, output_dir=output_dir, threads=args.threads, backend_factory=factory, serving=serving)
    if args.max_request_pixels is not None:
        state.max_request_pixels = args.max_request_pixels
    if args.max_scene_triangles is not None:
        state.max_scene_triangles = args.max_scene_triangles
    return RenderServer(
        state,
        args.host,
        args.port,
        max_frame=args.max_frame or DEFAULT_MAX_FRAME,
        max_clients=args.max_clients,
        frame_timeout=args.frame_timeout,
        idle_timeout=args.idle_timeout,
        client_buffer=args.client_buffer,
        total_buffer=args.total_buffer,
    )


def run(args: argparse.Namespace) -> int:
    """Listen until SIGTERM/SIGINT; publish the bound port in ``--ready-file``."""
    cap_log_records()
    server = build_server(args)
    try:
        host, port = server.start()
    except OSError as e:
        raise ConfigError(f"cannot listen on {args.host}:{args.port}: {e.strerror or e}") from None
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    if getattr(args, "exit_with_parent", False):
        watch_parent(stop)
    try:
        if args.ready_file:
            try:
                atomic_write_text(args.ready_file, f"{port}\n")
            except SceneforgeError as e:
                raise ConfigError(f"cannot write --ready-file {args.ready_file}: {e}") from None
        print(f"listening on {host}:{port}", flush=True)
        while not stop.wait(0.5):
            pass
    finally:
        log.info("serve: shutting down")
        if not server.shutdown():
            # a frame that cannot be interrupted (GL) is still running: Python would wait for
            # its thread at exit; SIGTERM must end the server within seconds
            logging.shutdown()
            sys.stdout.flush()
            os._exit(0)
    return 0


class _CapRecords(logging.Filter):
    """Cuts a log record's message and traceback: a client's value quoted in full in one log line
    made a 315 MB log out of 60 requests (issue 39); handlers keep the first characters."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        if len(msg) > MAX_LOG_RECORD:
            record.msg, record.args = f"{msg[:MAX_LOG_RECORD]}... (cut: {len(msg)} characters)", None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text and len(record.exc_text) > 4 * MAX_LOG_RECORD:
            record.exc_text = f"{record.exc_text[: 4 * MAX_LOG_RECORD]}... (cut: {len(record.exc_text)} characters)"
        return True


def cap_log_records() -> None:
    """Every handler of the root logger cuts long records (:class:`_CapRecords`)."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, _CapRecords) for f in handler.filters):
            handler.addFilter(_CapRecords())


def watch_parent(stop: threading.Event, period_s: float = 0.5) -> None:
    """Set ``stop`` when this process is re-parented (its starter died, even by ``kill -9``).

    Why polling ``getppid`` rather than ``PR_SET_PDEATHSIG``: the signal fires when the *thread*
    that forked us exits, and ``start_server`` may be called from short-lived threads.
    """
    parent = os.getppid()

    def poll() -> None:
        while not stop.wait(period_s):
            if os.getppid() != parent:
                log.warning("serve: parent pid %d is gone; shutting down", parent)
                stop.set()

    threading.Thread(target=poll, name="sceneforge-parent-watch", daemon=True).start()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m sceneforge.engine.server``: errors as one line on stderr; exit codes as ``sceneforge``
    (core/errors.py: 2 usage/config error, 130 interrupted)."""
    parser = argparse.ArgumentParser(prog="python -m sceneforge.engine.server", description=DESCRIPTION)
    add_arguments(parser)
    parser.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=getattr(logging, str(args.log_level).upper(), logging.WARNING),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return run(args)
    except SceneforgeError as e:
        print(f"error: {' '.join(str(e).split())}", file=sys.stderr)
        return exit_code_of(e)
    except KeyboardInterrupt as e:
        return exit_code_of(e)
