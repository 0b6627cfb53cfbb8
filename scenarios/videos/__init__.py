"""DSI-Bench-style dynamic clips with hflip / reverse / reverse_hflip variants: the ``videos`` scenario.

Modules: :mod:`.motion` (camera/subject trajectories and variant transforms), :mod:`.scenario`
(plan/run/finalize), :mod:`.dsi` (DSI-Bench questions and CSVs), :mod:`.dsi_eval` (scoring),
:mod:`.video_io` (deterministic mp4 encode/decode).
"""
from sceneforge.scenarios.videos.scenario import (  # noqa: F401  (the scenario contract and its helpers)
    CARD_FILE, NAME, Config, VideoConfig, clip_record, clip_rng, finalize, load_context, make_clip, mirror_world,
    plan, render_frames, run, sample_clip, server_spec, write_clip,
)
