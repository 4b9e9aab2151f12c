"""The parent against forged result frames: for every frame type, the worst case a child can
build costs the parent time and memory bounded by a small multiple of the frame's bytes, and
decoding counts in the input's time.

A program can write anything to its result pipe. Each case here is a frame forged by the
program itself (about 1 MB, built in the child) for its input 1; the parent must turn it into
an outcome for that input quickly (wall time of the whole run), allocating at most
``BOUND x`` the frame's size (tracemalloc's peak in this process, numpy included), and the
outcome must be one that cannot pass.
"""

from __future__ import annotations

import gc
import textwrap
import time
import tracemalloc
from typing import Any

import numpy as np
import pytest
from testkit import sandbox as H

from utdebug.sandbox import Limits, Opaque, Status
from utdebug.sandbox import frames as S

LIM = Limits(per_input=5.0, load=5.0, memory_mb=1024, slack=0.5)
BOUND = 48
"""Peak parent allocations per frame byte (JSON parse + decoded value + buffers), + FLOOR."""
FLOOR = 8 << 20
WALL = 1.5
"""Seconds of the parent's CPU time for the whole two-input run around one ~1 MB forged
frame."""


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


FORGER = prog(
    """
    import os, stat

    def _pipe():
        for fd in range(3, 64):
            try:
                if stat.S_ISFIFO(os.fstat(fd).st_mode):
                    return fd
            except OSError:
                pass

    def _send(body):
        data = len(body).to_bytes(4, "big") + body
        fd = _pipe()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]

    M = (1 << 61) - 1  # hash(k * M) == 0 for every int k
    N = 1 << 20  # about a megabyte per frame

    def j(items):
        return b"[" + b",".join(items) + b"]"

    def f(x):
        if x == 1:
            v = BUILD
            _send(b'{"k":"r","i":1,"s":"ok","t":0,"v":' + v + b"}")
            os._exit(0)
        return x
    """
)

N = 1 << 20  # about a megabyte per frame

