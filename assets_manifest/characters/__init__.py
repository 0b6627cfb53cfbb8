"""Skinned, animated people and animals (issue 49): the opt-in character pack from Debian's
``0ad-data`` (:mod:`.pack`), its binary formats and linear-blend skinning (:mod:`.formats`)."""

from sceneforge.assets_manifest.characters.library import CharacterLibrary
from sceneforge.assets_manifest.characters.motion import analyse
from sceneforge.assets_manifest.characters.pack import attribution, dataset_notice, install, installed, pack_root

__all__ = ["CharacterLibrary", "analyse", "attribution", "dataset_notice", "install", "installed", "pack_root"]
