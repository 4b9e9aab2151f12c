"""Values that are not literals: what the sandbox reports of a returned object, how the parent
rebuilds and compares it, and expected values written as constructor calls.

Every kind goes the whole way: a program returns it in the sandbox, the child encodes it, the
parent decodes it, and it is compared (``outputs_match``, dataset semantics) with the expected
value read from source by ``expected_values.expected_value``. Hostile objects (a ``__dict__`` that
loops, a slot that raises, deep, cyclic and huge objects) end bounded.
"""

from __future__ import annotations

import datetime
import decimal
import fractions
import json
import pathlib
import textwrap
import time
import uuid

import pytest
from testkit import sandbox as H

from utdebug.expected_values import expected_value, expected_value_or_repr
from utdebug.literals import LiteralError, literal_value
from utdebug.sandbox import (
    ByRepr,
    CheckSpec,
    EnumMember,
    Limits,
    Opaque,
    Record,
    Semantics,
    Status,
    Structured,
)
from utdebug.sandbox import _runner as R
from utdebug.sandbox import frames as S
from utdebug.sandbox.compare import outputs_match
from utdebug.sandbox.outcomes import Outcome
from utdebug.sandbox.values import describe
from utdebug.sandbox.verdicts import REPR_NOTE, Verdict, judge

LIM = Limits(per_input=2.0, load=5.0, memory_mb=1024, slack=0.5)


def prog(src: str) -> str:
    return textwrap.dedent(src).lstrip("\n")


MODULE = prog(
    """
    import collections, dataclasses, datetime, decimal, enum, fractions, pathlib, typing, uuid
    from dataclasses import dataclass, field

    @dataclass
    class Point:
        x: int
        y: int = 0

    @dataclass(frozen=True)
    class Line:
        start: Point
        end: Point
        tags: list = field(default_factory=list)

    @dataclass(slots=True)
    class Slotted:
        a: int
        b: str

    class Color(enum.Enum):
        RED = 1
        GREEN = "g"

    class Level(enum.IntEnum):
        LOW = 1
        HIGH = 2

    Pair = collections.namedtuple("Pair", "left right")

    class Span(typing.NamedTuple):
        lo: int
        hi: int = 10

    class Account:
        def __init__(self, owner, balance=0):
            if balance < 0:
                raise ValueError("negative")
            self.owner = owner
            self.balance = balance
            self.history = []

    class Vec:
        __slots__ = ("x", "__y")
        def __init__(self, x, y):
            self.x = x
            self.__y = y

    T = typing.TypeVar("T")

    class Box(typing.Generic[T]):  # Box[int](...) also sets __orig_class__: not a field
        __slots__ = ("__weakref__", "__dict__", "__marker__")
        def __init__(self, item):
            self.item = item

    class AttrsLike:  # what attrs generates: __attrs_attrs__ with .name
        class _A:
            def __init__(self, name):
                self.name = name
        __attrs_attrs__ = (_A("u"), _A("v"))
        def __init__(self, u, v):
            self.u = u
            self.v = v

    VALUES = {
        "date": datetime.date(2024, 1, 2),
        "datetime": datetime.datetime(2024, 1, 2, 3, 4, 5, 678),
        "datetime_utc": datetime.datetime(2024, 1, 2, 3, tzinfo=datetime.timezone.utc),
        "datetime_offset": datetime.datetime(
            2024, 1, 2, tzinfo=datetime.timezone(datetime.timedelta(hours=-5, minutes=-30))
        ),
        "time": datetime.time(23, 59, 1, 5),
        "timedelta": datetime.timedelta(days=-2, seconds=7, microseconds=9),
        "decimal": decimal.Decimal("1.50"),
        "fraction": fractions.Fraction(-1, 3),
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "path": pathlib.Path("a/b.txt"),
        "pure_windows_path": pathlib.PureWindowsPath("C:/x/y"),
        "enum": Color.GREEN,
        "int_enum": Level.HIGH,
        "namedtuple": Pair(1, [2]),
        "typed_namedtuple": Span(3),
        "dataclass": Point(1, 2),
        "nested_dataclass": Line(Point(0, 0), Point(3, 4), ["a"]),
        "slots_dataclass": Slotted(1, "b"),
        "plain_object": Account("ann", 5),
        "slots_object": Vec(1, 2),
        "attrs_like": AttrsLike(1, {"k": (2, 3)}),
        "generic": Box[int]([1]),
        "nested_in_containers": [{"when": datetime.date(2024, 1, 2)}, (Point(1, 0),)],
    }

    def f(name):
        return VALUES[name]
    """
)

