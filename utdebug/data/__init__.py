"""The data layer: benchmark splits, their loaders and the split registry (docs/architecture.md)."""
