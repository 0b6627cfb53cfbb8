"""The project's foundation: what every other package may import and what imports nothing of ours.

- :mod:`core.errors`  one error hierarchy (the CLI prints any of them as one line, exit 2);
- :mod:`core.atomic`  atomic file writes (temp name in the same directory, then ``os.replace``);
- :mod:`core.types`   value types that cross package seams (:class:`~core.types.PixelCount`);
- :mod:`core.meshes`  :class:`~core.meshes.RenderMesh`, what the asset library hands the renderer;
- :mod:`core.version` the distribution's version string (the library never imports the CLI).

Layering (imports only point down this list): ``core`` → ``assets_manifest`` → ``engine`` →
``scenarios`` → ``renderfarm`` → ``sceneforge`` (the CLI). ``probing`` stands beside them and
imports only ``core``.
"""
