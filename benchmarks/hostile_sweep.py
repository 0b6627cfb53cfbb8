"""Issue 48's outside checks, rerun from the inside: hostile input everywhere data comes from outside.

Each part starts what it attacks itself (a render server on 127.0.0.1, moto's S3 server on
127.0.0.1, ``browse --serve`` on 127.0.0.1), is bounded in count and time, and prints one JSON
line of figures. Nothing leaves the loopback; every file is written under a temporary directory.

    python benchmarks/hostile_sweep.py fuzz [--frames 20000] [--seconds 120]   # frames, deaths, unanswered, internal errors
    python benchmarks/hostile_sweep.py parked [--sockets 64]                    # idle-socket lockout time of a newcomer
    python benchmarks/hostile_sweep.py paths                                    # path attacks tried / escapes
    python benchmarks/hostile_sweep.py bad-inputs                               # bad inputs tried / tracebacks

``paths`` and ``bad-inputs`` generate a 12-sample dataset first (a render server, ~10 s).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("SCENEFORGE_NO_FETCH", "1")

from sceneforge.engine.protocol import frame, recv_frame  # noqa: E402
from sceneforge.engine.server.launch import start_server  # noqa: E402

BIG = "9" * 400
NUMBERS = [BIG, "-" + BIG, "1e300", "-1e300", "1e309", "NaN", "Infinity", "-Infinity", "9" * 5000, "1e-320", "-0.0",
           "0", "99999999999999999999", "18446744073709551617", "true", "null", '"7"', "[]", "{}", "1" + "0" * 308]  # fmt: skip
JSON_TEMPLATES = [
    'vset /sceneforge/world {"sun":{"pitch":V}}',
    'vset /sceneforge/world {"sun":{"yaw":V,"intensity":V}}',
    'vset /sceneforge/world {"ground":{"extent":V}}',
    'vset /sceneforge/world {"ground":{"tile_cm":V,"relief_amplitude":V}}',
    'vset /sceneforge/world {"sky":{"ambient":V,"intensity":V,"turbidity":V}}',
    'vset /sceneforge/world {"fog":{"density":V,"height_falloff_m":V}}',
    'vset /sceneforge/world {"look":{"exposure_ev":V}}',
    'vset /sceneforge/spawn [{"name":"fz","asset":"primitive_cube","location":[V,0,0]}]',
    'vset /sceneforge/spawn [{"name":"fz","asset":"primitive_cube","rotation":[0,V,0]}]',
    'vset /sceneforge/spawn [{"name":"fz","asset":"primitive_cube","scale":[1,1,V]}]',
    'vset /sceneforge/camera 0 {"location":[V,V,V]}',
    'vset /sceneforge/camera 0 {"rotation":[V,0,0],"fov":V}',
    'vset /sceneforge/camera 0 {"size":[V,32]}',
    'vget /sceneforge/render 0 lit {"size":[8,8],"fov":V}',
    'vget /sceneforge/render 0 lit {"size":[8,8],"location":[0,0,V]}',
    'vget /sceneforge/render 0 lit {"size":[V,8]}',
]
WORD_TEMPLATES = [
    "vset /camera/0/location V V V",
    "vset /camera/0/rotation V 0 0",
    "vset /camera/0/fov V",
    "vset /camera/0/moveto V V V",
    "vset /camera/0/size V 8",
    "vset /camera/0/exposure_bias V",
    "vset /object/fz0/location V 0 0",
    "vset /object/fz0/rotation 0 V 0",
    "vset /object/fz0/scale 1 V 1",
    "vset /object/fz0/color V 0 0",
]


def _quiet_logs() -> None:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger().setLevel(logging.ERROR)


def _connect(port: int) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=60)
    greeting = recv_frame(s)
    if not greeting.startswith(b"connected"):
        raise RuntimeError(greeting)
    return s


def _hostile_frame(rng: random.Random, i: int) -> bytes:
    roll = rng.random()
    if roll < 0.55:
        t = rng.choice(JSON_TEMPLATES)
        text = "".join(rng.choice(NUMBERS) if part == "" else part for part in _split_v(t))
    elif roll < 0.85:
        t = rng.choice(WORD_TEMPLATES)
        text = t.replace("V", rng.choice(NUMBERS).strip('"'), 1).replace("V", rng.choice(NUMBERS).strip('"'))
    elif roll < 0.95:  # a valid JSON command with a random byte flipped or cut
        text = rng.choice(JSON_TEMPLATES).replace("V", "1")
        k = rng.randrange(len(text))
        text = text[:k] + rng.choice(["", "\x00", "ü", "9" * 50, "[", "}", '"']) + text[k + 1 :]
    else:  # deep nesting and long ids
        text = rng.choice(["vset /sceneforge/world " + "[" * 50000, 'vset /sceneforge/world {"env":"' + "x" * 100000 + '"}'])
    return b"%d:%s" % (i, text.encode("utf-8", "surrogatepass"))


def _split_v(t: str) -> list[str]:
    out: list[str] = []
    for k, piece in enumerate(t.split("V")):
        if k:
            out.append("")
        out.append(piece)
    return out


def fuzz(args) -> dict:
    """Hostile numbers and JSON in every command that takes a number: every frame must get its
    ``<id>:...`` reply, never ``error internal``, and the server must stay up."""
    rng = random.Random(args.seed)
    out = Path(tempfile.mkdtemp(prefix="sf-fuzz-"))
    stats = {"frames": 0, "internal": 0, "unanswered": 0, "deaths": 0, "errors": 0, "ok": 0, "reconnects": 0}
    examples: list[str] = []
    try:
        with start_server(port=0, output_dir=out) as srv:
            s = _connect(srv.port)
            s.sendall(frame(b'0:vset /sceneforge/spawn [{"name":"fz0","asset":"primitive_cube","location":[500,0,0]}]'))
            recv_frame(s)
            t0 = time.monotonic()
            for i in range(1, args.frames + 1):
                if time.monotonic() - t0 > args.seconds:
                    break
                payload = _hostile_frame(rng, i)
                stats["frames"] += 1
                try:
                    s.sendall(frame(payload))
                    reply = recv_frame(s)
                except (OSError, Exception) as e:  # noqa: BLE001 - counted, not raised
                    stats["unanswered"] += 1
                    if not srv.alive():
                        stats["deaths"] += 1
                        break
                    examples.append(f"unanswered {payload[:60]!r}: {type(e).__name__}")
                    stats["reconnects"] += 1
                    s = _connect(srv.port)
                    continue
                if not reply.startswith(b"%d:" % i):
                    stats["unanswered"] += 1
                    examples.append(f"wrong reply to {payload[:60]!r}: {reply[:80]!r}")
                elif reply.startswith(b"%d:error internal" % i):
                    stats["internal"] += 1
                    examples.append(f"{payload[:80]!r} -> {reply[:120]!r}")
                elif reply.startswith(b"%d:error" % i):
                    stats["errors"] += 1
                else:
                    stats["ok"] += 1
            s.sendall(frame(b"99999999:vget /unrealcv/status"))
            alive = recv_frame(s).startswith(b"99999999:Is Listening") and srv.alive()
            stats["deaths"] += 0 if alive else 1
            stats["seconds"] = round(time.monotonic() - t0, 1)
    finally:
        shutil.rmtree(out, ignore_errors=True)
    return {"part": "fuzz", **stats, "examples": examples[:5]}


def parked(args) -> dict:
    """``--sockets`` connections that read the greeting and send nothing (and the same with one
    cheap query each): how long a newcomer (the official ``unrealcv`` client) waits."""
    import unrealcv

    res: dict = {"part": "parked", "sockets": args.sockets}
    with start_server(port=0) as srv:
        for variant in ("silent", "query-each"):
            held = [_connect(srv.port) for _ in range(args.sockets)]
            if variant == "query-each":
                for k, s in enumerate(held):
                    s.sendall(frame(b"%d:vget /unrealcv/version" % k))
                    recv_frame(s)
            waits = []
            for _ in range(args.newcomers):
                t = time.monotonic()
                with contextlib.redirect_stdout(io.StringIO()):
                    c = unrealcv.Client(("127.0.0.1", srv.port))
                    c.connect(timeout=30)
                    ok = c.isconnected() and c.request("vget /unrealcv/version", timeout=30) == "v1.1.0"
                    c.disconnect()
                waits.append(time.monotonic() - t if ok else float("inf"))
            served = sum(w != float("inf") for w in waits)
            res[variant] = {"newcomers": len(waits), "served": served, "max_wait_s": round(max(waits), 3)}
            for s in held:
                s.close()
            time.sleep(1.5)
    return res


# --- a small real dataset --------------------------------------------------------------------
def _dataset(root: Path) -> Path:
    from sceneforge.renderfarm import run_job

    data = root / "data"
    cfg = {"envs": ["desert"], "tasks": ["ego", "allo"], "n": 6, "seed": 0, "masks": True, "depth": True}
    with start_server(port=0, output_dir=root / "srv") as srv:
        summary = run_job("sparrta", cfg, data, backend="inline", server=srv.address, progress=False)
    assert not summary["failed"], summary["failed"]
    return data


def _cli(argv: list[str]) -> tuple[int, str]:
    """``sceneforge ARGV`` in this process: (exit code, stderr without progress bars)."""
    from sceneforge.cli import main

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = int(e.code or 0)
        except BaseException as e:  # noqa: BLE001 - a traceback is what this counts
            import traceback

            traceback.print_exc(file=err)
            rc = -1
            del e
    progress = ("it/s", "examples/s", "ba/s", "s/it")
    lines = [x for x in err.getvalue().replace("\r", "\n").splitlines() if x.strip() and not any(p in x for p in progress)]
    return rc, "\n".join(lines)


def _edit(data: Path, dest: Path, **row0) -> Path:
    import pandas as pd

    shutil.copytree(data, dest, symlinks=True, ignore=shutil.ignore_patterns("explorer"))
    df = pd.read_parquet(dest / "samples.parquet")
    for k, v in row0.items():
        if k in df.columns and df[k].dtype != object and not isinstance(v, (int, float)):
            df[k] = df[k].astype(str)
        df.loc[0, k] = v
    df.to_parquet(dest / "samples.parquet", index=False)
    return dest


def _files(root: Path) -> set[str]:
    return {str(p) for p in root.rglob("*")}


def paths(args) -> dict:
    """Path attacks on the bucket resume, ``export --layout sparrta``, ``export --format hf`` and
    ``browse --serve``; an escape is a file written outside the directory it belongs to, an outside
    file's bytes in an export, or an outside file served."""
    _quiet_logs()
    tmp = Path(tempfile.mkdtemp(prefix="sf-paths-"))
    res = {"part": "paths", "tried": 0, "escapes": 0, "by_target": {}, "escaped": []}

    def count(target: str, escaped: bool, what: str) -> None:
        res["tried"] += 1
        res["escapes"] += int(escaped)
        t = res["by_target"].setdefault(target, {"tried": 0, "escapes": 0})
        t["tried"] += 1
        t["escapes"] += int(escaped)
        if escaped:
            res["escaped"].append(f"{target}: {what}")

    try:
        data = _dataset(tmp)
        secret = tmp / "secret"
        secret.mkdir()
        (secret / "canary.txt").write_bytes(b"CANARY-" + os.urandom(16).hex().encode())
        canary = (secret / "canary.txt").read_bytes()
        # 1. bucket keys
        _bucket_attacks(tmp, count)
        # 2. export --layout sparrta
        for field in ("env", "triple_id", "source_class", "task"):
            for value in ("../../pwn", str(tmp / "abs" / "pwn"), "x/../../../../pwn", "..", "a/b", "~/pwn", "-rf", ".hidden"):
                case = tmp / "sp" / f"{field}{abs(hash(value))}"
                row = {field: value, "source_class": "pwnclass"} if field != "source_class" else {field: value}
                d = _edit(data, case / "a" / "b" / "data", **row)
                before = _files(tmp)
                _cli(["export", "--layout", "sparrta", str(d), str(case / "a" / "b" / "out")])
                out = str(case / "a" / "b" / "out") + "/"
                new = {p for p in _files(tmp) - before if Path(p).is_file() and not p.startswith(out)}
                count("export sparrta", bool(new), f"{field}={value!r}: {sorted(new)[:2]}")
        # 3. export --format hf
        link = data / "desert" / "canary_link.txt"
        link.symlink_to(secret / "canary.txt")
        for field, value in (("file_name", str(secret / "canary.txt")), ("file_name", "desert/canary_link.txt"),
                             ("mask_file", str(secret / "canary.txt")), ("mask_file", "desert/canary_link.txt"),
                             ("file_name", "../secret/canary.txt"), ("mask_file", "desert/../../secret/canary.txt")):  # fmt: skip
            case = tmp / "hf" / f"{field}{abs(hash(value))}"
            d = _edit(data, case / "data", **{field: value})
            _cli(["export", "--format", "hf", str(d), str(case / "out")])
            written = [p for p in (case / "out").rglob("*") if p.is_file()] if (case / "out").exists() else []
            leaked = any(canary in p.read_bytes() for p in written)
            count("export hf", leaked, f"{field}={value!r}")
        link.unlink()
        # 4. browse --serve
        _serve_attacks(data, tmp, canary, count)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def _bucket_attacks(tmp: Path, count) -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        os.environ.update(AWS_ACCESS_KEY_ID="test", AWS_SECRET_ACCESS_KEY="test", AWS_DEFAULT_REGION="us-east-1")
        os.environ["AWS_ENDPOINT_URL"] = f"http://{host}:{port}"
        import fsspec

        from sceneforge.renderfarm.objstore import staging_dir

        fs = fsspec.filesystem("s3", skip_instance_cache=True, use_listings_cache=False)
        fs.mkdir("bkt")
        keys = ["../x.txt", "../../../../x.txt", f"/{tmp}/abs/y.txt", f"{tmp}/abs2/y.txt".lstrip("/"), "./x.txt",
                "a/../../x.txt", "a//../../x.txt", "..", "a/..", "images/../../../x.txt"]  # fmt: skip
        for k, key in enumerate(keys):
            stage = tmp / "stage" / str(k) / "a" / "b" / "c"
            os.environ["SCENEFORGE_FARM_STAGING"] = str(stage)
            prefix = f"bkt/p{k}"
            fs.pipe(f"{prefix}/.farm/job.json", json.dumps({"scenario": "sparrta"}).encode())
            fs.pipe(f"{prefix}/job.json", b"{}")
            fs.pipe(f"{prefix}/{key}", b"escaped")
            staging = staging_dir(f"s3://{prefix}")  # where the resume may write
            before = _files(tmp)
            _cli(["generate", "--env", "desert", "--n", "1", "--out", f"s3://{prefix}"])
            new = {p for p in _files(tmp) - before if Path(p).is_file() and not p.startswith(str(staging) + "/")}
            count("bucket resume", bool(new), f"key {key!r}: {sorted(new)[:2]}")
    finally:
        server.stop()


