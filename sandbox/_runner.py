"""The untrusted side of the sandbox: a fork server ("zygote") and its confined children.

This file is self-contained (standard library only, no utdebug imports) because the parent
starts the zygote as ``python -I -c <this file's source>`` inside the confinement, where the
utdebug package is not visible. The parent also imports it, to share the value codec.

Protocol (every message is a frame: 4-byte big-endian length + UTF-8 JSON):

parent -> zygote, on a Unix socket:
  {"op": "spawn", "job": {...}}      reply {"pid": N, "pidfd": bool} with the read end of the
                                     child's result pipe and the write end of its input pipe
                                     attached (SCM_RIGHTS), and a pidfd of the child after
                                     them when the kernel has pidfd_open (the parent learns
                                     the child's pid in its own namespace from it, to read the
                                     child's CPU clock and schedstat)
  {"op": "reap", "pid": N}           SIGKILL + wait4; reply {"status", "maxrss_kb", "cpu"}
  {"op": "info"}                     reply: what this zygote could set up
parent -> child, on its input pipe: first the program ({"code", "entry_point"[, "context"]
  [, "test"]}: the zygote never holds a job's text, so no child can find an earlier one in the
  memory it inherits), then input k (4-byte length + its JSON), sent only once the frame of
  input k - 1 (or the load frame) has arrived; the job holds no input
child -> parent, on its own result pipe (the only other fd it keeps):
  {"k": "load", "ok": bool, "t": s[, "e": [type, msg], "timeout": bool]}
  {"k": "r", "i": index, "s": "ok"|"exc"|"timeout", "t": s[, "v": value][, "e": [type, msg],
   "x": [stage, builtin classes, [[module, qualname], ...]]]}
  (``x``: which stage of a test with setup raised, and the exception's classes as read from its
  type object with references taken before any program: the builtin exception classes of its
  MRO, by identity, and the names of the others)
  while an input of a test with setup runs, its facts, each sent as it happens:
  {"k": "x", "n": type name, "x": [stage, builtin classes, [[module, qualname], ...]]}
                                     a stage raised (the parent takes this stage, not the
                                     result's)
  {"k": "f", "v": [kind, line, [operands], {keyword operands}, identity, classes, hooked]}
                                     an assertion's operands, copied when it was made
  {"k": "end", "out": bytes printed}

``t`` is the wall time of the call (or the load), as the child measured it. The child reports
no CPU reading: while it waits for its next input it uses no CPU time, so the parent's own
reading of the child's CPU clock once a frame is in charges that input exactly (see
``collector.py``).

The child never receives expected outputs; it only reports what the program returned. The
parent decodes plain values, checks ordering and sizes, and decides every verdict.

The child's reporter (the codec, the JSON encoder, the frame writer, the timers) holds only
references taken when this file is loaded in the zygote, before any program: a program that
patches builtins, ``json``, ``os`` or this module's globals changes its own results at most,
never the reporter's ability to report them.
"""

from __future__ import annotations

import base64
import builtins
import contextlib
import datetime
import decimal
import enum
import fcntl
import fractions
import gc
import itertools
import json
import math
import os
import pathlib
import resource
import select
import signal
import struct
import sys
import time
import types
import uuid
import warnings

try:
    import _json

    _c_make_encoder = _json.make_encoder
    _c_make_scanner = _json.make_scanner
    _c_escape = _json.encode_basestring_ascii
except (ImportError, AttributeError):  # pragma: no cover - CPython always has _json
    _c_make_encoder = _c_make_scanner = _c_escape = None

# ---------------------------------------------------------------------------------------------
# JSON with references bound now (json.dumps / json.loads look up module and class attributes
# at call time, which a program can patch).
# ---------------------------------------------------------------------------------------------


def _make_json():  # type: ignore[no-untyped-def]
    join = "".join
    if _c_make_encoder is not None:

        def _no_default(o, _type=type):  # type: ignore[no-untyped-def]
            raise TypeError(f"cannot encode {_type(o).__name__} as JSON")

        enc = _c_make_encoder(None, _no_default, _c_escape, None, ":", ",", False, False, False)

        def dumps(obj, _enc=enc, _join=join):  # type: ignore[no-untyped-def]
            return _join(_enc(obj, 0))

    else:  # pragma: no cover
        _encoder = json.JSONEncoder(separators=(",", ":"), allow_nan=False)

        def dumps(obj, _encode=_encoder.encode):  # type: ignore[no-untyped-def]
            return _encode(obj)

    if _c_make_scanner is not None:
        scan = _c_make_scanner(json.JSONDecoder())

        def loads(text, _scan=scan, _len=len, _stop=StopIteration):  # type: ignore[no-untyped-def]
            try:
                obj, end = _scan(text, 0)
            except _stop:
                raise ValueError("not JSON") from None
            if end != _len(text):
                raise ValueError("trailing data after JSON")
            return obj

    else:  # pragma: no cover
        loads = json.JSONDecoder().decode
    return dumps, loads


dumps, loads = _make_json()

# ---------------------------------------------------------------------------------------------
# Value codec: tagged JSON of plain types. Encoding reads values through the *base* types'
# methods, so a subclass cannot lie about equality: the parent rebuilds plain values and
# compares those. Every builtin is bound here, before any untrusted code can patch it.
# ---------------------------------------------------------------------------------------------

MAX_DEPTH = 100
_BIG = 1 << 62
MAX_FIELDS = 1000
"""Most fields one object may have to be encoded structurally (more: compared by repr)."""
MAX_OBJECT_FIELDS = 100_000
"""Most object fields one result may encode; objects past it are compared by repr."""
MAX_TEXT = 4300
"""Longest text of a Decimal, and most bits of a Fraction's numerator or denominator, encoded
structurally (the parent never does arithmetic on bigger ones: more is compared by repr)."""
MAX_PATH = 65536
"""Longest path text encoded structurally."""
MAX_NAME = 200
"""Longest module, class, field or member name in a structural value."""
PATH_KINDS = ("PurePosixPath", "PureWindowsPath", "PosixPath", "WindowsPath")
MAX_SOURCE = 100_000
"""Longest source text of a function sent as an input (``$fn``)."""
INPUT_FORMS: dict = {}  # type: ignore[type-arg]
"""The parent's input stand-ins (an enum member, a function by its source, an iterator made
from a list) by type -> ``form(value, depth, encode)``, their tagged form: filled by the
parent (``frames.py``), empty in the zygote and its children."""


class EncodeError(Exception):
    pass


class _Timeout(BaseException):
    """Raised by the SIGALRM handler: the input's (or the load's) time is up."""


# numpy's classes and base methods, bound by the zygote right after it imports numpy
# (bind_numpy), or lazily in the parent.
_NP: list = [None]  # type: ignore[type-arg]


def bind_numpy(np=None):  # type: ignore[no-untyped-def]
    """Bind numpy's base classes and methods (the zygote calls this before any program)."""
    if np is None:
        np = sys.modules.get("numpy")
    if np is None:
        return None
    nd, gen = np.ndarray, np.generic
    _NP[0] = (
        np,
        nd,
        gen,
        nd.tolist,
        nd.__dict__["dtype"].__get__,
        nd.__dict__["shape"].__get__,
        gen.item,
        gen.__dict__["dtype"].__get__,
    )
    return _NP[0]


class _ValueKinds:
    """The structural encoders (bound when this file loads, like the rest of the codec)."""

    __slots__ = ("encode", "record", "reset")


def _make_value_kinds():  # type: ignore[no-untyped-def]
    """Encoders for values that are not plain data but have a structure the parent can
    compare: the standard library's value types (dates and times, Decimal, Fraction, UUID,
    paths), enum members, namedtuples, and instances of classes written in Python
    (dataclasses, attrs classes, objects with ``__dict__`` or ``__slots__``).

    Values are read through the base types' descriptors (``date.year``, the ``int`` slot of
    ``UUID``, ``object.__getattribute__``), bound here; a property or ``__dict__`` that runs
    code runs it under the input's timer. An object that cannot be read (a descriptor that
    raises, too many fields, a cycle back to itself, past the depth or the result's field
    count) is left to the caller, which reports it by its repr.
    """
    _type, _isinstance, _len, _str, _int, _tuple, _list, _dict = (
        type, isinstance, len, str, int, tuple, list, dict,
    )  # fmt: skip
    _id, _Timeout_, _AttributeError, _BaseException = id, _Timeout, AttributeError, BaseException
    _zip, _set = zip, set
    str_str, int_int, tuple_iter, dict_items = str.__str__, int.__int__, tuple.__iter__, dict.items
    str_startswith, str_endswith, str_lstrip = str.startswith, str.endswith, str.lstrip
    set_add, set_discard, set_clear = set.add, set.discard, set.clear
    obj_getattr = object.__getattribute__
    tdict = type.__dict__
    type_name = tdict["__name__"].__get__
    type_qualname = tdict["__qualname__"].__get__
    type_module = tdict["__module__"].__get__
    type_mro = tdict["__mro__"].__get__
    type_dict = tdict["__dict__"].__get__
    type_flags = tdict["__flags__"].__get__
    mp_get = type(tdict).get
    heap, immutable = 1 << 9, 1 << 8
    _object, _Namespace, _Exception, _Enum = object, types.SimpleNamespace, BaseException, enum.Enum
    missing = object()

    dt = datetime
    _date, _datetime, _time, _timedelta, _timezone = (
        dt.date, dt.datetime, dt.time, dt.timedelta, dt.timezone,
    )  # fmt: skip

    def getter(cls, name):  # type: ignore[no-untyped-def]
        return cls.__dict__[name].__get__

    d_year, d_month, d_day = getter(_date, "year"), getter(_date, "month"), getter(_date, "day")
    dt_parts = [getter(_datetime, n) for n in ("hour", "minute", "second", "microsecond")]
    dt_fold, dt_tz = getter(_datetime, "fold"), getter(_datetime, "tzinfo")
    t_parts = [getter(_time, n) for n in ("hour", "minute", "second", "microsecond")]
    t_fold, t_tz = getter(_time, "fold"), getter(_time, "tzinfo")
    td_parts = [getter(_timedelta, n) for n in ("days", "seconds", "microseconds")]
    tz_offset = _timezone.utcoffset
    _Decimal, dec_str = decimal.Decimal, decimal.Decimal.__str__
    _Fraction = fractions.Fraction
    fr_num, fr_den = getter(_Fraction, "_numerator"), getter(_Fraction, "_denominator")
    _UUID, uuid_int = uuid.UUID, getter(uuid.UUID, "int")
    pl = pathlib
    _PurePath, path_str = pl.PurePath, pl.PurePath.__str__
    # a path's text from its parts (3.11's slots), never from its cached string, which a
    # program can rewrite; where the slots differ (another Python), its __str__
    path_slots = [pl.PurePath.__dict__.get(n) for n in ("_drv", "_root", "_parts")]
    path_parts = [d.__get__ for d in path_slots] if all(d is not None for d in path_slots) else None
    str_join, list_iter = str.join, list.__iter__
    path_kinds = (pl.PosixPath, pl.WindowsPath, pl.PurePosixPath, pl.PureWindowsPath)
    path_names = ("PosixPath", "WindowsPath", "PurePosixPath", "PureWindowsPath")
    state = [0, set()]  # object fields encoded so far in this result; objects on the path
    # what each class of this result is (read once per result: a result of 50,000 objects of
    # one class reads its class's MRO, slots and dataclass fields once, not 50,000 times)
    classes: dict = {}  # type: ignore[type-arg]
    stdlib_kinds = (_date, _timedelta, _time, _Decimal, _Fraction, _UUID, _PurePath)
    dict_clear, dict_get = dict.clear, dict.get

    def reset():  # type: ignore[no-untyped-def]
        state[0] = 0
        set_clear(state[1])
        dict_clear(classes)

    def class_info(t):  # type: ignore[no-untyped-def]
        """(t, is a standard-library value type, is an enum, its fields as a class holds
        them): see ``class_fields``."""
        hit = dict_get(classes, _id(t))
        if hit is not None and hit[0] is t:
            return hit
        std = False
        for k in tuple_iter(stdlib_kinds):
            if is_sub(t, k):
                std = True
                break
        is_enum = not std and is_sub(t, _Enum)
        info = (t, std, is_enum, None if std or is_enum else class_fields(t))
        classes[_id(t)] = info
        return info

    def is_sub(t, base):  # type: ignore[no-untyped-def]
        for c in tuple_iter(type_mro(t)):  # noqa: SIM110 - any() is a patchable builtin
            if c is base:
                return True
        return False

    def class_attr(t, name):  # type: ignore[no-untyped-def]
        for c in tuple_iter(type_mro(t)):
            v = mp_get(type_dict(c), name, missing)
            if v is not missing:
                return v
        return missing

    def names_of(t):  # type: ignore[no-untyped-def]
        """The class's module and qualified name, as its type object holds them. A class
        whose ``__qualname__`` does not end with its ``__name__`` claims a name it was not
        given (``__qualname__ = 'Point'`` on another class): its name says both."""
        mod = type_module(t)
        mod = str_str(mod)[:MAX_NAME] if _isinstance(mod, _str) else ""
        qual, name = str_str(type_qualname(t)), str_str(type_name(t))
        if qual != name and not str_endswith(qual, "." + name):
            qual = qual + " (a class named " + name + ")"
        return mod, qual[:MAX_NAME]

    def path_text(value, sep):  # type: ignore[no-untyped-def]
        if path_parts is None:
            return path_str(value)
        drv, root, parts = (g(value) for g in path_parts)
        if _type(drv) is not _str or _type(root) is not _str or _type(parts) is not _list:
            return None
        names = [str_str(x) for x in list_iter(parts) if _isinstance(x, _str)]
        if _len(names) != _len(parts):
            return None
        if drv or root:
            return str_str(drv) + str_str(root) + str_join(sep, names[1:])
        return str_join(sep, names) or "."

    def offset(tz):  # type: ignore[no-untyped-def]
        """The fixed offset of a ``timezone`` in microseconds; False for another tzinfo."""
        if tz is None:
            return None
        if _type(tz) is not _timezone:
            return False
        days, secs, us = (g(tz_offset(tz, None)) for g in td_parts)
        return (days * 86400 + secs) * 1000000 + us

    def stdlib(value, t):  # type: ignore[no-untyped-def]
        if is_sub(t, _datetime):
            off = offset(dt_tz(value))
            if off is False:
                return None
            parts = [d_year(value), d_month(value), d_day(value)]
            parts += [g(value) for g in dt_parts]
            return {"$datetime": [*parts, dt_fold(value), off]}
        if is_sub(t, _date):
            return {"$date": [d_year(value), d_month(value), d_day(value)]}
        if is_sub(t, _time):
            off = offset(t_tz(value))
            if off is False:
                return None
            return {"$time": [*(g(value) for g in t_parts), t_fold(value), off]}
        if is_sub(t, _timedelta):
            return {"$timedelta": [g(value) for g in td_parts]}
        if is_sub(t, _Decimal):
            text = dec_str(value)
            return {"$decimal": text} if _len(text) <= MAX_TEXT else None
        if is_sub(t, _Fraction):
            num, den = int_int(fr_num(value)), int_int(fr_den(value))
            if num.bit_length() > MAX_TEXT or den.bit_length() > MAX_TEXT:
                return None
            return {"$fraction": [num.__format__("x"), den.__format__("x")]}
        if is_sub(t, _UUID):
            return {"$uuid": int_int(uuid_int(value)).__format__("032x")}
        if is_sub(t, _PurePath):
            for kind, name in _zip(path_kinds, path_names, strict=True):
                if is_sub(t, kind):
                    text = path_text(value, "\\" if "Windows" in name else "/")
                    if not _isinstance(text, _str) or _len(text) > MAX_PATH:
                        return None
                    return {"$path": [name, str_str(text)]}
        return missing

    def python_class(t):  # type: ignore[no-untyped-def]
        """Whether every class of ``t``'s MRO but ``object`` was written in Python (a
        mutable heap type): a C type's state would not be in the fields."""
        for c in tuple_iter(type_mro(t)):
            if c is _object or c is _Namespace:
                continue
            flags = type_flags(c)
            if not flags & heap or flags & immutable:
                return False
        return True

    def dunder(name):  # type: ignore[no-untyped-def]
        return _len(name) > 4 and str_startswith(name, "__") and str_endswith(name, "__")

    def slot_names(t):  # type: ignore[no-untyped-def]
        names = []
        for c in tuple_iter(type_mro(t)):
            slots = mp_get(type_dict(c), "__slots__", missing)
            if slots is missing:
                continue
            if _isinstance(slots, _str):
                slots = (slots,)
            if not _isinstance(slots, (_tuple, _list)):
                return None
            owner = str_lstrip(str_str(type_name(c)), "_")
            for name in slots:
                if not _isinstance(name, _str):
                    return None
                name = str_str(name)
                if dunder(name):  # __dict__, __weakref__, a framework's own bookkeeping
                    continue
                if str_startswith(name, "__") and not str_endswith(name, "__") and owner:
                    name = "_" + owner + name  # private names are mangled
                names.append(name)
        return names

    def class_fields(t):  # type: ignore[no-untyped-def]
        """What a class says of its instances' fields: ``("fixed", names)`` (a dataclass's
        fields, an attrs class's attributes), ``("slots", names, has no __slots__)`` (a class
        written in Python: its slots, its instances' ``__dict__`` besides), or None (not a
        structural object)."""
        dc = class_attr(t, "__dataclass_fields__")
        if _type(dc) is _dict:
            names = []
            for name, f in dict_items(dc):
                kind = obj_getattr(obj_getattr(f, "_field_type"), "name")
                if _isinstance(name, _str) and _isinstance(kind, _str) and kind == "_FIELD":
                    names.append(str_str(name))
            return ("fixed", names)
        attrs = class_attr(t, "__attrs_attrs__")
        if attrs is not missing and _isinstance(attrs, _tuple):
            names = []
            for a in tuple_iter(attrs):
                name = obj_getattr(a, "name")
                if not _isinstance(name, _str):
                    return None
                names.append(str_str(name))
            return ("fixed", names)
        if not python_class(t) or is_sub(t, _Exception):
            return None
        names = slot_names(t)
        if names is None:
            return None
        return ("slots", names, class_attr(t, "__slots__") is missing)

    def field_names(value, info):  # type: ignore[no-untyped-def]
        """The fields to read, in order, or None when ``value`` is not a structural object."""
        if info is None:
            return None
        names = _list(info[1])
        if info[0] == "fixed":
            return names
        try:
            inst = obj_getattr(value, "__dict__")  # a property here runs in the input's time
        except _AttributeError:
            inst = None
        if _type(inst) is _dict:
            for name in dict_items(inst):
                if not _isinstance(name[0], _str):
                    return None
                if not dunder(str_str(name[0])):  # e.g. typing's __orig_class__
                    names.append(str_str(name[0]))
        elif not names and info[2]:
            return None
        return names

    def fields_of(value, names, d, enc):  # type: ignore[no-untyped-def]
        out = []
        for name in names:
            try:
                v = obj_getattr(value, name)
            except _AttributeError:  # an unset slot, a field deleted
                continue
            out.append([name[:MAX_NAME], enc(v, d)])
        return out

    def encode(value, t, d, enc):  # type: ignore[no-untyped-def]
        """The tagged form of ``value``, or None (the caller reports it by its repr)."""
        try:
            return tagged(value, t, d, enc)
        except _Timeout_:
            raise
        except _BaseException:  # a descriptor that raises, a field nested too deeply ...
            return None

    def tagged(value, t, d, enc):  # type: ignore[no-untyped-def]
        _, std, is_enum, fields_info = class_info(t)
        if std:
            known = stdlib(value, t)
            if known is not missing:
                return known
            fields_info = class_fields(t)  # a subclass of no kind the codec knows
        if is_enum:
            # the member's name as its class maps it (by identity), never its _name_, which
            # a program can rewrite; and its value, compared too
            members = class_attr(t, "_member_map_")
            if _type(members) is not _dict:
                return None
            name = None
            for key, member in dict_items(members):
                if member is value and _isinstance(key, _str):
                    name = str_str(key)
                    break
            if name is None:
                return None
            val = enc(obj_getattr(value, "_value_"), d)
            return {"$enum": [*names_of(t), name[:MAX_NAME], val]}
        if d > MAX_DEPTH:
            return None
        path = state[1]
        key = _id(value)
        if key in path:
            return {"$opaque": [".".join(names_of(t)), "..."]}
        names = field_names(value, fields_info)
        if names is None or _len(names) > MAX_FIELDS or _len(_set(names)) != _len(names):
            return None
        state[0] += _len(names)
        if state[0] > MAX_OBJECT_FIELDS:
            return None
        set_add(path, key)
        try:
            fields = fields_of(value, names, d, enc)
        finally:
            set_discard(path, key)
        return {"$obj": [*names_of(t), fields]}

    def record(value, t, d, enc):  # type: ignore[no-untyped-def]
        """A namedtuple: ``{"$record": [module, qualname, field names, items]}``, or None."""
        names = class_attr(t, "_fields")
        if not _isinstance(names, _tuple) or _len(names) != _len(value):
            return None
        if _len(names) > MAX_FIELDS:
            return None
        clean = []
        for name in tuple_iter(names):
            if not _isinstance(name, _str):
                return None
            clean.append(str_str(name)[:MAX_NAME])
        items = [enc(x, d) for x in tuple_iter(value)]
        return {"$record": [*names_of(t), clean, items]}

    kinds = _ValueKinds()
    kinds.encode, kinds.record, kinds.reset = encode, record, reset
    return kinds


