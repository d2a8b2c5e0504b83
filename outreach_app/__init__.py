"""Composition root: the only package that imports every other (ASGI app and the `outreach` CLI)."""