def _http(port: int, path: str, host: str) -> tuple[int, bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode("latin-1"))
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split()
    return (int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0), body  # 0: closed without a reply


def _serve_attacks(data: Path, tmp: Path, canary: bytes, count) -> None:
    import re

    (data / "etc_link").symlink_to("/etc")
    (data / "secret_link").symlink_to(tmp / "secret")
    other = Path("/var/tmp" if os.access("/var/tmp", os.W_OK) else tempfile.gettempdir()) / f"sf-browse-{os.getpid()}"
    try:
        for out in (None, other / "explorer"):
            argv = [sys.executable, "-m", "sceneforge.cli", "browse", str(data), "--serve", "--port", "0"]
            argv += ["--out", str(out)] if out else []
            proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, cwd=ROOT)
            try:
                lines = [proc.stdout.readline(), proc.stdout.readline()]
                port = int(re.search(r"127\.0\.0\.1:(\d+)", lines[1]).group(1))
                rel_secret = os.path.relpath(tmp / "secret" / "canary.txt", "/")
                attacks = ["/etc/passwd", "/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..%2f..%2fetc%2fpasswd",
                           "//etc/passwd", "/etc_link/passwd", "/secret_link/canary.txt", "/" + rel_secret,
                           "/explorer/../../../../etc/passwd", "/proc/self/environ", "/samples.parquet", "/job.json",
                           "/", "/explorer/", "/desert/", "/%00/etc/passwd", "/etc/passwd%00.jpg",
                           "/.%2e/.%2e/etc/passwd"]  # fmt: skip
                for path in attacks:
                    status, body = _http(port, path, f"127.0.0.1:{port}")
                    leaked = status == 200 and (
                        b"root:" in body or canary in body or b"Directory listing" in body or path.endswith((".parquet", ".json"))
                    )
                    count("browse --serve", leaked, f"{path} -> {status}")
                for host in ("evil.example", f"evil.example:{port}", "attacker.localhost.evil", ""):
                    status, _ = _http(port, "/explorer/index.html" if out is None else "/", host)
                    count("browse --serve Host", status == 200, f"Host {host!r} -> {status}")
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    finally:
        shutil.rmtree(other, ignore_errors=True)


