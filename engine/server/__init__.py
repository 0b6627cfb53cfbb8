"""Render server and embedded renderer."""