# name: (the expected value as a test would write it, its rendering by describe)
EXPECTED: dict[str, tuple[str, str]] = {
    "date": ("date(2024, 1, 2)", "datetime.date(2024, 1, 2)"),
    "datetime": (
        "datetime.datetime(2024, 1, 2, 3, 4, 5, 678)",
        "datetime.datetime(2024, 1, 2, 3, 4, 5, 678)",
    ),
    "datetime_utc": (
        "datetime(2024, 1, 2, 3, tzinfo=timezone.utc)",
        "datetime.datetime(2024, 1, 2, 3, 0, tzinfo=datetime.timezone.utc)",
    ),
    "datetime_offset": (
        "datetime(2024, 1, 2, tzinfo=timezone(timedelta(hours=-5, minutes=-30)))",
        "datetime.datetime(2024, 1, 2, 0, 0, tzinfo=datetime.timezone("
        "datetime.timedelta(days=-1, seconds=66600)))",
    ),
    "time": ("time(23, 59, 1, 5)", "datetime.time(23, 59, 1, 5)"),
    "timedelta": (
        "timedelta(days=-2, seconds=7, microseconds=9)",
        "datetime.timedelta(days=-2, seconds=7, microseconds=9)",
    ),
    "decimal": ("Decimal('1.50')", "Decimal('1.50')"),
    "fraction": ("Fraction(-1, 3)", "Fraction(-1, 3)"),
    "uuid": (
        "UUID('12345678-1234-5678-1234-567812345678')",
        "UUID('12345678-1234-5678-1234-567812345678')",
    ),
    "path": ("Path('a/b.txt')", "PosixPath('a/b.txt')"),
    "pure_windows_path": ("PureWindowsPath('C:/x/y')", "PureWindowsPath('C:/x/y')"),
    "enum": ("Color.GREEN", "Color.GREEN"),
    "int_enum": ("Level.HIGH", "2"),
    "namedtuple": ("Pair(1, [2])", "Pair(left=1, right=[2])"),
    "typed_namedtuple": ("Span(3)", "Span(lo=3, hi=10)"),
    "dataclass": ("Point(1, 2)", "Point(x=1, y=2)"),
    "nested_dataclass": (
        "Line(Point(0, 0), Point(x=3, y=4), ['a'])",
        "Line(start=Point(x=0, y=0), end=Point(x=3, y=4), tags=['a'])",
    ),
    "slots_dataclass": ("Slotted(1, 'b')", "Slotted(a=1, b='b')"),
    "plain_object": ("Account('ann', balance=5)", "Account(owner='ann', balance=5, history=[])"),
    "slots_object": ("Vec(1, 2)", "Vec(x=1, _Vec__y=2)"),
    "attrs_like": ("AttrsLike(u=1, v={'k': (2, 3)})", "AttrsLike(u=1, v={'k': (2, 3)})"),
    "generic": ("Box([1])", "Box(item=[1])"),
    "nested_in_containers": (
        "[{'when': date(2024, 1, 2)}, (Point(1),)]",
        "[{'when': datetime.date(2024, 1, 2)}, (Point(x=1, y=0),)]",
    ),
}

# A wrong expected value for each kind: it must not match.
WRONG: dict[str, str] = {
    "date": "date(2024, 1, 3)",
    "datetime": "datetime.datetime(2024, 1, 2, 3, 4, 5)",
    "datetime_utc": "datetime(2024, 1, 2, 3)",  # naive: never equals an aware one
    "datetime_offset": "datetime(2024, 1, 2, tzinfo=timezone.utc)",
    "time": "time(23, 59, 1)",
    "timedelta": "timedelta(days=-2, seconds=7)",
    "decimal": "Decimal('1.51')",
    "fraction": "Fraction(1, 3)",
    "uuid": "UUID('12345678-1234-5678-1234-567812345679')",
    "path": "Path('a/b.txd')",
    "pure_windows_path": "PureWindowsPath('C:/x/z')",
    "enum": "Color.RED",
    "int_enum": "Level.LOW",
    "namedtuple": "Pair(1, [3])",
    "typed_namedtuple": "Span(3, 11)",
    "dataclass": "Point(2, 1)",
    "nested_dataclass": "Line(Point(0, 0), Point(x=3, y=5), ['a'])",
    "slots_dataclass": "Slotted(1, 'c')",
    "plain_object": "Account('ann')",
    "slots_object": "Vec(2, 1)",
    "attrs_like": "AttrsLike(u=1, v={'k': (2, 4)})",
    "generic": "Box([2])",
    "nested_in_containers": "[{'when': date(2024, 1, 2)}, (Point(2),)]",
}