def bad_inputs(args) -> dict:
    """Bad inputs to the CLI and library (tables, caches, env files, configs, URLs): each must be
    one line with a non-zero exit, never a traceback."""
    _quiet_logs()
    tmp = Path(tempfile.mkdtemp(prefix="sf-bad-"))
    res = {"part": "bad-inputs", "tried": 0, "tracebacks": 0, "multi_line": 0, "exit_0": 0, "failures": []}

    def check(name: str, argv: list[str]) -> None:
        rc, err = _cli(argv)
        res["tried"] += 1
        tb = "Traceback" in err or rc == -1
        res["tracebacks"] += int(tb)
        res["multi_line"] += int(not tb and len(err.splitlines()) > 1)
        res["exit_0"] += int(rc == 0)
        if tb or rc == 0 or len(err.splitlines()) > 1:
            res["failures"].append(f"{name}: rc {rc}: {err.splitlines()[-1][:160] if err else ''}")

    try:
        data = _dataset(tmp)
        import pandas as pd

        df = pd.read_parquet(data / "samples.parquet")
        n = len(df)
        sp, hf, br = ("export", "--layout", "sparrta"), ("export", "--format", "hf"), ("browse",)
        cases = [  # (field, value, the commands that read that field)
            ("unit_index", float("nan"), [sp]),
            ("unit_index", "abc", [sp]),
            ("env", "e" * 300, [sp]),
            ("label", "above", [hf]),
            ("split", "holdout", [hf]),
            ("file_name", "nope/img.jpg", [sp, hf, br]),
            ("index", "x", [br]),
            ("index", -3, [br]),
            ("params_file", "desert/missing.json", [sp, br]),
        ]
        for i, (field, value, commands) in enumerate(cases):
            d = _edit(data, tmp / f"t{i}", **{field: value})
            for cmd in commands:
                target = [str(tmp / f"t{i}_{cmd[-1]}")] if cmd[0] == "export" else []
                check(f"{' '.join(cmd)} {field}={str(value)[:20]!r}", [*cmd, str(d), *target])
        d = _edit(data, tmp / "dup", index=1)
        check("browse duplicate index", ["browse", str(d)])
        d = _edit(data, tmp / "corrupt")
        (d / df["file_name"][2]).write_bytes(b"\xff\xd8 not a jpeg")
        check("browse corrupt jpeg", ["browse", str(d)])
        (d / df["params_file"][3]).write_text("{not json")
        check("browse bad params json", ["browse", str(d)])
        for url in ("s3://", "s3:///x", "s3://bkt/a/../b"):
            check(f"--out {url}", ["generate", "--env", "desert", "--n", "1", "--out", url])
        desert = (ROOT / "scenarios" / "envs" / "desert.yaml").read_text()
        for old, new in (("pitch: 62", f"pitch: {BIG}"), ("tile_cm: 300", f"extent_cm: {BIG}, tile_cm: 300"),
                         ("intensity: 1.1", "intensity: 1e309"), ("tile_cm: 300", f"tile_cm: -{BIG}")):  # fmt: skip
            env = tmp / f"env{abs(hash(new))}.yaml"
            env.write_text(desert.replace(old, new, 1))
            check(f"env {new[:20]}", ["generate", "--env", str(env), "--n", "1", "--out", str(tmp / "o")])
        for body in (f"n: {BIG}\n", f"n: 2\nseed: {BIG}\n", "n: 1e400\n", "n: .nan\n"):
            cfg = tmp / f"c{abs(hash(body))}.yaml"
            cfg.write_text("envs: [desert]\n" + body)
            check(f"--config {body.strip()[:20]}", ["generate", "--config", str(cfg), "--out", str(tmp / "o")])
        res["dataset_rows"] = n
        res.update(_cache_damages(tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def _cache_damages(tmp: Path) -> dict:
    """The ten feature-cache damages of tests/probing/test_feature_cache_checks.py, through the library."""
    import numpy as np
    from PIL import Image

    from sceneforge.core.errors import SceneforgeError
    from sceneforge.probing.backbones import create_backbone
    from sceneforge.probing.features import extract_features

    imgs = tmp / "imgs"
    imgs.mkdir()
    rng = np.random.default_rng(0)
    paths = []
    for i in range(8):
        p = imgs / f"{i}.png"
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(p)
        paths.append(str(p))
    tiny = {"img_size": 32, "patch_size": 8, "depth": 3, "embed_dim": 32, "num_heads": 2}

    def bb():
        return create_backbone("timm:vit_small_patch16_224", weights="random", model_kwargs=tiny)

    def save(path, a):
        with open(path, "wb") as f:
            np.save(f, a, allow_pickle=True)

    def meta(e, **kw):
        m = json.loads((e / "meta.json").read_text())
        m.update(kw)
        (e / "meta.json").write_text(json.dumps(m))

    damages = {
        "truncated": lambda e: (e / "patches.npy").write_bytes((e / "patches.npy").read_bytes()[:300]),
        "zero bytes": lambda e: (e / "prefix.npy").write_bytes(b""),
        "object array": lambda e: save(e / "patches.npy", np.array([{}] * 3, dtype=object)),
        "fewer rows": lambda e: save(e / "patches.npy", np.load(e / "patches.npy")[:-1]),
        "bad meta": lambda e: (e / "meta.json").write_text("{"),
        "nan": lambda e: save(e / "patches.npy", _nan_at(np.load(e / "patches.npy"))),
        "doubled width": lambda e: save(e / "patches.npy", np.concatenate([np.load(e / "patches.npy")] * 2, axis=2)),
        "million grid": lambda e: meta(e, grid=[1000, 1000]),
        "float32": lambda e: save(e / "prefix.npy", np.load(e / "prefix.npy").astype(np.float32)),
        "meta n": lambda e: meta(e, n=7),
    }
    tried, refused, silent, tracebacks = 0, 0, [], []
    for name, spoil in damages.items():
        cache = tmp / "cache" / name.replace(" ", "_")
        key = extract_features(bb(), paths, [3], cache, batch_size=8, progress=False)[3].key
        spoil(cache / key)
        tried += 1
        try:
            extract_features(bb(), paths, [3], cache, batch_size=8, progress=False)
            silent.append(name)
        except SceneforgeError:
            refused += 1
        except Exception as e:  # noqa: BLE001 - a traceback is what this counts
            tracebacks.append(f"{name}: {type(e).__name__}")
    return {"cache_damages": tried, "cache_refused": refused, "cache_silent": silent, "cache_tracebacks": tracebacks}


def _nan_at(a):
    a = a.copy()
    a[1, 3, 5] = float("nan")
    return a


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="part", required=True)
    a = sub.add_parser("fuzz")
    a.add_argument("--frames", type=int, default=20000)
    a.add_argument("--seconds", type=float, default=120.0)
    a.add_argument("--seed", type=int, default=48)
    a.set_defaults(func=fuzz)
    a = sub.add_parser("parked")
    a.add_argument("--sockets", type=int, default=64)
    a.add_argument("--newcomers", type=int, default=5)
    a.set_defaults(func=parked)
    sub.add_parser("paths").set_defaults(func=paths)
    sub.add_parser("bad-inputs").set_defaults(func=bad_inputs)
    args = p.parse_args(argv)
    print(json.dumps(args.func(args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
