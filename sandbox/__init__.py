"""The sandbox: runs untrusted, model-written Python safely and fast.

It knows nothing of models. The trusted parent (:class:`Sandbox`) holds every expected output
and decides every verdict; confined children only report what a program returned, as plain
values over a dedicated pipe. See ``docs/sandbox.md`` for the layers and the threat model.
"""

from __future__ import annotations

from utdebug.sandbox.compare import CheckSpec, Semantics
from utdebug.sandbox.config import (
    REFERENCE_PRELUDE,
    LimitKind,
    Limits,
    ModuleContext,
    SandboxConfig,
    StagedTest,
)
from utdebug.sandbox.executor import Sandbox
from utdebug.sandbox.frames import encode_inputs
from utdebug.sandbox.layers import Layer, LayerReport, SandboxUnavailable
from utdebug.sandbox.outcomes import BatchResult, Outcome, Raised, SandboxError, Status
from utdebug.sandbox.values import ByRepr, EnumMember, Opaque, Record, Structured

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
