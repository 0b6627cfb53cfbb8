"""The world a sample stands in: environment files (schema and loader), per-sample looks,
background clutter placement (zones, occupancy, bounds). Pure Python; no renderer."""