@pytest.fixture(scope="module")
def results(sb):
    names = sorted(EXPECTED)
    res = sb.run(MODULE, "f", [[n] for n in names], LIM)
    assert [o.status for o in res.outcomes] == [Status.OK] * len(names), res
    return {n: o for n, o in zip(names, res.outcomes, strict=True)}


def _match(actual: object, expected: object) -> bool:
    return outputs_match(actual, expected, CheckSpec(), Semantics.DATASET)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_encoded_decoded_compared(results, name):
    """Each kind, returned in the sandbox, equals its expected value read from source (and
    not a wrong one); the parent renders it readably."""
    source, shown = EXPECTED[name]
    actual = results[name].value
    expected = expected_value(source, module_source=MODULE)
    assert _match(actual, expected), (actual, expected)
    assert not _match(actual, expected_value(WRONG[name], module_source=MODULE)), actual
    assert describe(actual) == shown
    assert judge(results[name], expected, CheckSpec()).detail is None  # not by repr


def test_stdlib_values_are_the_real_objects(results):
    v = {n: o.value for n, o in results.items()}
    assert type(v["date"]) is datetime.date and type(v["datetime"]) is datetime.datetime
    assert v["datetime_utc"].tzinfo is datetime.UTC
    assert type(v["decimal"]) is decimal.Decimal and str(v["decimal"]) == "1.50"
    assert type(v["fraction"]) is fractions.Fraction
    assert type(v["uuid"]) is uuid.UUID
    assert type(v["path"]) is pathlib.PosixPath and v["path"] == pathlib.PurePosixPath("a/b.txt")
    assert type(v["pure_windows_path"]) is pathlib.PureWindowsPath
    assert v["int_enum"] == 2 and type(v["int_enum"]) is int  # an IntEnum is its value
    assert v["enum"] == EnumMember("Color", "GREEN", "solution")
    assert type(v["namedtuple"]) is Record and v["namedtuple"] == (1, [2])  # a tuple
    assert v["dataclass"] == Structured("Point", (("x", 1), ("y", 2)), "solution")
    assert v["dataclass"].type == "solution.Point"


def test_structured_semantics():
    p = Structured("Point", (("x", 1), ("y", 2)), "pkg.shapes")
    # Field order does not matter; an unknown module matches any; a known one must agree.
    assert p == Structured("Point", (("y", 2), ("x", 1)))
    assert p != Structured("Point", (("x", 1), ("y", 2)), "other")
    assert p != Structured("Pt", (("x", 1), ("y", 2)), "pkg.shapes")
    assert p != Structured("Point", (("x", 1),), "pkg.shapes")
    assert p != {"x": 1, "y": 2} and p != (1, 2)
    assert hash(p) == hash(Structured("Point", (("y", 2), ("x", 1))))
    assert len({p, Structured("Point", (("y", 2), ("x", 1)))}) == 1
    with pytest.raises(TypeError):
        hash(Structured("Bag", (("items", [1]),)))  # hashable only when its fields are
    with pytest.raises(AttributeError):
        p.name = "Q"  # type: ignore[misc]
    assert EnumMember("Color", "RED") == EnumMember("Color", "RED", "m")
    assert EnumMember("Color", "RED") != EnumMember("Color", "BLUE")
    assert EnumMember("Color", "RED") != "RED" and EnumMember("Color", "RED") != 1
    r = Record((1, 2), "Pair", ("a", "b"))
    assert r == (1, 2) and hash(r) == hash((1, 2)) and repr(r) == "Pair(a=1, b=2)"