def _make_exc_facts():  # type: ignore[no-untyped-def]
    """``facts(e, stage)``: ``[stage, builtins, others]`` for an exception ``e``: the builtin
    exception classes of its class's MRO, found by identity with the classes this file saw
    before any program ran (a module's own ``class KeyError(Exception)`` is not ``KeyError``;
    a ``BaseException`` subclass named ``ValueError`` is not ``ValueError``), and the module
    and qualified name of its other classes (at most 8), read from the type objects through
    descriptors bound here. The parent matches ``raises X`` with these alone."""
    known = {}
    for name, cls in vars(builtins).items():
        if isinstance(cls, type) and issubclass(cls, BaseException):
            known[id(cls)] = (name, cls)
    _type, _id, _isinstance, _str, _len = type, id, isinstance, str, len
    tuple_iter, str_str, mp_get = tuple.__iter__, str.__str__, dict.get
    tdict = type.__dict__
    type_mro = tdict["__mro__"].__get__
    type_qualname = tdict["__qualname__"].__get__
    type_module = tdict["__module__"].__get__
    _object, _Timeout_, _BaseException = object, _Timeout, BaseException

    def facts(e, stage=None):  # type: ignore[no-untyped-def]
        found, others = [], []
        try:
            for c in tuple_iter(type_mro(_type(e))):
                hit = mp_get(known, _id(c))
                if hit is not None and hit[1] is c:
                    found.append(hit[0])
                elif c is not _object and _len(others) < 8:
                    mod = type_module(c)
                    mod = str_str(mod)[:MAX_NAME] if _isinstance(mod, _str) else ""
                    others.append([mod, str_str(type_qualname(c))[:MAX_NAME]])
        except _Timeout_:
            raise
        except _BaseException:  # a type object that cannot be read: no class it can claim
            pass
        return [stage, found, others]

    return facts


_exc_facts = _make_exc_facts()


def _make_encode():  # type: ignore[no-untyped-def]
    _type, _int, _float, _str, _bool = type, int, float, str, bool
    _list, _tuple, _set, _frozenset, _dict = list, tuple, set, frozenset, dict
    _complex, _bytes, _bytearray = complex, bytes, bytearray
    _isinstance, _isfinite, _b64, _len = isinstance, math.isfinite, base64.b64encode, len
    int_int, float_float, str_str, complex_complex = (
        int.__int__,
        float.__float__,
        str.__str__,
        complex.__complex__,
    )
    list_iter, tuple_iter, set_iter, fs_iter, dict_items = (
        list.__iter__,
        tuple.__iter__,
        set.__iter__,
        frozenset.__iter__,
        dict.items,
    )
    bytes_slice, bytearray_slice, whole = bytes.__getitem__, bytearray.__getitem__, slice(None)
    ascii_decode, int_format = bytes.decode, int.__format__
    str_isascii, str_encode, _UnicodeError = str.isascii, str.encode, UnicodeEncodeError
    type_name = type.__dict__["__name__"].__get__
    type_qualname = type.__dict__["__qualname__"].__get__
    type_module = type.__dict__["__module__"].__get__
    _repr, _ValueError, _Error, _Timeout_ = repr, ValueError, EncodeError, _Timeout
    np_holder, _bind = _NP, bind_numpy
    value_kinds = _make_value_kinds()
    _BaseExc, exc_facts = BaseException, _exc_facts
    input_forms = INPUT_FORMS

    def opaque_name(value):  # type: ignore[no-untyped-def]
        try:
            t = _type(value)
            mod = type_module(t)
            mod = str_str(mod) if _isinstance(mod, _str) else "?"
            return (mod + "." + str_str(type_qualname(t)))[:200]
        except _Timeout_:
            raise
        except BaseException:
            return "<unknown type>"

    def opaque_text(value):  # type: ignore[no-untyped-def]
        # Runs the program's __repr__ (under the input's timer): a Timeout is not swallowed.
        try:
            text = _repr(value)
            return str_str(text)[:500] if _isinstance(text, _str) else ""
        except _Timeout_:
            raise
        except BaseException:
            return "<" + opaque_name(value) + " object>"

    def encode(value, _depth=0):  # type: ignore[no-untyped-def]
        """Encode ``value`` as JSON-able plain data with tags for non-JSON types."""
        if _depth > MAX_DEPTH:
            raise _Error("value nested too deeply")
        t = _type(value)
        if value is None or t is _bool:
            return value
        if _isinstance(value, _int):
            v = int_int(value)  # the stored integer, whatever the subclass says
            if -_BIG < v < _BIG:
                return v
            return {"$int": int_format(v, "x") if v >= 0 else "-" + int_format(-v, "x")}
        if _isinstance(value, _float):
            f = float_float(value)
            if _isfinite(f):
                return f
            return {"$float": "nan" if f != f else ("inf" if f > 0 else "-inf")}
        if _isinstance(value, _str):
            s = str_str(value)
            if not str_isascii(s):
                try:
                    str_encode(s, "utf-8")
                except _UnicodeError:  # lone surrogates: JSON would pair \ud83d + \ude00
                    raw = str_encode(s, "utf-8", "surrogatepass")
                    return {"$str": ascii_decode(_b64(raw), "ascii")}
            return s
        d = _depth + 1
        if _isinstance(value, _list):
            return [encode(x, d) for x in list_iter(value)]
        if _isinstance(value, _tuple):
            if t is not _tuple:  # a namedtuple: its type and field names besides the items
                rec = value_kinds.record(value, t, d, encode)
                if rec is not None:
                    return rec
            return {"$tuple": [encode(x, d) for x in tuple_iter(value)]}
        if _isinstance(value, _frozenset):
            return {"$frozenset": [encode(x, d) for x in fs_iter(value)]}
        if _isinstance(value, _set):
            return {"$set": [encode(x, d) for x in set_iter(value)]}
        if _isinstance(value, _dict):
            return {"$dict": [[encode(k, d), encode(v, d)] for k, v in dict_items(value)]}
        if _isinstance(value, _complex):
            c = complex_complex(value)
            return {"$complex": [encode(c.real, d), encode(c.imag, d)]}
        if _isinstance(value, _bytes):
            return {"$bytes": ascii_decode(_b64(bytes_slice(value, whole)), "ascii")}
        if _isinstance(value, _bytearray):
            raw = _bytes(bytearray_slice(value, whole))
            return {"$bytearray": ascii_decode(_b64(raw), "ascii")}
        np = np_holder[0] or _bind()
        if np is not None:
            _, nd, gen, tolist, nd_dtype, nd_shape, item, gen_dtype = np
            if _isinstance(value, nd):
                dt = nd_dtype(value)
                if dt.kind in "biufcU":
                    return {
                        "$ndarray": {
                            "dtype": dt.str,
                            "shape": [int_int(k) for k in nd_shape(value)],
                            "v": encode(tolist(value), d),
                        }
                    }
            elif _isinstance(value, gen):
                dt = gen_dtype(value)
                if dt.kind in "biufcU":
                    return {"$np": [dt.str, encode(item(value), d)]}
        if _isinstance(value, _BaseExc):  # its classes by identity, as a raised one's
            name, msg = exc_info(value)
            return {"$exc": [name, msg, exc_facts(value)]}
        form = input_forms.get(t)
        if form is not None:
            return form(value, d, encode)
        known = value_kinds.encode(value, t, d, encode)
        if known is not None:
            return known
        return {"$opaque": [opaque_name(value), opaque_text(value)]}

    def exc_info(e):  # type: ignore[no-untyped-def]
        """[type name, message] of an exception; its __str__ is the program's code."""
        try:
            name = str_str(type_name(_type(e)))[:200]
        except _Timeout_:
            raise
        except BaseException:
            name = "Exception"
        try:
            msg = _type(e).__str__(e)
            msg = str_str(msg)[:1000] if _isinstance(msg, _str) else "<unprintable>"
        except _Timeout_:
            raise
        except BaseException:
            msg = "<unprintable>"
        return [name, msg]

    gc_off, gc_on, gc_is_on = gc.disable, gc.enable, gc.isenabled

    def encode_value(value, _depth=0, _reset=value_kinds.reset):  # type: ignore[no-untyped-def]
        """:func:`encode` of one whole result (a fresh object-field count and cycle set),
        with the cyclic garbage collector paused: the encoded form holds no cycle, and
        collections over a growing result of 100,000 containers doubled its cost."""
        _reset()
        was_on = gc_is_on()
        gc_off()
        try:
            return encode(value, _depth)
        finally:
            if was_on:
                gc_on()

    return encode_value, opaque_name, opaque_text, exc_info