# name: (bytes expression of the "v" field, built in the child; statuses allowed for input 1)
CASES: dict[str, tuple[str, set[Status]]] = {
    # Sets and dicts: hashes anyone can choose (ints, tuples and frozensets of ints).
    "set_half_colliding_ints": (
        "b'{\"$set\":' + j([str(k * M).encode() for k in range(1, 25000)]"
        " + [str(k).encode() for k in range(25000)]) + b'}'",
        {Status.CRASH},
    ),
    "frozenset_colliding_ints": (
        "b'{\"$frozenset\":' + j([str(k * M).encode() for k in range(1, 50000)]) + b'}'",
        {Status.CRASH},
    ),
    "dict_colliding_keys": (
        'b\'{"$dict":\' + j([b"[" + str(k * M).encode() + b",0]" for k in range(1, 45000)])'
        " + b'}'",
        {Status.CRASH},
    ),
    "set_of_colliding_tuples": (
        'b\'{"$set":\' + j([b\'{"$tuple":[\' + str(k * M).encode() + b"]}"'
        " for k in range(1, 30000)]) + b'}'",
        {Status.CRASH},
    ),
    "set_of_colliding_frozensets": (
        'b\'{"$set":\' + j([b\'{"$frozenset":[\' + str(k * M).encode() + b"]}"'
        " for k in range(1, 25000)]) + b'}'",
        {Status.CRASH},
    ),
    "set_of_one_value_repeated": ("b'{\"$set\":' + j([b\"0\"] * (N // 2)) + b'}'", {Status.CRASH}),
    "set_of_empty_sets": ("b'{\"$set\":' + j([b'{\"$frozenset\":[]}'] * 10) + b'}'", None),
    # numpy: the width of a str array comes from its longest element.
    "str_ndarray_one_long_string": (
        'b\'{"$ndarray":{"dtype":"<U125000","shape":[2000],"v":\''
        ' + j([b\'""\'] * 1999 + [b\'"\' + b"x" * 125000 + b\'"\']) + b"}}"',
        {Status.ERROR},
    ),
    "str_ndarray_huge_declared_width": (
        'b\'{"$ndarray":{"dtype":"<U900000000","shape":[2],"v":["a","b"]}}\'',
        {Status.OK},
    ),
    "complex_ndarray_of_zeros": (
        'b\'{"$ndarray":{"dtype":"<c16","shape":[\' + str(N // 2).encode() + b\'],"v":\''
        ' + j([b"0"] * (N // 2)) + b"}}"',
        {Status.OK},
    ),
    "ndarray_huge_shape": (
        'b\'{"$ndarray":{"dtype":"<f8","shape":[1099511627776],"v":[1]}}\'',
        {Status.CRASH},
    ),
    "ndarray_zero_and_huge_dims": (
        'b\'{"$ndarray":{"dtype":"<f8","shape":[0,4611686018427387904],"v":[]}}\'',
        {Status.OK, Status.CRASH},
    ),
    "ndarray_of_numeric_strings": (
        'b\'{"$ndarray":{"dtype":"<f8","shape":[2],"v":["1\' + b"1" * N + b\'","2"]}}\'',
        {Status.CRASH},
    ),
    "ndarray_object_data": (
        'b\'{"$ndarray":{"dtype":"<i8","shape":[20000],"v":\''
        ' + j([b\'{"$set":[]}\'] * 20000) + b"}}"',
        {Status.CRASH},
    ),
    "np_scalar_holding_a_list": (
        'b\'{"$np":["<f8",\' + j([b"0"] * (N // 2)) + b"]}"',
        {Status.CRASH},
    ),
    # Plain tags, each as many times as fit.
    "int_huge_hex": ('b\'{"$int":"\' + b"f" * N + b\'"}\'', {Status.OK}),
    "bytes_huge_base64": ('b\'{"$bytes":"\' + b"QUJD" * (N // 4) + b\'"}\'', {Status.OK}),
    "bytearray_huge_base64": ('b\'{"$bytearray":"\' + b"QUJD" * (N // 4) + b\'"}\'', {Status.OK}),
    "opaque_huge_text": (
        'b\'{"$opaque":["\' + b"T" * N + b\'","\' + b"x" * N + b\'"]}\'',
        {Status.OK},
    ),
    "many_empty_sets": ("j([b'{\"$set\":[]}'] * (N // 12))", {Status.OK}),
    "many_empty_dicts": ("j([b'{\"$dict\":[]}'] * (N // 13))", {Status.OK}),
    "many_empty_tuples": ("j([b'{\"$tuple\":[]}'] * (N // 14))", {Status.OK}),
    "many_complex": ("j([b'{\"$complex\":[0.0,0.0]}'] * (N // 23))", {Status.OK}),
    "many_np_scalars": ('j([b\'{"$np":["<f8",0]}\'] * (N // 18))', {Status.OK}),
    "many_floats_tagged": ('j([b\'{"$float":"nan"}\'] * (N // 17))', {Status.OK}),
    "many_empty_lists": ('j([b"[]"] * (N // 3))', {Status.OK}),
    "many_nested_lists": ('j([b"[[]]"] * (N // 5))', {Status.OK}),
    "many_one_key_objects": ("j([b'{\"a\":0}'] * (N // 8))", {Status.CRASH}),
    "deep_nesting": ('b"[" * 200000 + b"]" * 200000', {Status.CRASH}),
    "deep_tagged_nesting": ("b'{\"$tuple\":[' * 5000 + b']}' * 5000", {Status.CRASH}),
    # Structural values: objects, records, enum members and the standard library's types.
    "many_objects": ('j([b\'{"$obj":["m","P",[["x",0],["y",0]]]}\'] * (N // 36))', {Status.OK}),
    "objects_of_a_thousand_fields": (
        'j([b\'{"$obj":["m","P",\' + j([b\'["f%d",0]\' % i for i in range(1000)]) + b"]}"]'
        " * (N // 9000))",
        {Status.OK},
    ),
    "object_over_the_field_cap": (
        'b\'{"$obj":["m","P",\' + j([b\'["f%d",0]\' % i for i in range(100000)]) + b"]}"',
        {Status.CRASH},
    ),
    "object_with_one_field_repeated": (
        'b\'{"$obj":["m","P",\' + j([b\'["f",0]\'] * 1000) + b"]}"',
        {Status.CRASH},
    ),
    "deep_object_nesting": (
        'b\'{"$obj":["m","P",[["x",\' * 5000 + b"0" + b"]]]}" * 5000',
        {Status.CRASH},
    ),
    "many_records": ('j([b\'{"$record":["m","P",["a","b"],[0,0]]}\'] * (N // 38))', {Status.OK}),
    "many_enum_members": ('j([b\'{"$enum":["m","C","R"]}\'] * (N // 24))', {Status.OK}),
    "many_dates": ("j([b'{\"$date\":[2024,1,2]}'] * (N // 21))", {Status.OK}),
    "many_datetimes": (
        "j([b'{\"$datetime\":[2024,1,2,3,4,5,6,0,3600000000]}'] * (N // 46))",
        {Status.OK},
    ),
    "many_times_and_timedeltas": (
        "j([b'{\"$time\":[1,2,3,4,0,null]}', b'{\"$timedelta\":[1,2,3]}'] * (N // 48))",
        {Status.OK},
    ),
    "many_long_decimals": (
        'j([b\'{"$decimal":"\' + b"9" * 4000 + b\'"}\'] * (N // 4016))',
        {Status.OK},
    ),
    "many_decimals_with_huge_exponents": (
        'j([b\'{"$decimal":"9e999999999999999"}\'] * (N // 33))',
        {Status.OK},
    ),
    "many_large_fractions": (
        'j([b\'{"$fraction":["\' + b"f" * 1070 + b\'","\' + b"e" * 1070 + b\'"]}\'] * (N // 2160))',
        {Status.OK},
    ),
    "fraction_over_the_cap": (
        'b\'{"$fraction":["\' + b"f" * (N // 2) + b\'","1"]}\'',
        {Status.CRASH},
    ),
    "many_uuids": ('j([b\'{"$uuid":"\' + b"ab" * 16 + b\'"}\'] * (N // 45))', {Status.OK}),
    "many_paths": ('j([b\'{"$path":["PosixPath","a/b/c"]}\'] * (N // 32))', {Status.OK}),
    "paths_of_many_parts": (
        'j([b\'{"$path":["PureWindowsPath","\' + b"/".join(b"%x" % i for i in range(12000))'
        " + b'\"]}'] * 16)",
        {Status.OK, Status.ERROR},
    ),
    "set_of_colliding_objects": (
        'b\'{"$set":\' + j([b\'{"$obj":["m","P",[["x",\' + str(k * M).encode() + b"]]]}"'
        " for k in range(1, 25000)]) + b'}'",
        {Status.CRASH},
    ),
    "set_of_colliding_decimals": (
        "b'{\"$set\":' + j([b'{\"$decimal\":\"' + str(k * M).encode() + b'\"}'"
        " for k in range(1, 30000)]) + b'}'",
        {Status.CRASH},
    ),
    "dict_of_colliding_records": (
        'b\'{"$dict":\' + j([b\'[{"$record":["m","P",["a"],[\' + str(k * M).encode()'
        " + b']]},0]' for k in range(1, 20000)]) + b'}'",
        {Status.CRASH},
    ),
}

