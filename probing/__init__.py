"""Frozen-backbone probing: reads datasets from disk; backbones, feature cache, heads, training, reports."""