encode, _opaque_name, _opaque_text, _exc_info = _make_encode()


STAGES = (None, "setup", "call", "then", "report")
"""Where an exception of a test with setup came from (None: a plain call)."""


def read_exc_facts(
    raw: object,
) -> tuple[str | None, tuple[str, ...], tuple[tuple[str, str], ...]] | None:
    """An exception's facts as a frame carries them (``[stage, builtins, others]``, see
    :func:`_make_exc_facts`), checked: (stage, builtin class names, (module, qualname) pairs)
    with every name bounded, or None when they are malformed."""
    if type(raw) is not list or len(raw) != 3:
        return None
    stage, found, others = raw
    if stage not in STAGES or type(found) is not list or type(others) is not list:
        return None
    if len(found) > 64 or len(others) > 8 or any(type(x) is not str for x in found):
        return None
    pairs: list[tuple[str, str]] = []
    for pair in others:
        if type(pair) is not list or len(pair) != 2 or any(type(x) is not str for x in pair):
            return None
        pairs.append((pair[0][:MAX_NAME], pair[1][:MAX_NAME]))
    return stage, tuple(x[:64] for x in found), tuple(pairs)


def no_opaque(type_name: str, text: str, parts: tuple | None = None) -> object:  # type: ignore[type-arg]
    """The child's stand-in builder: an opaque value or an object of a user's class (an enum
    member, a namedtuple, an instance) cannot be an input."""
    what = "opaque" if parts is None else str(parts[0])
    raise ValueError(f"an {what} {type_name} cannot be an input")


def _make_inputs():  # type: ignore[no-untyped-def]
    """``(make_input, resolve, pending)``: the child's builder for the input forms the parent
    sends besides plain data (an enum member, a function by its source or name, an iterator
    made from a list): decoding leaves a placeholder and sets ``pending[0]``; ``resolve(args,
    g)`` builds the real objects from the program's module ``g``, under the input's timer (a
    lookup or a compile may run the program's code)."""
    _type, _list, _tuple, _dict, _set, _frozenset = type, list, tuple, dict, set, frozenset
    _getattr, _iter, _range, _compile, _eval, _exec = getattr, iter, range, compile, eval, exec
    _import, _modules, _builtins, _enumerate = __import__, sys.modules, builtins, enumerate
    _max_depth = MAX_DEPTH

    class Deferred:
        __slots__ = ("parts",)

        def __init__(self, parts):  # type: ignore[no-untyped-def]
            self.parts = parts

    pending = [False]

    def make_input(type_name, text, parts=None):  # type: ignore[no-untyped-def]
        if parts is None or parts[0] not in ("enum", "fn", "iter"):
            return no_opaque(type_name, text, parts)
        pending[0] = True
        return Deferred(parts)

    def lookup(dotted, module, g):  # type: ignore[no-untyped-def]
        names = dotted.split(".")
        if names[0] in g:
            obj = g[names[0]]
        elif module:
            _import(module)
            obj = _getattr(_modules[module], names[0])
        else:
            obj = _getattr(_builtins, names[0])
        for name in names[1:]:
            obj = _getattr(obj, name)
        return obj

    def build(parts, g, d):  # type: ignore[no-untyped-def]
        kind = parts[0]
        if kind == "enum":
            return _getattr(lookup(parts[2], parts[1], g), parts[3])
        if kind == "fn":
            source, name, module = parts[1], parts[2], parts[3]
            if not source:
                return lookup(name, module, g)
            if name == "<lambda>":
                return _eval(_compile(source, "<seed>", "eval"), g)
            ns = _dict(g)  # a copy: the test's helper never replaces a name of the module
            _exec(_compile(source, "<seed>", "exec"), ns)
            return ns[name]
        items = resolve(parts[2], g, d + 1)
        if parts[1] == "range":
            return _range(*items)
        if parts[1] == "gen":
            return (x for x in items)
        return _iter(items)

    def resolve(value, g, d=0):  # type: ignore[no-untyped-def]
        t = _type(value)
        if t is Deferred:
            return build(value.parts, g, d)
        if d > _max_depth:
            return value
        if t is _list:
            for i, x in _enumerate(value):
                value[i] = resolve(x, g, d + 1)
            return value
        if t is _tuple:
            return _tuple([resolve(x, g, d + 1) for x in value])
        if t is _dict:
            return {resolve(k, g, d + 1): resolve(x, g, d + 1) for k, x in value.items()}
        if t is _set or t is _frozenset:
            return t([resolve(x, g, d + 1) for x in value])
        return value

    return make_input, resolve, pending


_make_input, _resolve_inputs, _inputs_pending = _make_inputs()


NUMERIC_DTYPES = frozenset(
    p + c
    for p in "<>|="
    for c in ("b1", "i1", "i2", "i4", "i8", "u1", "u2", "u4", "u8", "f2", "f4", "f8", "c8", "c16")
)

SAME_HASH_MAX = 8
"""At most this many elements of one set or dict may share a hash (a real one never gets
close): more make building it quadratic, which a forged frame would use to stall the parent."""


class OverBudget(ValueError):
    """Decoding a result would allocate more in the parent than its frame's budget."""


class DecodeTimeout(Exception):
    """Decoding a result passed the input's deadline."""


class TooCostly(OverBudget):
    """Decoding a result passed the parent's share of the children's CPU time."""


class Budget:
    """What the parent may spend decoding one frame: bytes to allocate, and a deadline.

    ``charge(n)`` books ``n`` bytes of new objects; every few thousand charges the clock is
    read, and past ``deadline`` decoding stops with :class:`DecodeTimeout`; past ``cost_end``
    (the parent's own thread CPU time: what reading the batch may cost it) with
    :class:`TooCostly`.
    """

    __slots__ = ("clock", "cost_end", "deadline", "left", "ticks", "total")

    def __init__(  # type: ignore[no-untyped-def]
        self, nbytes: int, deadline: float | None = None, clock=time.monotonic, cost_end=None
    ) -> None:
        self.total = nbytes
        self.left = nbytes
        self.deadline = deadline
        self.clock = clock
        self.cost_end = cost_end
        self.ticks = 0

    def charge(self, n: int) -> None:
        self.left -= n
        if self.left < 0:
            raise OverBudget(
                f"the result would need more than {self.total} bytes in the parent to decode"
            )
        self.ticks += 1
        if self.ticks >= 2048:
            self.ticks = 0
            if self.deadline is not None and self.clock() > self.deadline:
                raise DecodeTimeout("decoding the result passed the input's deadline")
            if self.cost_end is not None and time.thread_time() > self.cost_end:
                raise TooCostly("result too costly to read: its decoding passed the parent's share")


