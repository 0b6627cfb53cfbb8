"""DSI-Bench-style dynamic clips with hflip / reverse / reverse_hflip variants: the ``videos`` scenario.

Modules: :mod:`.motion` (camera/subject trajectories and variant transforms), :mod:`.scenario`
(plan/run/finalize), :mod:`.dsi` (DSI-Bench questions and CSVs), :mod:`.dsi_eval` (scoring),
:mod:`.video_io` (deterministic mp4 encode/decode).

The scenario class is :class:`.scenario.Videos` (registered by name; ``job.json`` records this
package's path, which :func:`scenarios.contract.get_scenario` resolves to it).
"""
