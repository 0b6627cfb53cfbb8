"""DSI-Bench-style dynamic clips with hflip / reverse / reverse_hflip variants: the ``videos`` scenario.

Modules: :mod:`.motion` (camera/subject trajectories and variant transforms), :mod:`.scenario`
(plan/run/finalize), :mod:`.dsi` (DSI-Bench questions and CSVs), :mod:`.dsi_eval` (scoring),
:mod:`.video_io` (deterministic mp4 encode/decode).
"""

from sceneforge.scenarios.videos.config import VideoConfig as Config  # noqa: F401 (light: the command line's flags)

NAME = "videos"

# The scenario contract and its helpers, loaded on first use (PEP 562): importing one submodule
# (e.g. the config, which the command line's flags are built from) does not load the scenario.
_EXPORTS = (
    "CARD_FILE",
    "VideoConfig",
    "clip_record",
    "clip_rng",
    "finalize",
    "load_context",
    "make_clip",
    "mirror_world",
    "plan",
    "render_frames",
    "run",
    "sample_clip",
    "server_spec",
    "write_clip",
)


def __getattr__(name: str):
    if name in _EXPORTS:
        # PEP 562: the CLI parser imports only the config, the scenario on first use
        from sceneforge.scenarios.videos import scenario

        return getattr(scenario, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
