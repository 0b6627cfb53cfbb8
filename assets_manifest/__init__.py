"""Asset manifests (schema, loader, builder) and the shipped default pack.

``AssetLibrary`` (see :mod:`assets_manifest.library`) is the front door: asset ids, classes,
licenses and normalised meshes (cm, UE axes, base on z = 0).
"""

from sceneforge.assets_manifest.library import AssetInfo, AssetLibrary

__all__ = ["AssetInfo", "AssetLibrary"]