def test_expected_value_without_module_source():
    assert expected_value("Point(x=1, y=2)") == Structured("Point", (("x", 1), ("y", 2)))
    assert expected_value("Color.RED") == EnumMember("Color", "RED")
    assert expected_value("datetime.date(2024, 1, 2)") == datetime.date(2024, 1, 2)
    assert expected_value("date.fromisoformat('2024-01-02')") == datetime.date(2024, 1, 2)
    assert expected_value("[Decimal('1.5'), {'k': Fraction(1, 3)}]") == [
        decimal.Decimal("1.5"),
        {"k": fractions.Fraction(1, 3)},
    ]
    assert expected_value("pathlib.PurePosixPath('a', 'b')") == pathlib.PurePosixPath("a/b")
    assert expected_value("UUID(int=5)") == uuid.UUID(int=5)
    with pytest.raises(LiteralError, match="positional arguments of Point"):
        expected_value("Point(1, 2)")


@pytest.mark.parametrize(
    "source",
    [
        "[1, (2, 3.5), {'a': {1, 2}}, frozenset(), float('inf'), -3, b'x', None]",
        "set()",
        "dict(a=1)",
        "{'k': [1, 2]}",
    ],
)
def test_plain_literals_read_as_before(source):
    assert expected_value(source) == literal_value(source)
    assert expected_value(source, module_source=MODULE) == literal_value(source)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("Point(1, 2, 3)", "at most 2 positional"),
        ("Point(z=1)", "no argument `z`"),
        ("Point()", "missing the field `x`"),
        ("Account()", "missing the argument `owner`"),
        ("Nope(1)", "no class `Nope`"),
        ("Color.BLUE", "no member `BLUE`"),
        ("Point.ORIGIN", "not an enum"),
        ("Color(1)", "write the member"),
        ("re.compile('a')", "call to re.compile()"),
        ("date(2024, 13, 1)", "month must be in 1..12"),
        ("Decimal([1])", "Decimal() takes"),
        ("Fraction(1, 0)", "Fraction()"),
        ("UUID('zz')", "UUID()"),
        ("datetime(2024, 1, 1, tzinfo=ZoneInfo('UTC'))", "ZoneInfo"),
        ("Point(*xs)", "starred"),
        ("Point(**kw)", "keyword unpacking"),
        ("Point(x=1 + 2)", "operator +"),
        ("__import__('os').system('true')", "system() is not allowed"),
    ],
)
def test_expected_value_says_what_it_cannot_read(source, message):
    with pytest.raises(LiteralError, match=message.replace("(", r"\(").replace(")", r"\)")):
        expected_value(source, module_source=MODULE)


def test_plain_class_with_computed_attribute_is_refused():
    module = prog(
        """
        class Box:
            def __init__(self, items):
                self.items = items
                self.size = len(items)
        """
    )
    with pytest.raises(LiteralError, match=r"self.size = len\(items\)"):
        expected_value("Box([1])", module_source=module)
    # Keywords without the class's source are the fields themselves.
    assert expected_value("Box(items=[1], size=1)") == Structured(
        "Box", (("items", [1]), ("size", 1))
    )


def test_unreadable_expected_value_is_compared_by_repr(sb):
    code = prog(
        """
        import re
        class Cheat:  # a C-level object would do too: its repr is the program's word
            pass
        def f(k):
            if k == 0:
                return re.compile("a+")
            return [re.compile("a+"), 1]
        """
    )
    res = sb.run(code, "f", [[0], [1]], LIM)
    pattern, listed = res.outcomes
    assert type(pattern.value) is Opaque and pattern.value.text == "re.compile('a+')"
    expected = expected_value_or_repr("re.compile( 'a+' )")
    assert expected == ByRepr("re.compile('a+')")
    j = judge(pattern, expected, CheckSpec())
    assert j.verdict is Verdict.PASS and j.detail == REPR_NOTE
    j = judge(listed, expected_value_or_repr("[re.compile('a+'), 1]"), CheckSpec())
    assert j.verdict is Verdict.PASS and j.detail == REPR_NOTE
    j = judge(pattern, expected_value_or_repr("re.compile('b')"), CheckSpec())
    assert j.verdict is Verdict.FAIL and j.detail == f"returned re.compile('a+') ({REPR_NOTE})"
    # Against a plain or structural expected value, an unencodable result never passes,
    # whatever its repr says; the detail still says how it was compared.
    for exp in ("re.compile('a+')", 1, Structured("Pattern", ())):
        j = judge(pattern, exp, CheckSpec())
        assert j.verdict is Verdict.FAIL and REPR_NOTE in (j.detail or ""), j
        assert not outputs_match(pattern.value, exp, CheckSpec(), Semantics.REFERENCE)
    assert expected_value_or_repr("Point(x=1)") == Structured("Point", (("x", 1),))
    with pytest.raises(LiteralError, match="syntax error"):
        expected_value_or_repr("Point(")