# Other frame kinds and fields.
OTHER: dict[str, tuple[str, set[Status]]] = {
    "error_with_huge_fields": (
        'b\'{"k":"r","i":1,"s":"exc","t":0,"e":["\' + b"E" * N + b\'","\' + b"m" * N + b\'"]}\'',
        {Status.ERROR},
    ),
    "error_with_nested_fields": (
        'b\'{"k":"r","i":1,"s":"exc","t":0,"e":[\' + j([b"[]"] * (N // 3)) + b\',"m"]}\'',
        {Status.ERROR},
    ),
    "kind_that_is_a_huge_list": ("b'{\"k\":' + j([b\"0\"] * (N // 2)) + b'}'", {Status.CRASH}),
    "index_that_is_a_huge_list": (
        'b\'{"k":"r","s":"ok","t":0,"v":1,"i":\' + j([b"1"] * (N // 2)) + b"}"',
        {Status.CRASH},
    ),
    "status_that_is_a_huge_string": (
        'b\'{"k":"r","i":1,"t":0,"s":"\' + b"s" * N + b\'"}\'',
        {Status.CRASH},
    ),
}


def _forger(build: str, whole_frame: bool = False) -> str:
    code = FORGER.replace("BUILD", build)
    if whole_frame:
        code = code.replace(
            """_send(b'{"k":"r","i":1,"s":"ok","t":0,"v":' + v + b"}")""", "_send(v)"
        )
    return code


