"""The client of a render server speaking the UnrealCV protocol (ours or UE5 + UnrealCV).

:class:`RenderClient` (render_client.py) is the one object callers use; its image requests are in
images.py, the stock-UnrealCV fallbacks (a real UE5 server) in stock.py, reply decoding in
codec.py. Imports run one way: render_client → images → stock → codec.

>>> from sceneforge.engine.client import RenderClient
"""

from __future__ import annotations

from sceneforge.core.types import PixelCount
from sceneforge.engine.client.codec import decode_image, parse_address, parse_color, parse_vec, pixel_counts
from sceneforge.engine.client.render_client import RenderClient
from sceneforge.engine.protocol import compact_json

__all__ = [
    "PixelCount",
    "RenderClient",
    "compact_json",
    "decode_image",
    "parse_address",
    "parse_color",
    "parse_vec",
    "pixel_counts",
]