def test_inputs_of_stdlib_types_reach_the_program(sb):
    code = "def f(d, p, x):\n    return (d.year, p.name, x * 2)\n"
    args = [datetime.date(2023, 5, 6), pathlib.PurePosixPath("a/b.py"), decimal.Decimal("1.5")]
    o = H.run1(sb, code, args, LIM)
    assert o.status is Status.OK and o.value == (2023, "b.py", decimal.Decimal("3.0")), o
    with pytest.raises(ValueError, match="cannot be an input"):
        R.decode(json.loads(json.dumps(R.encode(Structured("P", (("x", 1),))))))


HOSTILE = prog(
    """
    import builtins, dataclasses, enum, sys

    class LoopingDict:
        @property
        def __dict__(self):
            while True:
                pass

    class RaisingSlot:
        __slots__ = ("a",)
    RaisingSlot.a = property(lambda self: 1 / 0)  # replaces the slot's descriptor

    class Node:
        def __init__(self, nxt):
            self.nxt = nxt

    class Wide:
        pass

    class Lying:
        def __init__(self):
            self.x = 1
        def __getattribute__(self, name):  # not consulted: fields are read with object's
            return 42
        def __eq__(self, other):
            return True

    @dataclasses.dataclass
    class P:
        x: int

    class Shared:
        def __init__(self, a, b):
            self.a, self.b = a, b

    def f(kind):
        if kind == "looping_dict":
            return LoopingDict()
        if kind == "raising_slot":
            return RaisingSlot()
        if kind == "deep":
            n = None
            for _ in range(5000):
                n = Node(n)
            return n
        if kind == "cycle":
            n = Node(None)
            n.nxt = Node(n)
            return n
        if kind == "wide":
            w = Wide()
            for i in range(50000):
                setattr(w, "f%d" % i, i)
            return w
        if kind == "shared":  # 2**40 paths through 40 objects
            s = Shared(1, 2)
            for _ in range(40):
                s = Shared(s, s)
            return s
        if kind == "lying":
            return Lying()
        if kind == "patched":
            builtins.isinstance = lambda *a: True
            builtins.type = lambda *a: int
            builtins.getattr = lambda *a: 42
            builtins.set = list
            builtins.zip = lambda *a, **k: []
            dataclasses.fields = lambda *a: ()
            return P(7)
        return None
    """
)


def test_hostile_objects_are_bounded(sb):
    kinds = [
        "looping_dict",
        "raising_slot",
        "deep",
        "cycle",
        "wide",
        "shared",
        "lying",
        "patched",
        "ok",
    ]
    lim = Limits(per_input=1.0, load=5.0, memory_mb=1024, slack=0.5)
    res = sb.run(HOSTILE, "f", [[k] for k in kinds], lim)
    o = dict(zip(kinds, res.outcomes, strict=True))
    # A __dict__ property that loops runs in the input's time: its timeout, nothing more.
    assert o["looping_dict"].status is Status.TIMEOUT, o["looping_dict"]
    # A slot whose descriptor raises: compared by repr (an Opaque), never a crash.
    assert o["raising_slot"].status is Status.OK and type(o["raising_slot"].value) is Opaque
    # Deeper than the codec's depth: the object is reported by its repr.
    deep = o["deep"]
    assert deep.status is Status.OK, deep
    assert isinstance(deep.value, Opaque | Structured), deep
    assert "Opaque" in repr(_opaques(deep.value)), deep
    # A cycle back to an object being encoded: that reference is an Opaque "...".
    cyc = o["cycle"].value
    assert type(cyc) is Structured and describe(cyc) == "Node(nxt=Node(nxt=...))", cyc
    assert not _match(cyc, cyc)  # holds an Opaque: equals nothing structural
    # More fields than an object may have, or than a result may: by repr, quickly.
    assert o["wide"].status is Status.OK and type(o["wide"].value) is Opaque, o["wide"]
    assert o["shared"].status is Status.OK, o["shared"]
    assert _opaques(o["shared"].value), o["shared"]
    # Its own __getattribute__ and __eq__ play no part.
    assert o["lying"].value == Structured("Lying", (("x", 1),)), o["lying"]
    # Patched builtins change nothing of the report.
    assert o["patched"].value == Structured("P", (("x", 7),)), o["patched"]
    assert o["ok"].status is Status.OK and o["ok"].value is None
    assert res.children == 1 + 0, res  # one child: no kill was needed