def _make_decode():  # type: ignore[no-untyped-def]
    _type, _bool, _int, _float, _str, _list, _dict = type, bool, int, float, str, list, dict
    _tuple, _set, _frozenset, _complex, _bytearray = tuple, set, frozenset, complex, bytearray
    _len, _hash, _map, _zip, _enumerate, _ValueError = len, hash, map, zip, enumerate, ValueError
    _b64decode, _prod, _numeric = base64.b64decode, math.prod, NUMERIC_DTYPES
    _all, _max, _np, _values = all, max, _NP, dict.values
    from _collections import _count_elements

    def numpy():  # type: ignore[no-untyped-def]
        bound = _np[0] or bind_numpy()
        if bound is None:
            import numpy

            bound = bind_numpy(numpy)
        return bound[0]

    SCALARS = (_bool, _int, _float, _str)
    NUMBERS = (_bool, _int, _float, _complex)

    def distinct_hashes(items):  # type: ignore[no-untyped-def]
        """Refuse a set or dict whose elements' hashes collide: building it would be
        quadratic. Unhashable elements raise TypeError."""
        n = _len(items)
        if n <= SAME_HASH_MAX:
            return items
        hashes = _list(_map(_hash, items))
        if _len(_set(hashes)) == n:
            return items
        counts: dict = {}  # type: ignore[type-arg]
        _count_elements(counts, hashes)
        if _max(_values(counts)) > SAME_HASH_MAX:
            raise _ValueError("a set or dict whose elements' hashes collide")
        return items

    def items_of(body, make_opaque, budget, d):  # type: ignore[no-untyped-def]
        # Decoded in place: the JSON list is ours, so no second list is allocated.
        for i, x in _enumerate(body):
            tx = _type(x)
            if tx is _list or tx is _dict:
                body[i] = decode(x, make_opaque, budget, d)
        return body

    def decode(data, make_opaque=no_opaque, budget=None, _depth=0):  # type: ignore[no-untyped-def]
        """Inverse of :func:`encode`. Raises ValueError on anything that is not a known form.

        ``make_opaque(type_name, text)`` builds the stand-in for an unencodable result, and
        ``make_opaque(qualname, "", parts)`` the parent's value for an object of a class it
        does not have: ``parts`` is ``("enum", module, qualname, member)``, ``("obj", module,
        qualname, ((field, value), ...))`` or ``("record", module, qualname, field names,
        items)``. The standard library's value types are rebuilt here as the real objects.
        ``budget`` (a :class:`Budget`, in the parent): what decoding may allocate and until
        when; lists are decoded in place (``data`` is consumed).
        """
        if _depth > MAX_DEPTH + 2:
            raise _ValueError("value nested too deeply")
        t = _type(data)
        if data is None or t in SCALARS:
            return data
        d = _depth + 1
        if t is _list:
            if budget is not None:  # decoded in place: what the parsed list itself holds
                budget.charge(56 + 8 * _len(data))
            return items_of(data, make_opaque, budget, d)
        if t is not _dict or _len(data) != 1:
            raise _ValueError(f"unexpected {t.__name__} in a result")
        ((tag, body),) = data.items()
        tb = _type(body)
        if tag == "$int" and tb is _str:
            if budget is not None:
                budget.charge(64 + _len(body))
            neg = body.startswith("-")
            v = _int(body[1:] if neg else body, 16)
            return -v if neg else v
        if tag == "$float" and body in ("nan", "inf", "-inf"):
            return _float(body)
        if tag == "$str" and tb is _str:
            if budget is not None:
                budget.charge(64 + 2 * _len(body))
            return _b64decode(body.encode("ascii"), validate=True).decode("utf-8", "surrogatepass")
        if tag in ("$bytes", "$bytearray") and tb is _str:
            if budget is not None:
                budget.charge(96 + _len(body))
            raw = _b64decode(body.encode("ascii"), validate=True)
            return raw if tag == "$bytes" else _bytearray(raw)
        if tag == "$ndarray" and tb is _dict:
            return _decode_ndarray(body, make_opaque, budget, d)
        if tb is _str and tag in TEXT_KINDS:
            return text_kind(tag, body, budget)
        if tb is not _list:
            raise _ValueError(f"malformed {str(tag)[:20]!r} in a result")
        n = _len(body)
        if tag == "$tuple":
            if budget is not None:
                budget.charge(64 + 8 * n)
            return _tuple(items_of(body, make_opaque, budget, d))
        if tag == "$set" or tag == "$frozenset":
            if budget is not None:
                budget.charge(256 + 64 * n)
            items = distinct_hashes(items_of(body, make_opaque, budget, d))
            return _set(items) if tag == "$set" else _frozenset(items)
        if tag == "$dict":
            if budget is not None:
                budget.charge(256 + 64 * n)
            for pair in body:
                if _type(pair) is not _list or _len(pair) != 2:
                    raise _ValueError("malformed $dict in a result")
                items_of(pair, make_opaque, budget, d)
            keys = distinct_hashes([pair[0] for pair in body])
            return _dict(_zip(keys, [pair[1] for pair in body], strict=True))
        if tag == "$complex" and n == 2:
            if budget is not None:
                budget.charge(64)
            re_, im = items_of(body, make_opaque, budget, d)
            if _type(re_) is not _float or _type(im) is not _float:
                raise _ValueError("malformed $complex in a result")
            return _complex(re_, im)
        if tag == "$opaque" and n == 2 and _type(body[0]) is _str and _type(body[1]) is _str:
            if budget is not None:
                budget.charge(128)
            return make_opaque(body[0][:200], body[1][:500])
        if tag == "$exc" and n == 3 and _type(body[0]) is _str and _type(body[1]) is _str:
            if budget is not None:
                budget.charge(256 + _len(body[1]))
            facts = read_exc_facts(body[2])
            if facts is None:
                raise _ValueError("malformed $exc in a result")
            parts = ("exc", facts[1], facts[2])
            return make_opaque(body[0][:MAX_NAME], body[1][:1000], parts)
        if tag == "$np" and n == 2 and _type(body[0]) is _str:
            np = numpy()
            if budget is not None:
                budget.charge(128)
            value = decode(body[1], make_opaque, budget, d)
            if body[0] in _numeric and _type(value) in NUMBERS:
                return np.dtype(body[0]).type(value)
            if body[0].lstrip("<>|=").startswith("U") and _type(value) is _str:
                return np.str_(value)
            raise _ValueError(f"numpy scalar of dtype {body[0][:20]!r} not accepted")
        if tag in LIST_KINDS:
            return list_kind(tag, body, make_opaque, budget, d)
        raise _ValueError(f"unknown tag {str(tag)[:20]!r} in a result")

    # -- structural values (see _make_value_kinds) ---------------------------------------------
    TEXT_KINDS = frozenset(("$decimal", "$uuid"))
    LIST_KINDS = frozenset(
        ("$date", "$datetime", "$time", "$timedelta", "$fraction", "$path", "$enum", "$obj",
         "$record", "$fn", "$iter")
    )  # fmt: skip
    ITER_FORMS = frozenset(("iter", "gen", "range"))
    SHAPES = {  # tag: number of ints (the last one of datetime/time: an offset or None)
        "$date": 3, "$datetime": 9, "$time": 6, "$timedelta": 3,
    }  # fmt: skip
    dt = datetime
    _Decimal, _DecimalError, _Fraction, _UUID = (
        decimal.Decimal, decimal.DecimalException, fractions.Fraction, uuid.UUID,
    )  # fmt: skip
    path_types = {
        "PosixPath": pathlib.PurePosixPath, "PurePosixPath": pathlib.PurePosixPath,
        "WindowsPath": pathlib.PureWindowsPath, "PureWindowsPath": pathlib.PureWindowsPath,
    }  # fmt: skip
    if os.name == "posix":
        path_types["PosixPath"] = pathlib.PosixPath
    else:  # pragma: no cover
        path_types["WindowsPath"] = pathlib.WindowsPath
    HEX = frozenset("0123456789abcdef")
    DECIMAL_CHARS = frozenset("0123456789+-.eEinfatyINFATYsS")

    def name_ok(x):  # type: ignore[no-untyped-def]
        return _type(x) is _str and 0 < _len(x) <= MAX_NAME

    def tz(off):  # type: ignore[no-untyped-def]
        if off is None:
            return None
        return dt.timezone(dt.timedelta(microseconds=off))

    def text_kind(tag, body, budget):  # type: ignore[no-untyped-def]
        if budget is not None:
            budget.charge(128 + _len(body))
        if tag == "$decimal":
            if _len(body) > MAX_TEXT or not _set(body) <= DECIMAL_CHARS:
                raise _ValueError("malformed $decimal in a result")
            try:
                return _Decimal(body)
            except _DecimalError:
                raise _ValueError("malformed $decimal in a result") from None
        if _len(body) != 32 or not _set(body) <= HEX:
            raise _ValueError("malformed $uuid in a result")
        return _UUID(hex=body)

    def list_kind(tag, body, make_opaque, budget, d):  # type: ignore[no-untyped-def]
        n = _len(body)
        if budget is not None:
            budget.charge(256 + 64 * n)
        size = SHAPES.get(tag)
        if size is not None:  # dates and times: ints (a time zone offset may be None)
            if n != size or not _all(_type(x) is _int for x in body[: size - 1]):
                raise _ValueError(f"malformed {tag} in a result")
            off = body[-1]
            if tag == "$date" or tag == "$timedelta":
                if _type(off) is not _int:
                    raise _ValueError(f"malformed {tag} in a result")
                return dt.date(*body) if tag == "$date" else dt.timedelta(*body)
            if off is not None and _type(off) is not _int:
                raise _ValueError(f"malformed {tag} in a result")
            if tag == "$datetime":
                return dt.datetime(*body[:7], tzinfo=tz(off), fold=body[7])
            return dt.time(*body[:4], tzinfo=tz(off), fold=body[4])
        if tag == "$fraction":
            if n != 2 or not _all(_type(x) is _str and 0 < _len(x) <= MAX_TEXT for x in body):
                raise _ValueError("malformed $fraction in a result")
            num, den = _int(body[0], 16), _int(body[1], 16)
            if num.bit_length() > MAX_TEXT or den.bit_length() > MAX_TEXT or den <= 0:
                raise _ValueError("malformed $fraction in a result")
            return _Fraction(num, den)
        if tag == "$path":
            if n != 2 or _type(body[0]) is not _str or _type(body[1]) is not _str:
                raise _ValueError("malformed $path in a result")
            if body[0] not in path_types:
                raise _ValueError("malformed $path in a result")
            if _len(body[1]) > MAX_PATH:
                raise _ValueError("$path too long in a result")
            if budget is not None:  # its parts: about 4 bytes per character
                budget.charge(8 * _len(body[1]))
            return path_types[body[0]](body[1])
        if tag == "$fn":  # an input: a function by its source or its name
            if n != 3 or not _all(_type(x) is _str for x in body) or not name_ok(body[1]):
                raise _ValueError("malformed $fn")
            if _len(body[0]) > MAX_SOURCE or _len(body[2]) > MAX_NAME:
                raise _ValueError("malformed $fn")
            return make_opaque(body[1], "", ("fn", body[0], body[1], body[2]))
        if tag == "$iter":  # an input: an iterator made from a list
            if n != 2 or _type(body[0]) is not _str or body[0] not in ITER_FORMS:
                raise _ValueError("malformed $iter")
            if _type(body[1]) is not _list:
                raise _ValueError("malformed $iter")
            items = decode(body[1], make_opaque, budget, d)
            return make_opaque(body[0], "", ("iter", body[0], items))
        if n < 3 or not (_type(body[0]) is _str and _len(body[0]) <= MAX_NAME):
            raise _ValueError(f"malformed {tag} in a result")
        if not name_ok(body[1]):
            raise _ValueError(f"malformed {tag} in a result")
        if tag == "$enum":
            if n not in (3, 4) or not name_ok(body[2]):
                raise _ValueError("malformed $enum in a result")
            parts = ("enum", body[0], body[1], body[2])
            if n == 4:  # its value, compared besides its name
                parts += (decode(body[3], make_opaque, budget, d),)
            return make_opaque(body[1], "", parts)
        if tag == "$obj":
            fields = body[2]
            if n != 3 or _type(fields) is not _list or _len(fields) > MAX_FIELDS:
                raise _ValueError("malformed $obj in a result")
            if budget is not None:
                budget.charge(128 * _len(fields))
            names = []
            for pair in fields:
                if _type(pair) is not _list or _len(pair) != 2 or not name_ok(pair[0]):
                    raise _ValueError("malformed $obj field in a result")
                names.append(pair[0])
                items_of(pair, make_opaque, budget, d)
            if _len(_set(names)) != _len(names):
                raise _ValueError("an $obj with a repeated field in a result")
            parts = _tuple(_tuple(pair) for pair in fields)
            return make_opaque(body[1], "", ("obj", body[0], body[1], parts))
        names, items = body[2], body[3] if n == 4 else None
        if (
            _type(names) is not _list
            or _type(items) is not _list
            or _len(names) != _len(items)
            or _len(names) > MAX_FIELDS
            or not _all(name_ok(x) for x in names)
        ):
            raise _ValueError("malformed $record in a result")
        if budget is not None:
            budget.charge(128 * _len(names))
        items_of(items, make_opaque, budget, d)
        return make_opaque(body[1], "", ("record", body[0], body[1], _tuple(names), items))

    STRS = frozenset((_str,))
    NUMBER_SET = frozenset(NUMBERS)
    LIST_ONLY = frozenset((_list,))

    def leaves(data, allowed, budget):  # type: ignore[no-untyped-def]
        """(count, longest) of the leaves of nested lists, each of a type in ``allowed``."""
        kinds = NUMBER_SET if allowed is NUMBERS else STRS
        if _type(data) in kinds:
            return 1, (_len(data) if _type(data) is _str else 0)
        count, longest = 0, 0
        stack = [data]
        while stack:
            x = stack.pop()
            if _type(x) is not _list:
                raise _ValueError("malformed $ndarray data")
            if budget is not None:
                budget.charge(0)
            types = _frozenset(_map(_type, x))
            if not types:
                continue
            if types == LIST_ONLY:
                stack.extend(x)
            elif types <= kinds:
                count += _len(x)
                if kinds is STRS:
                    longest = _max(longest, _max(_map(_len, x)))
            else:
                raise _ValueError("$ndarray data of the wrong types")
        return count, longest

    def _decode_ndarray(body, make_opaque, budget, depth):  # type: ignore[no-untyped-def]
        np = numpy()
        dtype, shape = body.get("dtype"), body.get("shape")
        if _type(dtype) is not _str or _type(shape) is not _list or _len(shape) > 32:
            raise _ValueError("malformed $ndarray in a result")
        if not _all(_type(k) is _int and k >= 0 for k in shape):
            raise _ValueError("malformed $ndarray shape in a result")
        data = decode(body.get("v"), make_opaque, budget, depth)
        # Every element is checked before numpy sees the data: numpy would otherwise infer a
        # str array (as wide as its longest element) from strings in a numeric array.
        if dtype in _numeric:
            count, _ = leaves(data, NUMBERS, budget)
            target = np.dtype(dtype)
            if budget is not None:
                budget.charge(128 + count * target.itemsize)
            arr = np.array(data, dtype=target)
        elif dtype.lstrip("<>|=").startswith("U"):
            # The width comes from the data, never from the child's word (a '<U500000000'
            # would make the parent allocate gigabytes); the whole array costs elements x
            # the longest element x 4 bytes, booked before numpy allocates it.
            count, longest = leaves(data, STRS, budget)
            if budget is not None:
                budget.charge(128 + 4 * _max(1, count) * _max(1, longest))
            arr = np.array(data, dtype=str)
        else:
            raise _ValueError(f"ndarray of dtype {dtype[:20]!r} not accepted")
        if _prod(shape) != arr.size:
            raise _ValueError("$ndarray shape does not match its data")
        return arr.reshape(_tuple(shape))

    return decode, distinct_hashes


decode, distinct_hashes = _make_decode()
_distinct_hashes = distinct_hashes


# ---------------------------------------------------------------------------------------------
# Framing
# ---------------------------------------------------------------------------------------------

_HDR = struct.Struct(">I")


def pack(obj: object, _dumps=dumps, _hdr=_HDR.pack, _len=len) -> bytes:  # type: ignore[no-untyped-def]
    raw = _dumps(obj).encode("utf-8")
    return _hdr(_len(raw)) + raw


def _write_all(fd: int, data: bytes, _write=os.write, _memoryview=memoryview) -> None:  # type: ignore[no-untyped-def]
    view = _memoryview(data)
    while view:
        n = _write(fd, view)
        view = view[n:]


# ---------------------------------------------------------------------------------------------
# Linux confinement helpers (ctypes; Python 3.11 has no os.unshare)
# ---------------------------------------------------------------------------------------------

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
MNT_DETACH = 2

_libc = None


def libc():
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(ret: int, what: str) -> None:
    if ret != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def prctl(option: int, arg: int) -> None:
    _check(libc().prctl(option, arg, 0, 0, 0), "prctl")


def unshare(flags: int) -> None:
    _check(libc().unshare(flags), "unshare")


