"""The opt-in character pack (issue 49 item 1), installed from a synthetic 0ad-data .deb in the
real formats (tests/oad_fixture.py): nothing is downloaded."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading

import pytest
from oad_fixture import ACTOR, CLIP, HUMAN_ACTOR, LEFT_OUT, MESH, RUN_CLIP, SKIN, SPECIES_ACTOR, write_deb

from sceneforge.assets_manifest.characters import pack
from sceneforge.cli import main
from sceneforge.core.errors import AssetError


@pytest.fixture
def deb(tmp_path):
    return write_deb(tmp_path)


@pytest.mark.parametrize("verb", ["install", "build"])
def test_install_from_a_local_deb_keeps_only_character_art_with_its_licence(verb, deb, tmp_path, capsys):
    cache = tmp_path / "cache"
    assert main(["assets", verb, "characters", "--from", str(deb), "--cache-dir", str(cache), "--no-progress"]) == 0
    out = capsys.readouterr().out
    root = cache / "characters"
    assert "installed 8 files" in out and "Wildfire Games" in out
    for name in (MESH, CLIP, SKIN, ACTOR, SPECIES_ACTOR, HUMAN_ACTOR, "art/LICENSE.txt"):
        assert (root / name).is_file(), name
    for name in LEFT_OUT:
        assert not (root / name).exists(), name
    assert not (cache / "characters.partial").exists() and (root / ".complete").exists()
    info = json.loads((root / "pack.json").read_text())
    assert info["license"] == "cc-by-sa-3.0" and info["holder"] == "Wildfire Games" and info["version"] == "0.0.26-1"
    assert "CC-BY-SA 3.0" in info["attribution"] and "Wildfire Games" in info["attribution"]
    rows = [json.loads(line) for line in (root / "assets.jsonl").read_text().splitlines()]
    assert {r["path"]: r["kind"] for r in rows} == {MESH: "mesh", CLIP: "animation", RUN_CLIP: "animation", SKIN: "texture"}
    assert all(r["license"] == "cc-by-sa-3.0" and r["creator"] == "Wildfire Games" for r in rows)
    assert (root / "COPYRIGHT").read_text().startswith("Format:")
    assert pack.installed(cache)["files"] == 8
    # a second call does nothing
    assert main(["assets", "install", "characters", "--from", str(deb), "--cache-dir", str(cache)]) == 0
    assert "characters: installed (8 files" in capsys.readouterr().out


def test_offline_is_one_line_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SCENEFORGE_NO_FETCH", "1")
    cache = tmp_path / "cache"
    assert main(["assets", "install", "characters", "--cache-dir", str(cache)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "SCENEFORGE_NO_FETCH" in err and "--from" in err
    assert not (cache / "characters").exists() and not (cache / "characters.partial").exists()


def test_an_interrupted_extraction_resumes(deb, tmp_path):
    """Files written before the interrupt are kept (not rewritten); a half-written one is redone."""
    cache = tmp_path / "cache"
    staging = cache / "characters.partial"
    (staging / MESH).parent.mkdir(parents=True)
    real = pack.extract(deb, tmp_path / "ref")
    assert real["files"] == 8
    (staging / MESH).write_bytes((tmp_path / "ref" / MESH).read_bytes())  # done before the interrupt
    (staging / CLIP).parent.mkdir(parents=True)
    (staging / CLIP).write_bytes(b"PSSA half")  # torn file (wrong size)
    lines = pack.install(cache, source=deb)
    assert "7 written now" in lines[0]
    assert (cache / "characters" / CLIP).read_bytes() == (tmp_path / "ref" / CLIP).read_bytes()


def test_a_damaged_deb_fails_in_one_line_and_installs_nothing(deb, tmp_path):
    bad = tmp_path / "0ad-data_9_all.deb"
    bad.write_bytes(deb.read_bytes()[: len(deb.read_bytes()) // 2])
    with pytest.raises(AssetError) as e:
        pack.install(tmp_path / "cache", source=bad)
    assert "\n" not in str(e.value)
    assert not (tmp_path / "cache" / "characters").exists()
    with pytest.raises(AssetError, match="no such file"):
        pack.install(tmp_path / "cache", source=tmp_path / "missing.deb")


class _RangeHandler(http.server.BaseHTTPRequestHandler):
    payload = b""
    served: list = []

    def do_GET(self):  # noqa: N802 - http.server's name
        start = 0
        rng = self.headers.get("Range")
        if rng:
            start = int(rng.split("=")[1].split("-")[0])
            self.send_response(206)
        else:
            self.send_response(200)
        body = self.payload[start:]
        self.served.append(start)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def test_download_resumes_a_partial_file_and_checks_its_sha256(tmp_path):
    payload = bytes(range(256)) * 400
    _RangeHandler.payload, _RangeHandler.served = payload, []
    srv = http.server.HTTPServer(("127.0.0.1", 0), _RangeHandler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{srv.server_port}/x.deb"
        dest = tmp_path / "debs" / "x.deb"
        dest.parent.mkdir()
        (tmp_path / "debs" / "x.deb.part").write_bytes(payload[:40000])  # an interrupted download
        seen = []
        pack.download(url, dest, len(payload), hashlib.sha256(payload).hexdigest(), lambda d, t, w: seen.append(d))
        assert dest.read_bytes() == payload and _RangeHandler.served == [40000] and seen[-1] == len(payload)
        with pytest.raises(AssetError, match="SHA-256 mismatch"):
            pack.download(url, tmp_path / "debs" / "y.deb", len(payload), "0" * 64)
        assert not (tmp_path / "debs" / "y.deb").exists() and not (tmp_path / "debs" / "y.deb.part").exists()
    finally:
        srv.shutdown()
        srv.server_close()
    with pytest.raises(AssetError, match="a rerun resumes"):
        pack.download(url, tmp_path / "debs" / "z.deb", len(payload), "0" * 64)


def test_attribution_and_dataset_notice():
    info = {"holder": "Wildfire Games", "version": "0.0.26-1"}
    assert "0ad-data 0.0.26-1" in pack.attribution(info)
    notice = pack.dataset_notice(info)
    assert "CC-BY-SA 3.0" in notice and "share alike" in notice and "Wildfire Games" in notice
