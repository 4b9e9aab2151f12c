"""The sandbox: runs untrusted, model-written Python safely and fast.

It knows nothing of models. The trusted parent (:class:`Sandbox`) holds every expected output
and decides every verdict; confined children only report what a program returned, as plain
values over a dedicated pipe. See ``docs/sandbox.md`` for the layers and the threat model.
"""

from __future__ import annotations

from utdebug.sandbox.compare import (
    ByRepr,
    CheckSpec,
    EnumMember,
    Opaque,
    Record,
    Semantics,
    Structured,
)
from utdebug.sandbox.layers import Layer, LayerReport, SandboxUnavailable
from utdebug.sandbox.server import (
    REFERENCE_PRELUDE,
    BatchResult,
    LimitKind,
    Limits,
    ModuleContext,
    Outcome,
    Raised,
    Sandbox,
    SandboxConfig,
    SandboxError,
    StagedTest,
    Status,
    encode_inputs,
)

__all__ = [
    "REFERENCE_PRELUDE",
    "BatchResult",
    "ByRepr",
    "CheckSpec",
    "EnumMember",
    "Layer",
    "LayerReport",
    "LimitKind",
    "Limits",
    "ModuleContext",
    "Opaque",
    "Outcome",
    "Raised",
    "Record",
    "Sandbox",
    "SandboxConfig",
    "SandboxError",
    "SandboxUnavailable",
    "Semantics",
    "StagedTest",
    "Status",
    "Structured",
    "encode_inputs",
]