def _run(sb, code: str, traced: bool) -> tuple[Any, float, int]:
    gc.collect()
    if traced:
        tracemalloc.start()
    t0 = time.thread_time()  # the parent's work: this thread's CPU time, whatever the load
    try:
        res = sb.run(code, "f", [[0], [1]], LIM)
        took = time.thread_time() - t0
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
    finally:
        if traced:
            tracemalloc.stop()
    return res, took, peak


def _frame_size(code: str) -> int:
    """The forged frame's size, computed the way the child computes it."""
    ns: dict[str, Any] = {}
    src = code.split("def f(x):")[0]
    exec(src, ns)
    build = code.split("v = ", 1)[1].split("\n", 1)[0]
    v = eval(build, ns)  # the same expression the child evaluated
    return len(v) + 40


def _check(sb, code: str, allowed: set[Status] | None) -> None:
    size = _frame_size(code)
    res, took, _ = _run(sb, code, traced=False)
    assert len(res.outcomes) == 2 and res.outcomes[0].value == 0, res
    bad = res.outcomes[1]
    if allowed is not None:
        assert bad.status in allowed, bad
    if bad.status is Status.OK:  # whatever came back, it is plain data and cannot pass
        assert not isinstance(bad.value, str) or bad.value != "expected"
    assert took < WALL, f"the parent spent {took:.2f} s on a {size}-byte frame ({bad.status})"
    res, _, peak = _run(sb, code, traced=True)
    # The traced run measures memory; tracemalloc makes decoding several times slower, so on
    # a loaded machine it may reach the input's decode deadline instead (a timeout), or the
    # parent's share of the child's CPU time (too costly to read).
    traced = res.outcomes[1]
    assert traced.status in (bad.status, Status.TIMEOUT) or "too costly" in (traced.error or ""), (
        bad,
        traced,
    )
    assert peak <= BOUND * size + FLOOR, (
        f"the parent allocated {peak >> 20} MiB for a {size >> 10} KiB frame "
        f"({peak / size:.0f}x; bound {BOUND}x + {FLOOR >> 20} MiB)"
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_forged_value_costs_the_parent_little(sb, name):
    build, allowed = CASES[name]
    _check(sb, _forger(build), allowed)


@pytest.mark.parametrize("name", sorted(OTHER))
def test_forged_frame_fields_cost_the_parent_little(sb, name):
    build, allowed = OTHER[name]
    _check(sb, _forger(build, whole_frame=True), allowed)


def test_decoding_counts_in_the_inputs_time(sb):
    """A frame that takes longer to decode than the input's limit (+ slack) is that input's
    timeout, decided at its deadline; the parent does not finish decoding it."""
    lim = Limits(per_input=0.3, load=5.0, memory_mb=1024, slack=0.3)
    code = _forger('j([b"[]"] * 5000000)')  # 15 MB: the most decoding work per byte
    t0 = time.monotonic()
    res = sb.run(code, "f", [[0], [1]], lim)
    took = time.monotonic() - t0
    bad = res.outcomes[1]
    # Decided at the deadline either way: by the parent while it decodes, or, on a loaded
    # machine, by killing the child still writing its frame, or (CPU-time limits, the
    # default) by the child's own CPU timer while it encodes the 15 MB value, which counts in
    # the input's time. The direct test below covers the decoder's own deadline. Or, before
    # any of that, refused unread: the frame would cost the parent more than twice what the
    # child spent (+ 0.5 s), which happens when the child wrote it fast enough.
    why = bad.error or ""
    if bad.status is Status.ERROR:
        assert bad.error_type == "OutputTooLarge" and "too costly to read" in why, res
    else:
        assert bad.status is Status.TIMEOUT, res
        assert "decod" in why or "hard deadline" in why or "of CPU time" in why, res
    assert took < H.roomy(2.0), took


def test_decode_frame_direct_budget_and_deadline():
    # The str array of the review: 1,999 empty strings and one of 125k characters.
    v = '{"$ndarray":{"dtype":"<U125000","shape":[2000],"v":[' + '"",' * 1999
    frame = ('{"k":"r","i":0,"s":"ok","t":0,"v":' + v + '"' + "x" * 125000 + '"]}}}').encode()
    tracemalloc.start()
    try:
        o = S.decode_frame(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert o.status is Status.ERROR and o.error_type == "OutputTooLarge", o
    assert peak < 8 * len(frame) + (1 << 20), peak
    # Decoding stops at the deadline.
    frame = ('{"k":"r","i":0,"s":"ok","t":0,"v":[' + '{"$set":[]},' * 300000 + "0]}").encode()
    o = S.decode_frame(frame, deadline=time.monotonic() + 0.01)
    assert o.status is Status.TIMEOUT and "deadline" in (o.error or ""), o
    assert gc.isenabled()


def test_real_values_near_the_bounds_still_decode(sb):
    """Large honest results: sets, dicts, str and numeric arrays, big ints, nested tags."""
    code = prog(
        """
        def f(k):
            if k == 0:
                return set(range(200000))
            if k == 1:
                return {i: (i, str(i)) for i in range(50000)}
            if k == 2:
                return np.array(["x" * 100] * 5000)
            if k == 3:
                return np.arange(500000, dtype=np.complex128)
            if k == 4:
                return [frozenset({i}) for i in range(20000)]
            if k == 5:
                return 7 ** 300000
            return {-1, -2, (1, 2), frozenset({1, 2}), 0.5, "a"}  # -1 and -2 share a hash
        """
    )
    # Decoding in the parent is bounded in wall time (limit + slack from the arrival): room
    # for a loaded machine, as this is about what decodes, not how fast.
    res = sb.run(code, "f", [[k] for k in range(7)], Limits(per_input=30.0, load=5.0))
    assert [o.status for o in res.outcomes] == [Status.OK] * 7, res
    v = [o.value for o in res.outcomes]
    assert v[0] == set(range(200000))
    assert v[1][49999] == (49999, "49999")
    assert v[2].shape == (5000,) and v[2][0] == "x" * 100
    assert v[3].dtype == np.complex128 and v[3][-1] == 499999
    assert v[4][7] == frozenset({7})
    assert v[5] == 7**300000
    assert v[6] == {-1, -2, (1, 2), frozenset({1, 2}), 0.5, "a"}
    assert not any(type(x) is Opaque for x in v)


def test_colliding_values_fail_the_comparison_quickly():
    """A list of colliding ints compared as a set (``set_compare``) fails fast, not in
    quadratic time."""
    from utdebug.sandbox.compare import CheckSpec, Semantics, outputs_match

    m = (1 << 61) - 1
    out = [k * m for k in range(1, 50000)]
    t0 = time.thread_time()
    for sem in (Semantics.DATASET, Semantics.REFERENCE):
        spec = CheckSpec(set_compare=True, reference_use_set=True)
        assert not outputs_match(out, [1, 2], spec, sem)
    assert time.thread_time() - t0 < 0.5
