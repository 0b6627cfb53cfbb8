"""Running a shard: client work for the next samples done while the server renders (``lookahead``),
the background writer thread, and the helper threads' priority."""