def _opaques(value: object) -> list[Opaque]:
    found: list[Opaque] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Opaque):
            found.append(v)
        elif isinstance(v, Structured):
            stack.extend(x for _, x in v.fields)
    return found


def test_structural_values_in_describe_are_cut_early():
    wide = Structured("W", tuple((f"f{i}", "x" * 100) for i in range(100_000)))
    t0 = time.process_time()
    text = describe(wide, 500)
    assert time.process_time() - t0 < 0.5
    assert text.startswith("W(f0='xxx") and len(text) <= 500
    assert describe(EnumMember("Color", "RED")) == "Color.RED"


def test_decode_of_forged_structural_values_is_checked():
    def dec(v: object) -> Outcome:
        frame = json.dumps({"k": "r", "i": 0, "s": "ok", "t": 0, "v": v}).encode()
        return S.decode_frame(frame)

    ok = dec({"$obj": ["m", "P", [["x", 1], ["y", {"$date": [2024, 1, 2]}]]]})
    assert ok.value == Structured("P", (("x", 1), ("y", datetime.date(2024, 1, 2))), "m")
    bad = [
        {"$obj": ["m", "P", [["x", 1], ["x", 2]]]},  # a repeated field
        {"$obj": ["m", "", []]},  # no class name
        {"$obj": ["m", "P", [["x" * 300, 1]]]},  # a name over the limit
        {"$obj": ["m", "P", [[1, 1]]]},
        {"$obj": ["m", "P", [[f"f{i}", 0] for i in range(R.MAX_FIELDS + 1)]]},
        {"$record": ["m", "P", ["a"], [1, 2]]},
        {"$enum": ["m", "C", ""]},
        {"$date": [2024, 13, 1]},
        {"$date": [2024, 1, True]},
        {"$datetime": [2024, 1, 1, 0, 0, 0, 0, 0, 86400 * 10**6]},  # offset of a whole day
        {"$datetime": [2024, 1, 1, 0, 0, 0, 0, 2, None]},  # fold 2
        {"$timedelta": [10**12, 0, 0]},
        {"$decimal": "1" * (R.MAX_TEXT + 1)},
        {"$decimal": "1e999999999999999999999"},
        {"$decimal": "1.5 "},
        {"$fraction": ["1" * (R.MAX_TEXT // 4 + 2), "1"]},
        {"$fraction": ["1", "0"]},
        {"$uuid": "g" * 32},
        {"$path": ["Path", "a"]},
        {"$path": ["PosixPath", "a" * (R.MAX_PATH + 1)]},
        {"$path": [["PosixPath"], "a"]},
    ]
    for v in bad:
        o = dec(v)
        assert o.status is Status.CRASH, (v, o)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_rendering_reads_back(results, name):
    """What ``repr`` / ``canonical_repr`` writes of a result (to a test file, a record) reads
    back with ``expected_value`` as an equal value."""
    from utdebug.literals import canonical_repr

    actual = results[name].value
    again = expected_value(canonical_repr(actual), module_source=MODULE)
    assert _match(actual, again), (canonical_repr(actual), again)


def test_canonical_text_of_structural_values_is_stable():
    from utdebug.literals import canonical_repr

    tags = {f"t{i}" for i in range(20)}
    value = Structured(
        "Tagged", (("tags", tags), ("pair", Record((1, {"b", "a"}), "P", ("x", "y"))))
    )
    text = canonical_repr(value)
    inner = ", ".join(sorted(repr(t) for t in tags))
    assert text == f"Tagged(tags={{{inner}}}, pair=P(x=1, y={{'a', 'b'}}))", text
    assert expected_value(text.replace("P(x=1, ", "Q(x=1, ")) != value  # another class
    # Without the module's source a namedtuple reads back as an object of its class.
    assert expected_value(text) == Structured(
        "Tagged", (("tags", tags), ("pair", Structured("P", (("x", 1), ("y", {"a", "b"})))))
    )
