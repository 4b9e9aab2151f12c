"""The data layer: benchmark splits, their loaders and the split registry.

See docs/architecture.md.
"""
