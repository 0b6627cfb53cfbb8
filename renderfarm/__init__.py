"""Shards scenario jobs over workers (local processes or Ray), with crash-safe resume."""
