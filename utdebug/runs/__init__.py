"""The run layer: records, the run folder, usage and warning text, cache paths.

See docs/architecture.md.
"""
