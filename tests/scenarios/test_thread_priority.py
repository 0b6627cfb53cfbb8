"""The client's helper threads (writer, lookahead) lower their own scheduling priority."""

import os
import sys
import threading

import pytest

from sceneforge.core.errors import ConfigError
from sceneforge.scenarios.pipeline import thread_priority as TP
from sceneforge.scenarios.pipeline.background import BackgroundWriter
from sceneforge.scenarios.pipeline.lookahead import Lookahead

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@linux
def test_the_writer_and_lookahead_threads_run_below_the_main_thread(monkeypatch):
    monkeypatch.delenv(TP.ENV, raising=False)
    main = _nice()
    seen = {}
    with BackgroundWriter() as w:
        w.submit(lambda: seen.setdefault("writer", _nice()))
    with Lookahead(lambda: _nice()) as ahead:
        ahead.want([("k", ())])
        seen["lookahead"] = ahead.take("k")
    expected = min(TP.MAX_NICE, main + TP.HELPER_NICE)
    assert seen == {"writer": expected, "lookahead": expected}
    assert _nice() == main  # the main thread (it feeds the server) keeps its priority


@linux
def test_never_below_the_lowest_priority_and_off_at_zero():
    out = {}

    def run():
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 15)  # this throwaway thread only
        out["capped"] = TP.lower_this_thread(10)
        out["off"] = TP.lower_this_thread(0)
        out["after"] = _nice()

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert out == {"capped": TP.MAX_NICE, "off": None, "after": TP.MAX_NICE}


@pytest.mark.parametrize("raw", ["-1", "20", "ten", "1.5"])
def test_a_bad_setting_names_the_variable(monkeypatch, raw):
    monkeypatch.setenv(TP.ENV, raw)
    with pytest.raises(ConfigError, match=f"{TP.ENV}={raw!r}"):
        TP.helper_nice()
    with pytest.raises(ConfigError, match=TP.ENV):  # in the thread that starts the helper
        BackgroundWriter()


def test_the_setting_is_read_as_given(monkeypatch):
    monkeypatch.setenv(TP.ENV, " 4 ")
    assert TP.helper_nice() == 4
    monkeypatch.setenv(TP.ENV, "")
    assert TP.helper_nice() == TP.HELPER_NICE


@linux
def test_turned_off_the_helpers_keep_the_process_priority(monkeypatch):
    monkeypatch.setenv(TP.ENV, "0")
    main = _nice()
    with BackgroundWriter() as w:
        seen = []
        w.submit(lambda: seen.append(_nice()))
    assert seen == [main]