def mount(src: str, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    c = libc()
    _check(
        c.mount(
            src.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def build_minimal_root(keep: list[str]) -> None:
    """Fallback file-system isolation when bubblewrap is absent (root only).

    In a new mount namespace, build a minimal tree on a tmpfs (what bubblewrap would build):
    ``/usr``, the top-level library links, ``/etc/ld.so.cache`` and the interpreter's folders
    (``keep``) read-only; a few device nodes; a ``/tmp`` (each child covers it with its own);
    a fresh ``/proc`` with ``hidepid=2`` (children see only their own processes); then
    ``pivot_root`` into it. Nothing else of the host (home folders, data, sockets, the
    repository) exists there.
    """
    unshare(CLONE_NEWNS)
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    # The new root is a tmpfs laid, in this namespace only, over a host folder that holds none
    # of the folders to bind (a venv may live under /tmp, for example).
    new = next(
        d
        for d in ("/mnt", "/media", "/srv", "/opt", "/var/tmp", "/tmp", "/home")
        if os.path.isdir(d) and not os.path.islink(d) and not any(_under(k, d) for k in keep)
    )
    mount("tmpfs", new, "tmpfs", MS_NOSUID, "mode=0755,size=64m")

    def bind(src: str, readonly: bool = True) -> None:
        dst = new + src
        if os.path.isdir(src):
            os.makedirs(dst, 0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(dst), 0o755, exist_ok=True)
            with open(dst, "a"):
                pass
        mount(src, dst, None, MS_BIND | MS_REC)
        if readonly:
            mount("none", dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID)

    bind("/usr")
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            os.symlink(os.readlink(top), new + top)
        elif os.path.isdir(top):
            bind(top)
    for f in ("/etc/ld.so.cache", "/etc/localtime"):
        if os.path.isfile(f):
            bind(f)
    for d in keep:
        if os.path.isdir(d) and not d.startswith("/usr/"):
            bind(d)
    for dev in ("null", "zero", "full", "random", "urandom"):
        bind("/dev/" + dev, readonly=False)
    os.mkdir(new + "/proc", 0o555)
    mount("proc", new + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, "hidepid=2")
    os.makedirs(new + "/tmp", exist_ok=True)  # exists already when a kept folder is under /tmp
    os.chmod(new + "/tmp", 0o1777)
    os.mkdir(new + "/.old")
    _check(
        libc().syscall(_SYS_PIVOT_ROOT[_machine()], new.encode(), (new + "/.old").encode()),
        "pivot_root",
    )
    os.chdir("/")
    _check(libc().umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")


_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "riscv64": 41}


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def _machine() -> str:
    return os.uname().machine


# ---------------------------------------------------------------------------------------------
# Per-child isolation: a private IPC namespace, a private size-capped /tmp, a task cap and no
# mount table to read. Two ways to get there, decided once by the zygote's probe:
#
# - "userns": after the uid drop, the child creates a user namespace of its own (it maps only
#   its own uid) owning new IPC and mount namespaces; it mounts its /tmp, then drops every
#   capability. RLIMIT_NPROC is then counted in that namespace, i.e. per child, whatever the
#   uid. Needs unprivileged user namespaces (no extra privilege anywhere).
# - "root": the zygote runs as root with CAP_SYS_ADMIN (the fallback without bubblewrap): the
#   child unshares IPC and mount namespaces and mounts its /tmp before dropping its uid.
#   RLIMIT_NPROC then counts the child's uid, which no other live child of the sandbox has.
# ---------------------------------------------------------------------------------------------


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _drop_uid(uid: int) -> None:
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    try:
        os.setuid(0)
    except PermissionError:
        pass
    else:
        os._exit(3)


def _enter_userns() -> None:
    uid, gid = os.getuid(), os.getgid()
    prctl(PR_SET_DUMPABLE, 1)  # else /proc/self/uid_map belongs to root after the uid drop
    unshare(CLONE_NEWUSER | CLONE_NEWIPC | CLONE_NEWNS)
    _write_file("/proc/self/setgroups", "deny")
    _write_file("/proc/self/uid_map", f"{uid} {uid} 1")
    _write_file("/proc/self/gid_map", f"{gid} {gid} 1")
    prctl(PR_SET_DUMPABLE, 0)


def _private_tmp(size_mb: int, inodes: int, keep: list[str], binds: list | None = None) -> None:  # type: ignore[type-arg]
    """A fresh tmpfs on /tmp for this child alone (gone with its mount namespace); the
    read-only folders bound under /tmp (a venv, a project copy) are bound again into it, then
    each of ``binds`` ([host folder, path]) at its path."""
    mount("none", "/", None, MS_REC | MS_PRIVATE)
    fds = []
    for d in keep:
        with contextlib.suppress(OSError):
            fds.append((d, os.open(d, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)))
    # opened before the tmpfs hides what lies under /tmp
    aliases = [(os.open(s, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), d) for s, d in binds or []]
    opts = f"size={int(size_mb)}m,nr_inodes={int(inodes)},mode=1777"
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount("tmpfs", "/tmp", "tmpfs", flags, opts)
    # The folders leading to them (a checkout under /tmp) are read-only, on a small tmpfs of
    # their own: a write into the repository's path fails instead of landing in the scratch.
    # A kept folder right under /tmp is its own read-only bind (and one inside another kept
    # folder comes with it): neither needs a tmpfs leading to it.
    kept = {d for d, _ in fds}
    fds = [(d, fd) for d, fd in fds if not any(d.startswith(e + "/") for e in kept)]
    tops = sorted(
        {t for t in ("/tmp/" + d[len("/tmp/") :].split("/")[0] for d, _ in fds) if t not in kept}
    )
    for top in tops:
        os.mkdir(top, 0o755)
        mount("tmpfs", top, "tmpfs", flags, "size=64k,nr_inodes=256,mode=0755")
    for d, fd in fds:
        os.makedirs(d, 0o755, exist_ok=True)
        mount(f"/proc/self/fd/{fd}", d, None, MS_BIND | MS_REC)
        os.close(fd)
    for fd, d in aliases:
        mount(f"/proc/self/fd/{fd}", d, None, MS_BIND | MS_REC)
        with contextlib.suppress(OSError):  # read-only already when its mount is
            mount("none", d, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(fd)
    for top in tops:
        mount("none", top, None, MS_REMOUNT | MS_RDONLY | flags)


PROC_KEEP = ("sysvipc", "sys", "meminfo", "cpuinfo", "stat", "uptime", "loadavg", "version")
"""Machine-wide entries of /proc a child still sees (besides its own /proc/<pid>)."""
MS_MOVE = 8192


def _mask_mount_tables() -> None:
    """A /proc of this child's own: its /proc/<pid> (``self``), with its mount table reading
    as empty and no task entries, and the machine-wide files of PROC_KEEP. Nothing else:
    any other process's or thread's entry (the zygote's, a thread the program starts later)
    would show the mount table, which names host devices, file systems and their options.
    Built on a small tmpfs in the child's /tmp, then moved over /proc."""
    pid = str(os.getpid())
    stage = "/tmp/.proc"
    os.mkdir(stage, 0o755)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount("tmpfs", stage, "tmpfs", flags, "size=16k,nr_inodes=64,mode=0555")
    for name in (pid, *PROC_KEEP):
        src, dst = "/proc/" + name, stage + "/" + name
        if os.path.isdir(src):
            os.mkdir(dst, 0o555)
        elif os.path.isfile(src):
            os.close(os.open(dst, os.O_WRONLY | os.O_CREAT, 0o444))
        else:
            continue
        mount(src, dst, None, MS_BIND | MS_REC)
    os.symlink(pid, stage + "/self")
    own = stage + "/" + pid
    for name in ("mountinfo", "mounts", "mountstats"):
        with contextlib.suppress(FileNotFoundError):  # a kernel without that file
            mount("/dev/null", own + "/" + name, None, MS_BIND)
    mount("tmpfs", own + "/task", "tmpfs", flags | MS_RDONLY, "size=4k,nr_inodes=2,mode=0555")
    mount("none", stage, None, MS_REMOUNT | MS_RDONLY | flags)
    mount(stage, "/proc", None, MS_MOVE)
    os.rmdir(stage)


_CAPSET: list = []  # type: ignore[type-arg]


def _capset_args():  # type: ignore[no-untyped-def]
    """capset's header and empty data, built once (in the zygote) for every child."""
    if not _CAPSET:
        import ctypes

        hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
        _CAPSET[:] = [hdr, (ctypes.c_uint32 * 6)()]
    return _CAPSET


def _drop_capabilities() -> None:
    """Clear the capabilities a new user namespace gave (over its own namespaces only)."""
    hdr, data = _capset_args()
    _check(libc().capset(hdr, data), "capset")


def isolate(strategy: str | None, uid: int | None, iso: dict) -> None:  # type: ignore[type-arg]
    """The uid drop plus this child's private namespaces (``iso``: scratch_mb, inodes, keep,
    tasks). Order matters: see the comment above."""
    binds = iso.get("binds") or []
    if binds and strategy is None:
        raise OSError("binding a folder needs a mount namespace per child (the scratch layer)")
    if strategy == "root":
        unshare(CLONE_NEWIPC | CLONE_NEWNS)
        _private_tmp(iso["scratch_mb"], iso["inodes"], iso["keep"], binds)
        _mask_mount_tables()
    if uid is not None and os.getuid() == 0:
        _drop_uid(uid)
    if strategy == "userns":
        _enter_userns()
        _private_tmp(iso["scratch_mb"], iso["inodes"], iso["keep"], binds)
        _mask_mount_tables()
        _drop_capabilities()
    if strategy is not None:
        n = int(iso["tasks"])
        resource.setrlimit(resource.RLIMIT_NPROC, (n, n))


def _probe_child(strategy: str, uid: int | None, keep: list[str]) -> dict:  # type: ignore[type-arg]
    """Runs in a throw-away child of the zygote: isolate, then check each promise."""
    import _thread

    ipc0 = os.readlink("/proc/self/ns/ipc")
    isolate(strategy, uid, {"scratch_mb": 2, "inodes": 64, "keep": keep, "tasks": 3})
    st = os.statvfs("/tmp")
    fd = os.open("/tmp/probe", os.O_WRONLY | os.O_CREAT, 0o600)
    os.close(fd)
    started = 0  # the cap is 3 tasks: this thread and at most 2 more
    with contextlib.suppress(RuntimeError):
        for _ in range(4):
            _thread.start_new_thread(time.sleep, (1.0,))
            started += 1
    with open("/proc/self/mountinfo", "rb") as fh:
        table = fh.read()
    others = [p for p in os.listdir("/proc") if p.isdigit() and p != str(os.getpid())]
    return {
        "proc_own": not others and not os.listdir("/proc/self/task"),
        "ok": True,
        "ipc": os.readlink("/proc/self/ns/ipc") != ipc0,
        "scratch": st.f_blocks * st.f_frsize == 2 << 20,
        "tasks": started <= 2,
        "mountinfo": table == b"",
        "keep": all(os.path.isdir(d) for d in keep),
    }


def seccomp_filter():
    """A deny-list filter (default allow; listed calls fail with EPERM, clone3 with ENOSYS).

    Denied: sockets, ptrace and cross-process memory, bpf/perf/userfaultfd/keyrings, mounts and
    namespaces, module and kexec calls, personality, every way to signal a process, new
    sessions and process groups, fork/vfork/execve, clone without CLONE_THREAD (threads
    still work), and every System V IPC and POSIX message-queue call (their objects would hold
    memory outside the address-space limit). Returns None when no libseccomp binding is
    importable.
    """
    try:
        import pyseccomp as sc
    except Exception:
        try:
            import seccomp as sc  # Debian's python3-seccomp
        except Exception:
            return None
    import errno

    f = sc.SyscallFilter(defaction=sc.ALLOW)
    eperm = sc.ERRNO(errno.EPERM)
    deny = [
        "socket", "socketpair", "io_uring_setup", "io_uring_enter", "io_uring_register",
        "ptrace", "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open",
        "userfaultfd", "add_key", "request_key", "keyctl", "mount", "umount2", "pivot_root",
        "chroot", "unshare", "setns", "kexec_load", "kexec_file_load", "init_module",
        "finit_module", "delete_module", "personality", "kill", "tkill", "tgkill",
        "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
        "pidfd_getfd", "setsid", "setpgid", "fork", "vfork", "execve", "execveat",
        "open_by_handle_at", "name_to_handle_at", "mount_setattr", "move_mount", "fsopen",
        "fsmount", "open_tree", "quotactl", "swapon", "swapoff", "reboot", "acct",
        "settimeofday", "clock_settime", "adjtimex", "syslog", "vhangup", "memfd_create",
        "memfd_secret", *IPC_CALLS,
    ]  # fmt: skip
    for name in deny:
        try:
            f.add_rule(eperm, name)
        except Exception:
            continue
    clone_thread = 0x00010000
    f.add_rule(eperm, "clone", sc.Arg(0, sc.MASKED_EQ, clone_thread, 0))
    with contextlib.suppress(Exception):  # a libseccomp too old to know clone3
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # glibc falls back to clone
    try:
        return _Bpf.of(f)
    except (OSError, ValueError, AttributeError):  # cannot export: libseccomp loads it
        return f


PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


class _Bpf:
    """A libseccomp filter as the BPF program it generates, generated once (in the zygote):
    :meth:`load` installs it with one ``prctl``, where libseccomp's own ``load`` would
    generate it again in every child (about 0.6 ms each). Needs PR_SET_NO_NEW_PRIVS first."""

    def __init__(self, prog: bytes) -> None:
        import ctypes

        if not prog or len(prog) % 8 or len(prog) // 8 > 4096:
            raise ValueError(f"not a BPF program ({len(prog)} bytes)")

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self.prog = ctypes.create_string_buffer(prog, len(prog))
        self.fprog = SockFprog(len(prog) // 8, ctypes.addressof(self.prog))
        self.args = (
            ctypes.c_int(PR_SET_SECCOMP),
            ctypes.c_ulong(SECCOMP_MODE_FILTER),
            ctypes.byref(self.fprog),
            ctypes.c_ulong(0),
            ctypes.c_ulong(0),
        )

    @classmethod
    def of(cls, flt) -> _Bpf:  # type: ignore[no-untyped-def]
        r, w = os.pipe()
        try:
            with os.fdopen(w, "wb", closefd=False) as out:
                flt.export_bpf(out)
            os.close(w)
            w = -1
            prog = b""
            while chunk := os.read(r, 65536):
                prog += chunk
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
        return cls(prog)

    def load(self) -> None:
        _check(libc().prctl(*self.args), "prctl(PR_SET_SECCOMP)")


IPC_CALLS = [
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl", "ipc", "mq_open", "mq_unlink", "mq_timedsend",
    "mq_timedreceive", "mq_notify", "mq_getsetattr",
]  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The child: confine, load the program, run the inputs, report
# ---------------------------------------------------------------------------------------------


_CPU_TIMER: list = [None]  # type: ignore[type-arg]
"""The zygote's :func:`_make_cpu_timer` (children inherit it)."""
F_SETPIPE_SZ = 1031


def _on_alarm(signum, frame, _timeout=_Timeout):  # type: ignore[no-untyped-def]
    raise _timeout


def _cpu_clock(_gettime=time.clock_gettime, _id=time.CLOCK_PROCESS_CPUTIME_ID):  # type: ignore[no-untyped-def]
    """CPU seconds (user + system, every thread) this process has used since its fork."""
    return _gettime(_id)


class _Sink:
    """stdout/stderr replacement: swallows everything, counts the bytes."""

    def __init__(self) -> None:
        self.count = 0

    def write(self, s: object) -> int:
        try:
            n = len(s)  # type: ignore[arg-type]
        except Exception:
            n = 0
        self.count += n
        return n

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def confine(job: dict, result_fd: int, state: dict, input_fd: int = -1) -> None:  # type: ignore[type-arg]
    """Runs in the forked child, before any untrusted byte. Order matters."""
    os.setsid()
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != state["zygote_pid"]:  # the zygote died between fork and prctl
        os._exit(1)
    devnull = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    keep = sorted({0, 1, 2, result_fd} | ({input_fd} if input_fd >= 0 else set()))
    lo = 3
    for fd in keep[3:]:
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, 65536)
    lim = job["limits"]
    mem = int(lim["memory_mb"]) << 20
    cpu = math.ceil(lim["cpu_s"])
    for res, soft, hard in (
        (resource.RLIMIT_AS, mem, mem),
        (resource.RLIMIT_CPU, cpu, cpu + 2),
        (resource.RLIMIT_FSIZE, int(lim["fsize_mb"]) << 20, int(lim["fsize_mb"]) << 20),
        (resource.RLIMIT_NOFILE, 64, 64),
        (resource.RLIMIT_CORE, 0, 0),
    ):
        resource.setrlimit(res, (soft, hard))
    iso = {
        "scratch_mb": lim.get("scratch_mb", 64),
        "inodes": lim.get("scratch_inodes", 4096),
        "keep": state.get("tmp_keep", []),
        "tasks": lim.get("tasks", 64),
        "binds": job.get("binds") or [],
    }
    isolate(state.get("iso"), job.get("uid"), iso)
    os.chdir("/tmp" if os.path.isdir("/tmp") else "/")
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    flt = state.get("seccomp")
    if flt is not None:
        flt.load()


def _make_cpu_timer(_signo=signal.SIGPROF):  # type: ignore[no-untyped-def]
    """A POSIX timer on this process's CPU clock (CLOCK_PROCESS_CPUTIME_ID), built by the
    zygote: ``start()`` (in the child) creates it and returns ``set(seconds)`` (0 disarms), or
    None. Unlike ITIMER_PROF, which counts tick-sampled user + system time and can fire early
    on a busy machine, it fires when the kernel's exact CPU clock of the process (every
    thread) has reached the time; its SIGPROF raises the input's timeout."""
    try:
        import ctypes

        lib = libc()
        create, settime = lib.timer_create, lib.timer_settime
    except (ImportError, OSError, AttributeError):  # pragma: no cover - no such timer here
        return None

    class Sigevent(ctypes.Structure):
        _fields_ = [
            ("value", ctypes.c_void_p),
            ("signo", ctypes.c_int),
            ("notify", ctypes.c_int),  # SIGEV_SIGNAL = 0
            ("pad", ctypes.c_byte * 48),
        ]

    class Spec(ctypes.Structure):
        _fields_ = [
            ("i_sec", ctypes.c_long),
            ("i_nsec", ctypes.c_long),
            ("v_sec", ctypes.c_long),
            ("v_nsec", ctypes.c_long),
        ]

    sev, spec, tid, byref = Sigevent(None, _signo, 0), Spec(), ctypes.c_void_p(), ctypes.byref
    clock_process_cputime = 2

    def start():  # type: ignore[no-untyped-def]
        if create(clock_process_cputime, byref(sev), byref(tid)) != 0:
            return None

        def set_(seconds, _spec=spec, _settime=settime, _tid=tid, _byref=byref, _int=int):  # type: ignore[no-untyped-def]
            sec = _int(seconds)
            _spec.v_sec, _spec.v_nsec = sec, _int((seconds - sec) * 1e9)
            _settime(_tid, 0, _byref(_spec), None)

        return set_

    return start


SPIN = 200
"""How many times the child tries its input pipe for the next input, yielding its CPU between
tries, before it blocks on the pipe, when the parent runs on another CPU (the job's ``spin``;
0 when the two share one CPU). A blocking wait costs a wake-up, which on a virtual machine
takes tens of microseconds across CPUs. At most a few hundred microseconds of CPU time in all,
charged to the next input."""


def _read_input(  # type: ignore[no-untyped-def]
    fd,
    spin,
    _read=os.read,
    _unpack=_HDR.unpack,
    _len=len,
    _yield=os.sched_yield,
    _again=BlockingIOError,
    _select=select.select,
):
    """The next input's JSON text from the parent (4-byte length + UTF-8), or None at EOF.
    When ``spin`` (the job's: SPIN, or 0 where the parent shares this child's CPU), ``fd`` is
    non-blocking and the first read is tried up to ``spin`` times, then waited for.
    The parent sends one input at a time, so one read usually brings all of it. The first
    read asks for 64 KiB: a larger request makes the allocator map and unmap a fresh buffer
    for every input (page faults that cost more than the rest of the loop)."""
    tries = 0
    while True:
        try:
            buf = _read(fd, 65536)
            break
        except _again:
            tries += 1
            if tries < spin:
                _yield()
            else:
                _select((fd,), (), ())
    if not buf:
        return None
    while _len(buf) < 4 or _len(buf) < _unpack(buf[:4])[0] + 4:  # the rest of the frame
        need = (4 if _len(buf) < 4 else _unpack(buf[:4])[0] + 4) - _len(buf)
        try:
            chunk = _read(fd, need if need < 1048576 else 1048576)
        except _again:
            _select((fd,), (), ())
            continue
        if not chunk:
            return None
        buf += chunk
    return buf[4 : _unpack(buf[:4])[0] + 4].decode("utf-8")


_TOP_LEVEL_AWAIT = __import__("ast").PyCF_ALLOW_TOP_LEVEL_AWAIT

PIN = "\x00pin:"
"""A pinned name's placeholder in a test's code: ``PIN + name`` (``sandbox/pinning.py``)."""


def _prepare_test(test, _compile=compile, _flag=_TOP_LEVEL_AWAIT):  # type: ignore[no-untyped-def]
    """Compile a test with setup (``{"setup", "call", "then", "bound", "args", "pins",
    "builtins_first"}``) before the program loads: its parts' code (None for a part it
    lacks), its bound, the name its arguments go under, the names pinned in its code (see
    :func:`_make_pinning`) and whether a module global named like a builtin leaves the
    builtin to the test."""
    out = []
    with warnings.catch_warnings():  # a pinned name is a constant: "'str' is not callable"
        warnings.simplefilter("ignore", SyntaxWarning)
        for part, mode in (("setup", "exec"), ("call", "eval"), ("then", "eval")):
            text = test.get(part)
            if text is None:
                out.append(None)
                continue
            out.append(_compile(text, "<" + part + ">", mode, _flag, True))
    args_name = test.get("args")
    pins = tuple(x for x in test.get("pins") or () if type(x) is str)
    return (
        out,
        int(test.get("bound") or 100),
        args_name if type(args_name) is str else None,
        pins,
        bool(test.get("builtins_first")),
    )


def _make_awaiting():  # type: ignore[no-untyped-def]
    """``run_coro`` (on a loop of its own), ``settle`` and ``asettle`` (in a running loop): await
    a stage's coroutine and consume its generator (``bound`` items), with references bound here,
    before any program. A coroutine's outcome goes to a list the runner holds (a patched
    ``asyncio`` can stop a coroutine); one that raised is told at once (``told(stage, e)``,
    see :func:`_test_kit`), so a list rewritten afterwards cannot make it look as if it
    returned."""
    import asyncio

    _list, _len, _type = list, len, type
    _Coroutine, _AsyncGen, _Gen = types.CoroutineType, types.AsyncGeneratorType, types.GeneratorType
    _islice, _RuntimeError, _BaseException = itertools.islice, RuntimeError, BaseException
    _Runner, _Selector = asyncio.Runner, asyncio.SelectorEventLoop
    runner_run, runner_close = asyncio.Runner.run, asyncio.Runner.close
    list_append = list.append

    class _Loop(_Selector):  # type: ignore[misc, valid-type]
        # asyncio's default loop makes its wake-up pipe with socketpair(), which the seccomp
        # filter denies: this loop has none (nothing wakes it from a thread or a signal).
        def _make_self_pipe(self):  # type: ignore[no-untyped-def]
            self._ssock = self._csock = None

        def _close_self_pipe(self):  # type: ignore[no-untyped-def]
            pass

    async def guarded(coro, box, told, stage):  # type: ignore[no-untyped-def]
        try:
            v = await coro
        except _BaseException as e:
            if told is not None:
                told(stage, e)
            list_append(box, (False, e))
            raise
        list_append(box, (True, v))

    def run_coro(coro, told=None, stage=None):  # type: ignore[no-untyped-def]
        box = []
        runner = _Runner(loop_factory=_Loop)
        try:
            runner_run(runner, guarded(coro, box, told, stage))
        except _BaseException:
            if not box:
                raise
        finally:
            runner_close(runner)
        if not box:
            raise _RuntimeError("the coroutine did not run to its end (its event loop was changed)")
        ok, v = box[0]
        if not ok:
            raise v
        return v

    async def take(agen, bound):  # type: ignore[no-untyped-def]
        out = []
        async for item in agen:
            list_append(out, item)
            if _len(out) >= bound:
                break
        return out

    def settle(v, bound, told=None, stage=None):  # type: ignore[no-untyped-def]
        t = _type(v)
        if t is _Coroutine:
            v = run_coro(v, told, stage)
            t = _type(v)
        if t is _AsyncGen:
            return run_coro(take(v, bound), told, stage)
        if t is _Gen:
            return _list(_islice(v, bound))
        return v

    async def asettle(v, bound):  # type: ignore[no-untyped-def]
        t = _type(v)
        if t is _Coroutine:
            v = await v
            t = _type(v)
        if t is _AsyncGen:
            return await take(v, bound)
        if t is _Gen:
            return _list(_islice(v, bound))
        return v

    return run_coro, settle, asettle


def _make_pinning():  # type: ignore[no-untyped-def]
    """``pinned(codes, values, seen)``: the test's code objects with each placeholder constant
    (``PIN + name``) replaced by ``values[name]``; every code object made is added to
    ``seen`` (id -> code: the code an assertion's facts may come from). The parent put the
    placeholders where the test reads a builtin or a runner name that nothing in the test
    binds (``sandbox/pinning.py``): no mapping the program can reach (the test's globals,
    its builtins, through ``f_globals`` or ``f_builtins``) answers for those names."""
    _type, _str, _tuple, _frozenset, _id = type, str, tuple, frozenset, id
    code_type, replace = types.CodeType, types.CodeType.replace
    consts_of = types.CodeType.__dict__["co_consts"].__get__
    startswith, _TypeError, n = str.startswith, TypeError, len(PIN)

    def sub(c, values, seen):  # type: ignore[no-untyped-def]
        t = _type(c)
        if t is code_type:
            new = replace(c, co_consts=_tuple([sub(x, values, seen) for x in consts_of(c)]))
            seen[_id(new)] = new
            return new
        if t is _str:
            return values[c[n:]] if startswith(c, PIN) and c[n:] in values else c
        if t is _tuple:
            return _tuple([sub(x, values, seen) for x in c])
        if t is _frozenset:  # ``x in {a, b}``; a module's unhashable global: the same test
            items = [sub(x, values, seen) for x in c]
            try:
                return _frozenset(items)
            except _TypeError:
                return _tuple(items)
        return c

    def pinned(codes, values, seen):  # type: ignore[no-untyped-def]
        return [None if c is None else sub(c, values, seen) for c in codes]

    return pinned


class ClassFact(tuple):  # type: ignore[type-arg]
    """A class among an assertion's operands, as the test's code read it (see
    :func:`_make_facts`); the parent reads it as a namedtuple of one field."""

    __slots__ = ()
    _fields = ("class_fact",)


class DequeItems(tuple):  # type: ignore[type-arg]
    """A ``collections.deque`` among an assertion's operands: its items, copied."""

    __slots__ = ()
    _fields = ("deque_items",)


def _make_facts():  # type: ignore[no-untyped-def]
    """``make(tell, allowed)``: the child's ``__sandbox_fact__`` for a test with setup (see
    docs/sandbox.md, "Integrity"): ``fact(kind, line, args, kwargs, wants, profile)`` copies
    an assertion's operands as they are at that moment (plain data through the base types,
    a class as its fact, a deque as its items; any other object as it is) and sends them to
    the parent at once (``tell``), before control goes back to the test; it returns
    ``(kind, copies, keyword copies, whether all are plain data)`` for the test's own code to
    decide where the test stops. ``wants``: ``"is"`` (whether the first two operands are
    one object), ``"mro"`` (the first operand's classes, as facts). ``profile``: what
    ``sys.getprofile()`` gave just before the call (the test passes it as the last
    argument: a profile function could have changed the operands between their
    evaluation and their copy, so an assertion made under one is reported as such).
    Only code of the test (``allowed``: id -> code object) may call it."""
    _type, _issubclass, _len, _id, _tuple, _list, _dict = (
        type,
        issubclass,
        len,
        id,
        tuple,
        list,
        dict,
    )
    _int, _float, _str, _bytes, _bool, _complex = int, float, str, bytes, bool, complex
    _set, _frozenset, _Exception, _BaseException = set, frozenset, Exception, BaseException
    _RuntimeError, _Timeout_, _range = RuntimeError, _Timeout, range
    int_int, float_float, str_str = int.__int__, float.__float__, str.__str__
    complex_complex, bytes_get, whole = complex.__complex__, bytes.__getitem__, slice(None)
    list_iter, tuple_iter, dict_items = list.__iter__, tuple.__iter__, dict.items
    set_iter, fs_iter, list_append, mp_get = set.__iter__, frozenset.__iter__, list.append, dict.get
    tdict = type.__dict__
    mro_of, qualname_of = tdict["__mro__"].__get__, tdict["__qualname__"].__get__
    module_of = tdict["__module__"].__get__
    from _collections import deque as deque_t

    deque_iter = deque_t.__iter__
    pristine = _dict(builtins.__dict__)
    _getframe, _getprofile, _gettrace = sys._getframe, sys.getprofile, sys.gettrace
    code_of = types.FrameType.__dict__["f_code"].__get__
    _dumps, _encode = dumps, encode
    forged = (("class_fact",), ("deque_items",))
    dict_of, proxy_get = tdict["__dict__"].__get__, types.MappingProxyType.get

    def fields_of(t):  # type: ignore[no-untyped-def]
        """A tuple class's ``_fields`` as its classes' dicts hold it (no descriptor runs)."""
        for c in tuple_iter(mro_of(t)):
            f = proxy_get(dict_of(c), "_fields")  # the class's own entry: no descriptor runs
            if f is not None:
                return f
        return None

    def fact_of(c):  # type: ignore[no-untyped-def]
        """A class as the test reads it: ["b", name] for a builtin (by identity), else
        ["c", module, qualified name] as the type object states them."""
        try:
            if not _issubclass(_type(c), _type):
                return ["?", ""]
            q = qualname_of(c)
            q = str_str(q)[:MAX_NAME] if _issubclass(_type(q), _str) else ""
            if mp_get(pristine, q) is c:
                return ["b", q]
            m = module_of(c)
            return ["c", str_str(m)[:MAX_NAME] if _issubclass(_type(m), _str) else "", q]
        except _Timeout_:
            raise
        except _BaseException:
            return ["?", ""]

    def snap(x, d=0):  # type: ignore[no-untyped-def]
        """(a copy of x through the base types, whether it is plain data only)."""
        t = _type(x)
        if x is None or t is _bool:
            return x, True
        if d > 60:
            return x, False
        try:
            if _issubclass(t, _int):
                return int_int(x), True
            if _issubclass(t, _float):
                return float_float(x), True
            if _issubclass(t, _str):
                return str_str(x), True
            if _issubclass(t, _bytes):
                return bytes_get(x, whole), True
            if _issubclass(t, _complex):
                return complex_complex(x), True
            if _issubclass(t, _type):
                return ClassFact((_tuple(fact_of(x)),)), True
            if _issubclass(t, deque_t):
                out = []
                for y in deque_iter(x):
                    list_append(out, snap(y, d + 1)[0])
                return DequeItems((out,)), False
            if (
                _issubclass(t, _list)
                or t is _tuple
                or (_issubclass(t, _tuple) and fields_of(t) in forged)
            ):
                out, plain = [], True
                for y in (list_iter if _issubclass(t, _list) else tuple_iter)(x):
                    v, p = snap(y, d + 1)
                    list_append(out, v)
                    plain = plain and p
                return (out if _issubclass(t, _list) else _tuple(out)), plain
            if _issubclass(t, _dict):
                out, plain = {}, True
                for k, y in dict_items(x):
                    kv, kp = snap(k, d + 1)
                    v, p = snap(y, d + 1)
                    out[kv] = v
                    plain = plain and kp and p
                return out, plain
            if _issubclass(t, _frozenset) or _issubclass(t, _set):
                items, plain = [], True
                for y in (fs_iter if _issubclass(t, _frozenset) else set_iter)(x):
                    v, p = snap(y, d + 1)
                    list_append(items, v)
                    plain = plain and p
                return (_frozenset if _issubclass(t, _frozenset) else _set)(items), plain
        except _Timeout_:
            raise
        except _Exception:
            pass
        return x, False

    def text(v):  # type: ignore[no-untyped-def]
        """One operand's JSON text (an operand that cannot be encoded: an opaque one)."""
        try:
            return _dumps(_encode(v))
        except _Timeout_:
            raise
        except _BaseException:
            return _dumps({"$opaque": ["?", "<an operand that could not be encoded>"]})

    def make(tell, allowed):  # type: ignore[no-untyped-def]
        def fact(kind, line, args=(), kwargs=None, wants="", profile=None, *_):  # type: ignore[no-untyped-def]
            code = code_of(_getframe(1))
            if mp_get(allowed, _id(code)) is not code:
                raise _RuntimeError("an assertion's facts come from the test's own code only")
            hooked = profile is not None or _getprofile() is not None or _gettrace() is not None
            args = args if _type(args) is _tuple else ()
            n = _len(args)
            # What no object's own code can change, first: identity, the first one's classes.
            is_ = (args[0] is args[1]) if wants == "is" and n >= 2 else None
            mro = None
            if wants == "mro" and n:
                mro = [fact_of(c) for c in tuple_iter(mro_of(_type(args[0])))]
            head = _dumps(
                [kind if _type(kind) is _str else "?", line if _type(line) is _int else 0]
            )
            # Each operand is copied, and encoded at once when it is plain data (no object's
            # code runs then): code a later copy runs cannot reach an earlier one's text.
            done, later, vals, plain = (), [], [], True
            for i in _range(n):
                v, p = snap(args[i])
                list_append(vals, v)
                plain = plain and p
                if p:
                    done += ((i, text(v)),)
                else:
                    list_append(later, (i, v))
            kws = {}
            for k, a in dict_items(kwargs) if _type(kwargs) is _dict else ():
                if _type(k) is _str:
                    kws[k], p = snap(a)
                    plain = plain and p
            kw_text = text(kws)
            for i, v in list_iter(later):
                done += ((i, text(v)),)
            ops = _dict(done)
            body = ",".join([ops[i] for i in _range(n)])
            tail = _dumps([is_, mro, hooked])
            tell(
                '{"k":"f","v":['
                + head[1:-1]
                + ",["
                + body
                + "],"
                + kw_text
                + ","
                + tail[1:-1]
                + "]}"
            )
            return kind, vals, kws, plain

        return fact

    return make


_facts_for = _make_facts()


def _make_stages(run_coro, settle, asettle):  # type: ignore[no-untyped-def]
    """``run(g, prepared, args, kit)``: a test with setup (see :func:`_prepare_test`), run by
    the runner itself in stages, with references bound here, before any program: the setup
    (statements), the call and the optional follow-up expression, in a copy of the module's
    namespace, their pinned names replaced (:func:`_make_pinning`); what is awaitable is
    awaited (see :func:`_make_awaiting`). A stage that raises is told to the parent at once
    (``kit``: see :func:`_test_kit`), with its stage written as a constant at each stage's
    own handler: nothing the program does afterwards, nor a frame's locals it rewrites,
    changes which stage raised."""
    _eval, _dict, _id, _tuple = eval, dict, id, tuple
    co_coroutine = 0x80  # inspect.CO_COROUTINE
    code_flags = types.CodeType.__dict__["co_flags"].__get__
    pristine = _dict(builtins.__dict__)  # before any program could patch a builtin
    pinned, _BaseException = _make_pinning(), BaseException
    mp_get = dict.get

    def values_of(g, pins, first, kit):  # type: ignore[no-untyped-def]
        out = {}
        for name in pins:
            v = mp_get(kit.names, name, kit)
            if v is kit:
                v = g[name] if not first and name in g else mp_get(pristine, name, kit)
            if v is kit:
                v = kit.missing
            out[name] = v
        return out

    def codes_for(g, prepared, kit):  # type: ignore[no-untyped-def]
        """The test's code with its pinned names' values for this input (the last ones made,
        while the values are the same objects); every code object in it may tell facts."""
        codes, _, _, pins, first = prepared
        values = values_of(g, pins, first, kit)
        key = _tuple([_id(values[n]) for n in pins])
        cached = kit.cache
        if cached and cached[0] == key:
            return cached[1]
        out = pinned(codes, values, kit.allowed)
        kit.cache = (key, out, values)  # the values stay alive while their ids are the key
        return out

    async def run_async(setup, call, then, ns, bound, told):  # type: ignore[no-untyped-def]
        # one loop for every stage: what the setup made (a lock, a queue) belongs to it
        if setup is not None:
            try:
                v = _eval(setup, ns)
                if code_flags(setup) & co_coroutine:
                    await v
            except _BaseException as e:
                told("setup", e)
                raise
        try:
            v = _eval(call, ns)
            if code_flags(call) & co_coroutine:
                v = await v
            v = await asettle(v, bound)
        except _BaseException as e:
            told("call", e)
            raise
        if then is not None:
            try:
                v = _eval(then, ns)
                if code_flags(then) & co_coroutine:
                    v = await v
                v = await asettle(v, bound)
            except _BaseException as e:
                told("then", e)
                raise
        return v

    def run(g, prepared, args, kit):  # type: ignore[no-untyped-def]
        bound, args_name = prepared[1], prepared[2]
        setup, call, then = codes_for(g, prepared, kit)
        # The test's own names: a copy of the module's globals (which stay as they are), with
        # the builtins as they were before any program ran (a module that patched
        # builtins.__build_class__ or rebound Exception changes its own code, not the test's);
        # the names the test reads as builtins are constants in its code.
        ns = _dict(g)
        ns["__builtins__"] = _dict(pristine)
        if args_name is not None:
            ns[args_name] = args
        told = kit.told
        if any_async((setup, call, then)):
            return run_coro(run_async(setup, call, then, ns, bound, told))
        if setup is not None:
            try:
                _eval(setup, ns)
            except _BaseException as e:
                told("setup", e)
                raise
        try:
            v = settle(_eval(call, ns), bound, told, "call")
        except _BaseException as e:
            told("call", e)
            raise
        if then is not None:
            try:
                v = settle(_eval(then, ns), bound, told, "then")
            except _BaseException as e:
                told("then", e)
                raise
        return v

    def any_async(codes):  # type: ignore[no-untyped-def]
        for code in codes:  # noqa: SIM110 - any() is a patchable builtin
            if code is not None and code_flags(code) & co_coroutine:
                return True
        return False

    return run


_run_test = _make_stages(*_make_awaiting())


class _TestKit:
    """What a child running a test with setup holds for it (made before the program loads):
    ``told(stage, e)``, the runner's names pinned in the test's code, the code objects facts
    may come from, the last pinned code."""

    __slots__ = ("allowed", "cache", "missing", "names", "told")


def _test_kit(  # type: ignore[no-untyped-def]
    fd,
    cap,
    _dumps=dumps,
    _hdr=_HDR.pack,
    _len=len,
    _write=_write_all,
    _mask=signal.pthread_sigmask,
    _block=signal.SIG_BLOCK,
    _setmask=signal.SIG_SETMASK,
    _timers=(signal.SIGALRM, signal.SIGPROF),
    _exc_facts=_exc_facts,
    _Timeout=_Timeout,
    _type=type,
    _getprofile=sys.getprofile,
):
    """The facts channel of a test with setup: ``tell(text)`` writes one frame at once on the
    result pipe (``fd``), with the input's timers held off while it is written (a frame cut in
    two by a timeout would end the child's protocol), a frame over ``cap`` bytes as its
    size only; ``told(stage, e)`` tells the parent that a stage raised (not the runner's
    own timeout), with the exception's classes as :func:`_make_exc_facts` reads them."""
    type_name = type.__dict__["__name__"].__get__

    def tell(text):  # type: ignore[no-untyped-def]
        raw = text.encode("utf-8")
        if _len(raw) > cap:
            raw = _dumps({"k": "f", "v": None, "big": _len(raw)}).encode("utf-8")
        old = _mask(_block, _timers)
        try:
            _write(fd, _hdr(_len(raw)) + raw)
        finally:
            _mask(_setmask, old)

    def told(stage, e):  # type: ignore[no-untyped-def]
        if _type(e) is _Timeout:
            return
        name = type_name(_type(e))
        tell(_dumps({"k": "x", "n": name[:MAX_NAME], "x": _exc_facts(e, stage)}))

    def missing(*args, **kw):  # type: ignore[no-untyped-def]
        raise NameError("a name the test reads as a builtin is not one here")

    kit = _TestKit()
    kit.allowed, kit.cache, kit.missing, kit.told = {}, None, missing, told
    kit.names = {
        "__sandbox_fact__": _facts_for(tell, kit.allowed),
        "__sandbox_hooks__": _getprofile,
    }
    return kit


def _lock_hooks(  # type: ignore[no-untyped-def]
    _sys=sys, _setattr=setattr, _getattr=getattr, _import=__import__
):
    """Before the program of a test with setup loads: no trace or profile function can be set
    (``sys.settrace``, ``sys.setprofile``, and ``threading``'s, which call them, refuse one;
    so does ``sys.monitoring`` where there is one), and the ``sys`` module's first copy cannot
    be made again to get them back (``_imp.create_builtin``, once every built-in module is
    imported). A trace function could rewrite the test's locals between its lines; the C
    profiler (``cProfile``) cannot, and an assertion made under it is reported as such."""

    def refuse(*args, **kw):  # type: ignore[no-untyped-def]
        if args == (None,) and not kw:
            return None
        raise RuntimeError("a program run by a test with setup cannot set trace or profile hooks")

    def no_builtin(spec):  # type: ignore[no-untyped-def]
        raise ImportError("every built-in module is imported already")

    for name in _sys.builtin_module_names:
        if name not in _sys.modules:
            with contextlib.suppress(ImportError):
                _import(name)
    _sys.settrace = _sys.setprofile = refuse
    mon = _getattr(_sys, "monitoring", None)
    for name in ("register_callback", "set_events", "set_local_events", "use_tool_id"):
        if mon is not None and hasattr(mon, name):
            _setattr(mon, name, refuse)
    import _imp

    _imp.create_builtin = no_builtin


def _timers(  # type: ignore[no-untyped-def]
    cpu_kind, _setitimer=signal.setitimer, _real=signal.ITIMER_REAL, _prof=signal.ITIMER_PROF
):
    """The input's timer: ``arm(seconds, used)`` and ``disarm()``. Wall-clock limits: an
    ITIMER_REAL. CPU-time limits: a POSIX timer on the process's CPU clock for what is left
    of the input's CPU time (``used`` of it is spent)."""
    signal.signal(signal.SIGALRM, _on_alarm)
    cpu_timer = None
    if cpu_kind:
        signal.signal(signal.SIGPROF, _on_alarm)
        start_timer = _CPU_TIMER[0]
        cpu_timer = start_timer() if start_timer is not None else None

    def arm(seconds, used=0.0):  # type: ignore[no-untyped-def]
        if cpu_kind:
            left = seconds - used + 0.002  # never short of the parent's reading
            left = left if left > 1e-6 else 1e-6
            if cpu_timer is not None:
                cpu_timer(left)
            else:  # pragma: no cover - a libc without timer_create
                _setitimer(_prof, left)
        else:
            _setitimer(_real, seconds)

    def disarm():  # type: ignore[no-untyped-def]
        if not cpu_kind:
            _setitimer(_real, 0)
        elif cpu_timer is not None:
            cpu_timer(0)
        else:  # pragma: no cover
            _setitimer(_prof, 0)

    return arm, disarm


def _module_namespace(ctx):  # type: ignore[no-untyped-def]
    """The program's globals, and its module when it runs as a module of the user's project
    (``ctx``: sandbox.ModuleContext)."""
    g: dict = {"__name__": "solution", "__builtins__": builtins}  # type: ignore[type-arg]
    mod = None
    if ctx:
        mod = type(sys)(ctx["name"])
        g = mod.__dict__
        g.update({"__builtins__": builtins, "__package__": ctx.get("package")})
        if ctx.get("file"):
            g["__file__"] = ctx["file"]
    return g, mod


def _enter_module(ctx, mod) -> None:  # type: ignore[no-untyped-def]
    """Put the project's import roots first, change to its folder and register ``mod``."""
    sys.path[:0] = list(ctx.get("path") or [])
    if ctx.get("cwd"):
        os.chdir(ctx["cwd"])
    if ctx.get("imported"):
        return  # imported as Python does, by _import_program
    if ctx.get("import_package") and ctx.get("package"):
        # the package first, as a normal import would: its __init__ may import this
        # module's names back (a cycle that only works in that order)
        __import__(ctx["package"])
    sys.modules[ctx["name"]] = mod


def _import_program(ctx, _import=__import__, _modules=sys.modules, _getattr=getattr):  # type: ignore[no-untyped-def]
    """The namespace of the module ``ctx`` names, imported as Python imports it (its
    packages first, its siblings from ``sys.path``); an ``ImportError`` when the import found
    another file than ``ctx["file"]`` (an installed copy of the project, say)."""
    name = ctx["name"]
    _import(name)
    mod = _modules[name]
    found = _getattr(mod, "__file__", None)
    if ctx.get("file") and found != ctx["file"]:
        raise ImportError(f"import {name} found {found!r}, not {ctx['file']!r}")
    return mod.__dict__


def _entry_point(job, g, staged, _callable=callable, _NameError=NameError, _load=_import_program):  # type: ignore[no-untyped-def]
    """The function to call on each input (None for a test with setup), once the module
    whose context says ``imported`` is imported into ``g``."""
    ctx = job.get("context")
    if ctx and ctx.get("imported"):
        g.update(_load(ctx))
    fn = g.get(job["entry_point"]) if staged is None else None
    if staged is None and not _callable(fn):
        raise _NameError(f"the program defines no function {job['entry_point']!r}")
    return fn


def _load_program(  # type: ignore[no-untyped-def]
    job,
    g,
    mod,
    arm,
    disarm,
    _now=time.perf_counter,
    _prepare_test=_prepare_test,
    _exc_info=_exc_info,
    _Timeout=_Timeout,
    _BaseException=BaseException,
    _entry=_entry_point,
):
    """Run the prelude and the program's module code (or import its module: ``imported``)
    under the load timer: the load frame's object, the test with setup (or None) and the
    function to call (or None)."""
    ctx = job.get("context")
    staged = fn = None
    t0 = _now()
    arm(float(job["limits"]["load_s"]), _cpu_clock())
    try:
        if ctx:
            _enter_module(ctx, mod)
        # a test with setup: its parts compiled before any of the program's code runs
        staged = _prepare_test(job["test"]) if job.get("test") is not None else None
        exec(job["prelude"], g)
        # an imported module has no program text: _entry imports it
        code = "" if ctx and ctx.get("imported") else job["code"]
        # dont_inherit: the program is compiled as Python would (this file's own
        # ``from __future__ import annotations`` would make its annotations strings, and a
        # dataclass of a module that is not in sys.modules then fails to build).
        exec(compile(code, "<program>", "exec", dont_inherit=True), g)  # config.PROGRAM_FILE
        fn = _entry(job, g, staged)
        disarm()
        load = {"k": "load", "ok": True, "t": _now() - t0}
    except _Timeout:
        load = {"k": "load", "ok": False, "timeout": True, "t": _now() - t0, "e": ["Timeout", ""]}
    except _BaseException as e:
        try:
            err = _exc_info(e)  # still under the load timer: __str__ is the program's code
            disarm()
            load = {"k": "load", "ok": False, "t": _now() - t0, "e": err}
        except _Timeout:
            load = {"k": "load", "ok": False, "timeout": True, "t": _now() - t0}
    disarm()
    return load, staged, fn


def _input_caller(  # type: ignore[no-untyped-def]
    target,
    arm,
    disarm,
    _encode=encode,
    _run_test=_run_test,
    _exc_info=_exc_info,
    _exc_facts=_exc_facts,
    _Timeout=_Timeout,
    _BaseException=BaseException,
    _cpu=_cpu_clock,
    _resolve=_resolve_inputs,
    _pending=_inputs_pending,
):
    """``call(rec, args, limit, mark)``: call the program (``target``: its globals, its test
    with setup or None, its function or None, the test's kit or None) on one input's ``args``
    under its timer (``limit`` seconds, counted from ``mark`` under CPU-time limits) and put
    its value or exception in ``rec``; a timeout is raised. An exception of a test with setup
    is the ``report`` stage's here: one a stage raised was told to the parent already, with
    its stage."""
    g, staged, fn, kit = target

    def call(rec, args, limit, mark):  # type: ignore[no-untyped-def]
        # One timer for the call, the encoding of its value (the program's __repr__,
        # __str__ of its exception ...): all of it is the input's time.
        arm(limit, _cpu() - mark)
        try:
            try:
                if _pending[0]:  # enum members, functions, iterators: built here, timed
                    _pending[0] = False
                    args = _resolve(args, g)
                if staged is None:
                    rec["v"] = _encode(fn(*args))
                else:
                    rec["v"] = _encode(_run_test(g, staged, args, kit))
                rec["s"] = "ok"
            except _Timeout:
                raise
            except _BaseException as e:
                rec["e"] = _exc_info(e)
                rec["x"] = _exc_facts(e, None if staged is None else "report")
                rec["s"] = "exc"
        finally:
            disarm()

    return call


def _answer(  # type: ignore[no-untyped-def]
    rec,
    text,
    limit,
    mark,
    call,
    _decode=decode,
    _make_input=_make_input,
    _loads=loads,
    _now=time.perf_counter,
    _exc_info=_exc_info,
    _Timeout=_Timeout,
    _BaseException=BaseException,
):
    """Decode one input (``text``) and call the program on it; ``rec`` gets the result and
    its time. True when the input timed out."""
    timed_out = False
    t1 = _now()
    try:
        args = _decode(_loads(text), _make_input)
        t1 = _now()
        call(rec, args, limit, mark)
    except _Timeout:
        rec.pop("v", None)
        rec.pop("e", None)
        rec["s"] = "timeout"
        timed_out = True
    except _BaseException as e:  # an input that does not decode (outside the timer)
        rec["s"] = "exc"
        rec["e"] = _exc_info(e)
    rec["t"] = _now() - t1
    return timed_out


def _result_frame(  # type: ignore[no-untyped-def]
    rec,
    cap,
    _dumps=dumps,
    _exc_info=_exc_info,
    _BaseException=BaseException,
    _len=len,
    _hdr=_HDR.pack,
):
    """The frame of one input's result (an error in its place when it cannot be encoded or
    is over ``cap`` bytes)."""
    i = rec["i"]
    try:
        raw = _dumps(rec).encode("utf-8")
    except _BaseException as e:
        small = {"k": "r", "i": i, "s": "exc", "t": rec["t"], "e": _exc_info(e)}
        raw = _dumps(small).encode("utf-8")
    if _len(raw) > cap:
        small = {"k": "r", "i": i, "s": "exc", "t": rec["t"]}
        small["e"] = ["OutputTooLarge", f"result is {_len(raw)} bytes; the cap is {cap}"]
        raw = _dumps(small).encode("utf-8")
    return _hdr(_len(raw)) + raw


def _run_inputs(  # type: ignore[no-untyped-def]
    fd,
    in_fd,
    plan,
    call,
    _answer=_answer,
    _frame=_result_frame,
    _read_input=_read_input,
    _cpu=_cpu_clock,
    _yield=os.sched_yield,
    _write=_write_all,
    _exit=os._exit,
):
    """Run the inputs as the parent sends them; one frame per input, strictly in order.
    ``plan``: the first input's index, how many, their limits, the cut (after N timeouts, at
    most S seconds per input, or None), the timeouts so far, the frame cap, the spin."""
    start, n, limits, cut, timeouts, cap, spin = plan
    for j in range(n):
        i = start + j
        mark = _cpu()  # where this input's CPU time starts, as the parent counts it
        text = _read_input(in_fd, spin)
        if text is None:
            _exit(0)
        rec: dict = {"k": "r", "i": i}  # type: ignore[type-arg]
        limit = limits[j]
        if cut is not None and timeouts >= cut[0] and cut[1] < limit:
            limit = cut[1]
            rec["c"] = 1
        if _answer(rec, text, limit, mark, call):
            timeouts += 1
        frame = _frame(rec, cap)
        # This input's values are freed on its own time, not on the next input's; the yield
        # brings this process's CPU clock up to date for the parent's reading.
        del rec
        _yield()
        _write(fd, frame)


def _send_load(  # type: ignore[no-untyped-def]
    fd, load, _dumps=dumps, _hdr=_HDR.pack, _len=len, _yield=os.sched_yield, _write=_write_all
):
    raw = _dumps(load).encode("utf-8")
    _yield()  # the parent's reading after this frame is input 0's start: up to date
    _write(fd, _hdr(_len(raw)) + raw)


def run_job(  # type: ignore[no-untyped-def]
    job: dict,  # type: ignore[type-arg]
    fd: int,
    in_fd: int,
    # Everything used once the program has loaded is bound here (and in the helpers'
    # defaults), in the zygote.
    _load=_load_program,
    _caller=_input_caller,
    _send_load=_send_load,
    _run_inputs=_run_inputs,
    _pack=pack,
    _write=_write_all,
    _exit=os._exit,
    _kit=_test_kit,
    _lock=_lock_hooks,
):
    """Load the program and run the inputs; one frame per input, strictly in order.

    The inputs are not in this process: the parent sends input k on ``in_fd`` only once it
    has input k - 1's frame, so a program can neither read an input before its turn nor run
    ahead. The child yields its CPU just before it writes each frame, so the parent's reading
    of its CPU clock once the frame is there is exact to microseconds; it then waits for the
    next input (see :func:`_read_input`: a few hundred microseconds of CPU time at most).

    Wall-clock limits (job ``kind`` ``wall``): one ITIMER_REAL per input. CPU-time limits
    (``cpu``): a POSIX timer on the process's CPU clock for what is left of the input's CPU
    time (counted from just before the child waited for the input). The parent decides
    every verdict from its own readings, and stops a program that sleeps or blocks.
    """
    _type, _int = type, int  # bound before any program, as the defaults are
    spin = int(job.get("spin") or 0)
    os.set_blocking(in_fd, not spin)  # see _read_input
    sink = _Sink()
    sys.stdout = sys.stderr = sink  # type: ignore[assignment]
    sys.stdin = None  # type: ignore[assignment]
    arm, disarm = _timers(job.get("kind") == "cpu")
    cut = job.get("cut")  # [after N timeouts, at most S seconds per input] or None
    plan = (
        int(job["start"]),
        int(job["n"]),
        [float(x) for x in job["per_input"]],
        None if cut is None else (int(cut[0]), float(cut[1])),
        int(job.get("timeouts") or 0),
        int(job["limits"]["frame_cap"]),
        spin,
    )
    sys.set_int_max_str_digits(0)

    # The program comes now, on the input pipe, to this child alone: the zygote, whose
    # memory every child inherits, never holds a job's text.
    text = _read_input(in_fd, spin)
    if text is None:
        _exit(0)
    job = dict(job)
    job.update(loads(text))
    text = None
    g, mod = _module_namespace(job.get("context"))
    kit = None
    if job.get("test") is not None:  # its facts channel and hooks, before the program loads
        kit = _kit(fd, plan[5])
        _lock()
    load, staged, fn = _load(job, g, mod, arm, disarm)
    _send_load(fd, load)
    if not load["ok"]:
        _exit(0)
    _run_inputs(fd, in_fd, plan, _caller((g, staged, fn, kit), arm, disarm))
    count = sink.count
    _write(fd, _pack({"k": "end", "out": count if _type(count) is _int else -1}))
    _exit(0)


def child_main(job: dict, fd: int, in_fd: int, state: dict, _exit=os._exit) -> None:  # type: ignore[no-untyped-def, type-arg]
    try:
        confine(job, fd, state, in_fd)
    except BaseException as e:
        try:
            _write_all(fd, pack({"k": "confine-failed", "e": _exc_info(e)}))
        finally:
            _exit(4)
    try:
        run_job(job, fd, in_fd)
    finally:
        _exit(0)


# ---------------------------------------------------------------------------------------------
# The zygote
# ---------------------------------------------------------------------------------------------


def _probe_isolation(config: dict, state: dict, info: dict) -> None:  # type: ignore[type-arg]
    """Find, in throw-away children, the first way to give each child its own IPC and mount
    namespaces, /tmp and task cap (see ``isolate``); record what it really gave."""
    uid = config.get("probe_uid") if os.getuid() == 0 else None
    keep = list(config.get("tmp_keep") or [])
    tried = []
    for strategy in config.get("isolation", ("userns", "root")):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                facts = _probe_child(strategy, uid, keep)
            except BaseException as e:
                facts = {"ok": False, "e": f"{type(e).__name__}: {e}"}
            _write_all(w, pack(facts))
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        try:
            facts = json.loads(data[4:]) if len(data) >= 4 else {"ok": False, "e": "no report"}
        except ValueError:
            facts = {"ok": False, "e": "unreadable report"}
        if facts.get("ok") and all(facts.get(k) for k in ("ipc", "scratch", "tasks", "keep")):
            state["iso"] = strategy
            state["tmp_keep"] = keep
            info["isolation"] = dict(facts, strategy=strategy, tried=tried)
            return
        tried.append(f"{strategy}: {facts.get('e') or facts}")
    info["isolation"] = {"strategy": None, "tried": tried}
    info["errors"].append("per-child isolation: " + ("; ".join(tried) or "not tried"))


_PRELUDES: dict = {}  # type: ignore[type-arg]


def _compiled_prelude(text: str) -> object:
    """The prelude's code object, compiled once in the zygote (a child's compile would cost
    it about 0.4 ms, most of it page faults); the text itself when it does not compile (the
    child then reports the error as it loads)."""
    code = _PRELUDES.get(text)
    if code is None:
        try:
            code = compile(text, "<string>", "exec")
        except (SyntaxError, ValueError):
            return text
        if len(_PRELUDES) >= 8:
            _PRELUDES.clear()
        _PRELUDES[text] = code
    return code


def _set_up_zygote(config: dict, state: dict, info: dict) -> None:  # type: ignore[type-arg]
    """Everything the zygote does once, before any child: its namespaces and file tree, the
    modules it pre-imports, the CPU timer, the seccomp filter, how children are isolated;
    ``info`` gets what it could set up."""
    import socket

    if config.get("unshare_net"):
        try:
            unshare(CLONE_NEWNET)
            info["netns"] = True
        except OSError as e:
            info["errors"].append(f"netns: {e}")
    if config.get("unshare_ipc"):
        try:
            unshare(CLONE_NEWIPC)
            info["ipcns"] = True
        except OSError as e:
            info["errors"].append(f"ipcns: {e}")
    if config.get("minimal_root"):
        try:
            build_minimal_root(config["keep"])
            info["mount"] = "minimal-root"
        except (OSError, KeyError) as e:
            info["errors"].append(f"mount: {e}")
    try:
        info["ifaces"] = [name for _, name in socket.if_nameindex()]
    except OSError as e:
        info["ifaces"] = None
        info["errors"].append(f"interfaces: {e}")
    for name in config.get("preimport", []):
        try:
            __import__(name)
        except Exception as e:
            info["errors"].append(f"preimport {name}: {e}")
    bind_numpy()
    _CPU_TIMER[0] = _make_cpu_timer()
    info["cpu_timer"] = _CPU_TIMER[0] is not None
    info["schedstat"] = os.path.isfile(f"/proc/{os.getpid()}/schedstat")
    try:
        os.close(os.pidfd_open(os.getpid()))
        info["pidfd"] = True
    except (OSError, AttributeError) as e:
        info["pidfd"] = False
        info["errors"].append(f"pidfd_open: {e}")
    try:
        state["seccomp"] = seccomp_filter()
        info["seccomp"] = state["seccomp"] is not None
        info["seccomp_ipc"] = info["seccomp"]
    except Exception as e:
        info["seccomp"] = False
        info["errors"].append(f"seccomp: {e}")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    _capset_args()
    _probe_isolation(config, state, info)


def _spawn(ctl, job: dict, state: dict) -> None:  # type: ignore[no-untyped-def, type-arg]
    """Fork a child for ``job`` and hand the parent its result pipe, its input pipe and a
    pidfd of it."""
    import socket

    job["prelude"] = _compiled_prelude(job.get("prelude") or "")
    r, w = os.pipe()
    ir, iw = os.pipe()  # the inputs, one at a time, from the parent
    with contextlib.suppress(OSError):
        fcntl.fcntl(iw, F_SETPIPE_SZ, 1 << 20)
    pid = os.fork()
    if pid == 0:
        ctl.close()
        os.close(r)
        os.close(iw)
        child_main(job, w, ir, state)
    os.close(w)
    os.close(ir)
    fds = [r, iw]
    # The parent reads the child's CPU clock through its own pid of the child.
    with contextlib.suppress(OSError, AttributeError):
        fds.append(os.pidfd_open(pid))
    socket.send_fds(ctl, [pack({"pid": pid, "pidfd": len(fds) > 2})], fds)
    for f in fds:
        os.close(f)


def _reap(pid: int) -> dict:  # type: ignore[type-arg]
    """Kill a child and wait for it: its wait status, peak memory and CPU time."""
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    try:
        _, status, ru = os.wait4(pid, 0)
        return {"status": status, "maxrss_kb": ru.ru_maxrss, "cpu": ru.ru_utime + ru.ru_stime}
    except ChildProcessError:
        return {"status": None, "maxrss_kb": 0, "cpu": 0.0}


def zygote(ctl_fd: int, config: dict) -> None:  # type: ignore[type-arg]
    import socket

    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    state: dict = {"zygote_pid": os.getpid()}  # type: ignore[type-arg]
    info: dict = {"pid": os.getpid(), "uid": os.getuid(), "errors": []}  # type: ignore[type-arg]
    _set_up_zygote(config, state, info)
    ctl = socket.socket(fileno=ctl_fd)
    while True:
        hdr = _recv_exact(ctl, 4)
        if hdr is None:
            os._exit(0)
        body = _recv_exact(ctl, _HDR.unpack(hdr)[0])
        if body is None:
            os._exit(0)
        msg = json.loads(body)
        op = msg.get("op")
        if op == "spawn":
            _spawn(ctl, msg["job"], state)
        elif op == "reap":
            ctl.sendall(pack(_reap(int(msg["pid"]))))
        elif op == "info":
            ctl.sendall(pack(info))
        else:
            ctl.sendall(pack({"error": f"unknown op {op!r}"}))


def _recv_exact(sock, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        b = sock.recv(n - len(buf))
        if not b:
            return None
        buf += b
    return bytes(buf)


if __name__ == "__main__":
    _ctl, _config = int(sys.argv[1]), json.loads(sys.argv[2])
    zygote(_ctl, _config)
