"""Scenarios and the kit they are built from. Talks to renderers only through engine.client.

Sub-packages by concern: ``world`` (environments, looks, clutter placement), ``sampling`` (view
and object draws, labelling rules), ``pipeline`` (overlapping client work with the server, the
writer thread), ``output`` (writers, scene graphs, masks). The scenarios themselves are
``sparrta``, ``videos``, ``vqa``; the farm contract and registry are ``contract`` and ``registry``.
"""
