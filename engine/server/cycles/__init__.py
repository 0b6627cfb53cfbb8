"""The photoreal renderer: Blender Cycles in its own environment and process (``--renderer cycles``).

``install`` manages the isolated ``bpy`` environment, ``worker`` is the script that runs inside
it, ``client`` drives that process, ``backend`` is the :class:`RenderBackend` (path-traced
``lit``, GL for everything else). Nothing here imports ``bpy``.
"""
