"""A corpus of correct programs, each with tests: ordinary Python well beyond HumanEval's style.

Every program here runs correctly under plain ``python3``; the sandbox's default policy
must pass every one (test_sandbox_correct.py). Tests follow the one rule the plain-data
layer sets for test code: the operands of a comparison (and the item of an ``in``) are
plain data -- built-in values, not the candidate's own objects -- so tests compare
``p.x``, ``repr(p)`` or ``dataclasses.astuple(p)`` rather than two ``Point`` objects.
"""

from __future__ import annotations

from textwrap import dedent

PROGRAMS: list[tuple[str, str, str]] = []


def program(name: str, code: str, tests: str) -> None:
    PROGRAMS.append((name, dedent(code).strip() + "\n", dedent(tests).strip() + "\n"))


# -- classes and dunder protocols -------------------------------------------------------------
program("dunder_add_repr", """
    class Vec:
        def __init__(self, x, y):
            self.x, self.y = x, y
        def __add__(self, other):
            return Vec(self.x + other.x, self.y + other.y)
        def __repr__(self):
            return f"Vec({self.x}, {self.y})"
""", """
    assert repr(Vec(1, 2) + Vec(3, 4)) == "Vec(4, 6)"
""")
program("dunder_radd_sum", """
    class Money:
        def __init__(self, cents):
            self.cents = cents
        def __add__(self, other):
            return Money(self.cents + (other.cents if isinstance(other, Money) else other))
        __radd__ = __add__
""", """
    assert sum([Money(5), Money(7), Money(1)]).cents == 13
""")
program("dunder_iadd", """
    class Bag:
        def __init__(self):
            self.items = []
        def __iadd__(self, item):
            self.items.append(item)
            return self
""", """
    b = Bag()
    b += 1
    b += 2
    assert b.items == [1, 2]
""")
program("dunder_mul_matmul_neg_abs", """
    import math
    class V:
        def __init__(self, *c):
            self.c = c
        def __mul__(self, k):
            return V(*(k * x for x in self.c))
        __rmul__ = __mul__
        def __matmul__(self, other):
            return sum(a * b for a, b in zip(self.c, other.c))
        def __neg__(self):
            return V(*(-x for x in self.c))
        def __abs__(self):
            return math.hypot(*self.c)
""", """
    assert (V(1, 2) * 3).c == (3, 6)
    assert (2 * V(1, 1)).c == (2, 2)
    assert V(1, 2) @ V(3, 4) == 11
    assert (-V(1, -2)).c == (-1, 2)
    assert abs(V(3, 4)) == 5.0
""")
program("dunder_iter_next", """
    class Countdown:
        def __init__(self, n):
            self.n = n
        def __iter__(self):
            return self
        def __next__(self):
            if self.n <= 0:
                raise StopIteration
            self.n -= 1
            return self.n + 1
""", """
    assert list(Countdown(3)) == [3, 2, 1]
""")
program("dunder_len_getitem", """
    class Squares:
        def __init__(self, n):
            self.n = n
        def __len__(self):
            return self.n
        def __getitem__(self, i):
            if not 0 <= i < self.n:
                raise IndexError(i)
            return i * i
""", """
    s = Squares(4)
    assert len(s) == 4
    assert list(s) == [0, 1, 4, 9]
    assert s[3] == 9
""")
program("dunder_contains_bool", """
    class Range2:
        def __init__(self, lo, hi):
            self.lo, self.hi = lo, hi
        def __contains__(self, x):
            return self.lo <= x < self.hi
        def __bool__(self):
            return self.hi > self.lo
""", """
    assert 3 in Range2(1, 5)
    assert 7 not in Range2(1, 5)
    assert bool(Range2(1, 5)) is True
    assert bool(Range2(5, 1)) is False
""")
program("dunder_enter_exit", """
    log = []
    class Tracker:
        def __init__(self, name):
            self.name = name
        def __enter__(self):
            log.append("enter " + self.name)
            return self
        def __exit__(self, exc_type, exc, tb):
            log.append("exit " + self.name + (" with " + exc_type.__name__ if exc_type else ""))
            return exc_type is KeyError
    def use():
        with Tracker("a"):
            with Tracker("b"):
                raise KeyError("x")
        return log
""", """
    assert use() == ["enter a", "enter b", "exit b with KeyError", "exit a"]
""")
program("dunder_eq_hash_set", """
    class Key:
        def __init__(self, a):
            self.a = a
        def __eq__(self, other):
            return isinstance(other, Key) and self.a == other.a
        def __hash__(self):
            return hash(self.a)
    def distinct(values):
        return len({Key(v) for v in values})
""", """
    assert distinct([1, 2, 2, 3, 1]) == 3
""")
program("dunder_lt_sorted", """
    class Task:
        def __init__(self, prio, name):
            self.prio, self.name = prio, name
        def __lt__(self, other):
            return self.prio < other.prio
    def order(pairs):
        return [t.name for t in sorted(Task(p, n) for p, n in pairs)]
""", """
    assert order([(3, "c"), (1, "a"), (2, "b")]) == ["a", "b", "c"]
""")
program("dunder_call", """
    class Adder:
        def __init__(self, n):
            self.n = n
        def __call__(self, x):
            return x + self.n
    add5 = Adder(5)
""", """
    assert add5(10) == 15
    assert list(map(Adder(1), [1, 2])) == [2, 3]
""")
program("dunder_getattr_missing", """
    class Config:
        def __init__(self, **values):
            self._values = values
        def __getattr__(self, name):
            try:
                return self._values[name]
            except KeyError:
                raise AttributeError(name) from None
    class Zeros(dict):
        def __missing__(self, key):
            return 0
""", """
    c = Config(depth=3)
    assert c.depth == 3
    assert not hasattr(c, "width")
    z = Zeros(a=1)
    assert z["a"] + z["b"] == 1
""")
program("dunder_setattr_delattr", """
    class Audited:
        def __init__(self):
            object.__setattr__(self, "changes", [])
        def __setattr__(self, name, value):
            self.changes.append(name)
            object.__setattr__(self, name, value)
        def __delattr__(self, name):
            self.changes.append("-" + name)
            object.__delattr__(self, name)
""", """
    a = Audited()
    a.x = 1
    a.y = 2
    del a.x
    assert a.changes == ["x", "y", "-x"]
""")
program("dunder_format_str_repr", """
    class Temp:
        def __init__(self, c):
            self.c = c
        def __format__(self, spec):
            if spec == "f":
                return f"{self.c * 9 / 5 + 32:.1f}F"
            return f"{self.c:.1f}C"
        def __str__(self):
            return f"{self.c} degrees"
        def __repr__(self):
            return f"Temp({self.c!r})"
""", """
    t = Temp(100)
    assert f"{t}" == "100.0C" and f"{t:f}" == "212.0F"
    assert str(t) == "100 degrees" and repr(t) == "Temp(100)"
""")
program("dunder_reversed_index", """
    class Deck:
        def __init__(self, cards):
            self.cards = list(cards)
        def __reversed__(self):
            return iter(self.cards[::-1])
    class Pos:
        def __init__(self, i):
            self.i = i
        def __index__(self):
            return self.i
""", """
    assert list(reversed(Deck("abc"))) == ["c", "b", "a"]
    assert ["x", "y", "z"][Pos(2)] == "z"
    assert bin(Pos(5)) == "0b101"
""")
program("dunder_class_getitem_set_name", """
    class Field:
        def __set_name__(self, owner, name):
            self.name = "_" + name
        def __get__(self, obj, objtype=None):
            return getattr(obj, self.name, None) if obj is not None else self
        def __set__(self, obj, value):
            setattr(obj, self.name, int(value))
    class Row:
        width = Field()
        def __class_getitem__(cls, item):
            return f"Row[{item.__name__}]"
""", """
    r = Row()
    r.width = "12"
    assert r.width == 12
    assert Row[int] == "Row[int]"
""")
program("dunder_name_qualname", """
    class Outer:
        class Inner:
            def method(self):
                pass
    def names():
        return [Outer.__name__, Outer.Inner.__qualname__, Outer.Inner.method.__qualname__, names.__name__]
""", """
    assert names() == ["Outer", "Outer.Inner", "Outer.Inner.method", "names"]
""")
program("dunder_init_subclass", """
    class Plugin:
        registry = {}
        def __init_subclass__(cls, key=None, **kwargs):
            super().__init_subclass__(**kwargs)
            Plugin.registry[key or cls.__name__.lower()] = cls
    class CsvReader(Plugin, key="csv"):
        pass
    class Json(Plugin):
        pass
""", """
    assert sorted(Plugin.registry) == ["csv", "json"]
    assert Plugin.registry["csv"].__name__ == "CsvReader"
""")

# -- inheritance and super() --------------------------------------------------------------------
program("super_init_chain", """
    class Animal:
        def __init__(self, name):
            self.name = name
        def speak(self):
            return "..."
    class Dog(Animal):
        def __init__(self, name, breed):
            super().__init__(name)
            self.breed = breed
        def speak(self):
            return super().speak() + "woof"
""", """
    d = Dog("rex", "lab")
    assert (d.name, d.breed, d.speak()) == ("rex", "lab", "...woof")
""")
program("super_mro_diamond", """
    class A:
        def who(self):
            return ["A"]
    class B(A):
        def who(self):
            return ["B"] + super().who()
    class C(A):
        def who(self):
            return ["C"] + super().who()
    class D(B, C):
        def who(self):
            return ["D"] + super().who()
""", """
    assert D().who() == ["D", "B", "C", "A"]
    assert [k.__name__ for k in D.__mro__] == ["D", "B", "C", "A", "object"]
""")
program("super_two_argument", """
    class Base:
        def value(self):
            return 1
    class Child(Base):
        def value(self):
            return super(Child, self).value() + 10
""", """
    assert Child().value() == 11
""")
program("super_builtin_subclass", """
    class UpperDict(dict):
        def __setitem__(self, key, value):
            super().__setitem__(key.upper(), value)
    class Stack(list):
        def push(self, x):
            self.append(x)
        def peek(self):
            return self[-1]
""", """
    d = UpperDict()
    d["a"] = 1
    assert dict(d) == {"A": 1}
    s = Stack()
    s.push(1)
    s.push(2)
    assert s.peek() == 2 and len(s) == 2
""")
program("isinstance_issubclass", """
    class Shape:
        def area(self):
            raise NotImplementedError
    class Square(Shape):
        def __init__(self, s):
            self.s = s
        def area(self):
            return self.s ** 2
    def total(shapes):
        return sum(s.area() for s in shapes if isinstance(s, Shape))
""", """
    assert total([Square(2), Square(3), "not a shape"]) == 13
    assert issubclass(Square, Shape)
""")
program("mixin_classes", """
    import json
    class JsonMixin:
        def to_json(self):
            return json.dumps(self.__dict__, sort_keys=True)
    class EqMixin:
        def same(self, other):
            return self.__dict__ == other.__dict__
    class User(JsonMixin, EqMixin):
        def __init__(self, name, age):
            self.name, self.age = name, age
""", """
    assert User("a", 3).to_json() == '{"age": 3, "name": "a"}'
    assert User("a", 3).same(User("a", 3))
""")

# -- dataclasses ---------------------------------------------------------------------------------
program("dataclass_basic", """
    from dataclasses import dataclass
    @dataclass
    class Point:
        x: int
        y: int = 0
        def norm1(self):
            return abs(self.x) + abs(self.y)
""", """
    p = Point(3, -4)
    assert p.norm1() == 7
    assert repr(Point(1)) == "Point(x=1, y=0)"
""")
program("dataclass_frozen_order", """
    from dataclasses import dataclass, FrozenInstanceError
    @dataclass(frozen=True, order=True)
    class Version:
        major: int
        minor: int
    def latest(versions):
        return max(Version(*v) for v in versions)
    def try_mutate():
        v = Version(1, 0)
        try:
            v.major = 2
        except FrozenInstanceError:
            return "frozen"
""", """
    assert (latest([(1, 2), (2, 0), (1, 9)]).major, latest([(1, 2), (2, 0)]).minor) == (2, 0)
    assert try_mutate() == "frozen"
    assert len({Version(1, 0), Version(1, 0)}) == 1
""")
program("dataclass_field_factory_post_init", """
    from dataclasses import dataclass, field
    @dataclass
    class Cart:
        owner: str
        items: list = field(default_factory=list)
        total: float = field(init=False, default=0.0)
        def __post_init__(self):
            self.owner = self.owner.title()
        def add(self, price):
            self.items.append(price)
            self.total += price
""", """
    a, b = Cart("ann lee"), Cart("bob")
    a.add(2.5)
    a.add(1.5)
    assert (a.owner, a.items, a.total, b.items) == ("Ann Lee", [2.5, 1.5], 4.0, [])
""")
program("dataclass_asdict_replace_fields", """
    from dataclasses import dataclass, asdict, astuple, replace, fields
    @dataclass
    class Item:
        name: str
        qty: int
        tags: tuple = ()
    def summary():
        item = Item("pen", 2, ("office",))
        more = replace(item, qty=5)
        return asdict(more), astuple(item), [f.name for f in fields(Item)]
""", """
    assert summary() == ({"name": "pen", "qty": 5, "tags": ("office",)}, ("pen", 2, ("office",)), ["name", "qty", "tags"])
""")
program("dataclass_slots_kw_only", """
    from dataclasses import dataclass, KW_ONLY
    @dataclass(slots=True)
    class Pixel:
        x: int
        y: int
        _: KW_ONLY
        color: str = "black"
    def make():
        p = Pixel(1, 2, color="red")
        try:
            p.z = 3
        except AttributeError:
            return (p.x, p.y, p.color, hasattr(p, "__dict__"))
""", """
    assert make() == (1, 2, "red", False)
""")
program("dataclass_inheritance", """
    from dataclasses import dataclass
    @dataclass
    class Base:
        id: int
    @dataclass
    class Employee(Base):
        name: str
        salary: float = 0.0
        def raise_by(self, pct):
            self.salary *= 1 + pct / 100
            return self.salary
""", """
    e = Employee(1, "kim", 100.0)
    assert round(e.raise_by(10), 6) == 110.0
    assert repr(Employee(2, "x")) == "Employee(id=2, name='x', salary=0.0)"
""")

# -- enums, namedtuples, properties, class/static methods ---------------------------------------
program("enum_basic_auto", """
    from enum import Enum, auto
    class Color(Enum):
        RED = auto()
        GREEN = auto()
        BLUE = auto()
    def names():
        return [c.name for c in Color]
    def lookup(value):
        return Color(value).name
""", """
    assert names() == ["RED", "GREEN", "BLUE"]
    assert lookup(2) == "GREEN"
    assert Color["BLUE"] is Color.BLUE
    assert Color.RED.value == 1
""")
program("enum_int_flag", """
    from enum import IntEnum, Flag, auto
    class Level(IntEnum):
        LOW = 1
        HIGH = 3
    class Perm(Flag):
        R = auto()
        W = auto()
        X = auto()
    def rw():
        p = Perm.R | Perm.W
        return [bool(p & Perm.R), bool(p & Perm.X), p.value]
""", """
    assert Level.HIGH + 1 == 4 and sorted([Level.HIGH, Level.LOW]) == [1, 3]
    assert rw() == [True, False, 3]
""")
program("enum_methods_members", """
    from enum import Enum
    class Planet(Enum):
        MERCURY = (3.303e23, 2.4397e6)
        EARTH = (5.976e24, 6.37814e6)
        def __init__(self, mass, radius):
            self.mass = mass
            self.radius = radius
        @property
        def gravity(self):
            return 6.673e-11 * self.mass / self.radius ** 2
""", """
    assert round(Planet.EARTH.gravity, 1) == 9.8
    assert len(Planet.__members__) == 2
""")
program("namedtuple_collections", """
    from collections import namedtuple
    Point = namedtuple("Point", "x y")
    def move(p, dx):
        return p._replace(x=p.x + dx)
""", """
    p = move(Point(1, 2), 3)
    assert p == (4, 2) and p.x == 4
    assert p._asdict() == {"x": 4, "y": 2}
    assert Point._fields == ("x", "y")
""")
program("namedtuple_typing", """
    from typing import NamedTuple
    class Employee(NamedTuple):
        name: str
        dept: str = "eng"
        def badge(self):
            return f"{self.name}@{self.dept}"
    def group(people):
        return sorted(Employee(*p) for p in people)
""", """
    staff = group([("zed",), ("amy", "ops")])
    assert staff == [("amy", "ops"), ("zed", "eng")]
    assert staff[0].badge() == "amy@ops"
""")
program("property_getter_setter_deleter", """
    class Celsius:
        def __init__(self, c=0.0):
            self._c = c
        @property
        def fahrenheit(self):
            return self._c * 9 / 5 + 32
        @fahrenheit.setter
        def fahrenheit(self, f):
            if f < -459.67:
                raise ValueError("below absolute zero")
            self._c = (f - 32) * 5 / 9
        @fahrenheit.deleter
        def fahrenheit(self):
            self._c = 0.0
""", """
    t = Celsius()
    t.fahrenheit = 212
    assert round(t._c, 6) == 100.0
    del t.fahrenheit
    assert t.fahrenheit == 32.0
    try:
        t.fahrenheit = -1000
        assert False
    except ValueError:
        pass
""")
program("classmethod_staticmethod", """
    class Date:
        def __init__(self, y, m, d):
            self.y, self.m, self.d = y, m, d
        @classmethod
        def parse(cls, text):
            return cls(*map(int, text.split("-")))
        @staticmethod
        def is_leap(year):
            return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    class SubDate(Date):
        pass
""", """
    d = SubDate.parse("2024-02-29")
    assert type(d).__name__ == "SubDate" and (d.y, d.m, d.d) == (2024, 2, 29)
    assert Date.is_leap(2000) and not Date.is_leap(1900)
""")
program("cached_property", """
    from functools import cached_property
    class Data:
        def __init__(self, values):
            self.values = values
            self.computed = 0
        @cached_property
        def total(self):
            self.computed += 1
            return sum(self.values)
""", """
    d = Data([1, 2, 3])
    assert d.total + d.total == 12 and d.computed == 1
""")

# -- metaclasses, __slots__, ABCs ----------------------------------------------------------------
program("metaclass_registry", """
    class Registry(type):
        classes = []
        def __new__(mcls, name, bases, ns):
            cls = super().__new__(mcls, name, bases, ns)
            mcls.classes.append(name)
            return cls
    class Base(metaclass=Registry):
        pass
    class A(Base):
        pass
""", """
    assert Registry.classes == ["Base", "A"]
    assert type(A) is Registry
""")
program("metaclass_singleton_call", """
    class Singleton(type):
        _instances = {}
        def __call__(cls, *args, **kwargs):
            if cls not in cls._instances:
                cls._instances[cls] = super().__call__(*args, **kwargs)
            return cls._instances[cls]
    class Settings(metaclass=Singleton):
        def __init__(self):
            self.values = {}
""", """
    a, b = Settings(), Settings()
    a.values["k"] = 1
    assert a is b and b.values == {"k": 1}
""")
program("metaclass_prepare_attrs", """
    class Ordered(type):
        @classmethod
        def __prepare__(mcls, name, bases):
            return {}
        def __new__(mcls, name, bases, ns):
            ns["field_order"] = [k for k in ns if not k.startswith("__")]
            return super().__new__(mcls, name, bases, ns)
    class Form(metaclass=Ordered):
        name = 1
        email = 2
        age = 3
""", """
    assert Form.field_order == ["name", "email", "age"]
""")
program("type_three_arguments", """
    def make_class(name, **attrs):
        return type(name, (object,), attrs)
    Dyn = make_class("Dyn", x=1, double=lambda self: self.x * 2)
""", """
    assert Dyn.__name__ == "Dyn" and Dyn().double() == 2
""")
program("slots_class", """
    class P:
        __slots__ = ("x", "y")
        def __init__(self, x, y):
            self.x, self.y = x, y
    def refuses_new_attribute():
        p = P(1, 2)
        try:
            p.z = 3
        except AttributeError:
            return True
        return False
""", """
    assert refuses_new_attribute()
    assert not hasattr(P(1, 2), "__dict__") and P(1, 2).y == 2
""")
program("slots_inheritance", """
    class Base:
        __slots__ = ("a",)
    class Child(Base):
        __slots__ = ("b",)
        def __init__(self):
            self.a, self.b = 1, 2
""", """
    c = Child()
    assert (c.a, c.b) == (1, 2) and Child.__slots__ == ("b",)
""")
program("abc_abstract", """
    from abc import ABC, abstractmethod
    class Shape(ABC):
        @abstractmethod
        def area(self): ...
        def describe(self):
            return f"{type(self).__name__} {self.area():.2f}"
    class Circle(Shape):
        def __init__(self, r):
            self.r = r
        def area(self):
            return 3.14159 * self.r ** 2
    def cannot_instantiate():
        try:
            Shape()
        except TypeError:
            return True
        return False
""", """
    assert Circle(1).describe() == "Circle 3.14"
    assert cannot_instantiate()
""")
program("abc_register_collections_abc", """
    from collections.abc import Sequence, Iterable, Mapping
    from abc import ABC
    class MyABC(ABC):
        pass
    MyABC.register(tuple)
    class Seq(Sequence):
        def __init__(self, data):
            self.data = data
        def __getitem__(self, i):
            return self.data[i]
        def __len__(self):
            return len(self.data)
""", """
    s = Seq([3, 1, 3])
    assert s.count(3) == 2 and s.index(1) == 1 and 1 in s
    assert isinstance((), MyABC) and isinstance(s, Iterable) and not isinstance(s, Mapping)
""")

# -- generators ---------------------------------------------------------------------------------
program("generator_basic", """
    def fib():
        a, b = 0, 1
        while True:
            yield a
            a, b = b, a + b
    def first(n):
        out = []
        for i, v in enumerate(fib()):
            if i == n:
                return out
            out.append(v)
""", """
    assert first(8) == [0, 1, 1, 2, 3, 5, 8, 13]
""")
program("generator_yield_from_return", """
    def inner():
        yield 1
        yield 2
        return "done"
    def outer(log):
        result = yield from inner()
        log.append(result)
        yield 3
""", """
    log = []
    assert list(outer(log)) == [1, 2, 3] and log == ["done"]
""")
program("generator_send_throw_close", """
    def averager():
        total = count = 0
        average = None
        while True:
            try:
                value = yield average
            except ValueError:
                total = count = 0
                average = None
                continue
            total += value
            count += 1
            average = total / count
    def run():
        g = averager()
        next(g)
        a = g.send(10)
        b = g.send(20)
        g.throw(ValueError)
        c = g.send(5)
        g.close()
        return [a, b, c]
""", """
    assert run() == [10.0, 15.0, 5.0]
""")
program("generator_expression_pipeline", """
    def pipeline(lines):
        stripped = (l.strip() for l in lines)
        nonempty = (l for l in stripped if l and not l.startswith("#"))
        return [int(x) ** 2 for x in nonempty]
""", """
    assert pipeline([" 1", "# c", "", "3 "]) == [1, 9]
""")
program("generator_recursive_tree", """
    def walk(tree, depth=0):
        for key, sub in sorted(tree.items()):
            yield depth, key
            yield from walk(sub, depth + 1)
""", """
    assert list(walk({"a": {"b": {}, "c": {"d": {}}}, "e": {}})) == [(0, "a"), (1, "b"), (1, "c"), (2, "d"), (0, "e")]
""")
program("generator_finally_cleanup", """
    events = []
    def resource():
        events.append("open")
        try:
            yield 1
            yield 2
        finally:
            events.append("close")
    def take_one():
        for x in resource():
            return x
""", """
    assert take_one() == 1
    import gc
    gc.collect()
    assert events == ["open", "close"]
""")

# -- async / asyncio --------------------------------------------------------------------------------
program("asyncio_run_gather", """
    import asyncio
    async def square(x):
        await asyncio.sleep(0.001)
        return x * x
    async def main(n):
        return await asyncio.gather(*(square(i) for i in range(n)))
    def run(n):
        return asyncio.run(main(n))
""", """
    assert run(5) == [0, 1, 4, 9, 16]
""")
program("asyncio_queue_producer_consumer", """
    import asyncio
    async def producer(q, n):
        for i in range(n):
            await q.put(i)
        await q.put(None)
    async def consumer(q):
        got = []
        while (item := await q.get()) is not None:
            got.append(item * 10)
        return got
    async def main():
        q = asyncio.Queue(maxsize=2)
        _, got = await asyncio.gather(producer(q, 4), consumer(q))
        return got
""", """
    import asyncio
    assert asyncio.run(main()) == [0, 10, 20, 30]
""")
program("asyncio_async_generator_comprehension", """
    import asyncio
    async def ticker(n):
        for i in range(n):
            await asyncio.sleep(0)
            yield i
    async def collect():
        return [i async for i in ticker(4) if i % 2 == 0]
""", """
    import asyncio
    assert asyncio.run(collect()) == [0, 2]
""")
program("asyncio_async_context_manager", """
    import asyncio
    from contextlib import asynccontextmanager
    log = []
    @asynccontextmanager
    async def session(name):
        log.append("open " + name)
        try:
            yield name.upper()
        finally:
            log.append("close " + name)
    class Conn:
        async def __aenter__(self):
            log.append("conn")
            return self
        async def __aexit__(self, *exc):
            log.append("disconn")
    async def main():
        async with session("db") as s, Conn():
            return s
""", """
    import asyncio
    assert asyncio.run(main()) == "DB"
    assert log == ["open db", "conn", "disconn", "close db"]
""")
program("asyncio_wait_for_timeout", """
    import asyncio
    async def slow():
        await asyncio.sleep(10)
    async def main():
        try:
            await asyncio.wait_for(slow(), timeout=0.01)
        except asyncio.TimeoutError:
            return "timed out"
""", """
    import asyncio
    assert asyncio.run(main()) == "timed out"
""")
program("asyncio_tasks_lock_event", """
    import asyncio
    async def main():
        lock, ready, order = asyncio.Lock(), asyncio.Event(), []
        async def worker(i):
            await ready.wait()
            async with lock:
                order.append(i)
        tasks = [asyncio.create_task(worker(i)) for i in range(3)]
        await asyncio.sleep(0)
        ready.set()
        await asyncio.gather(*tasks)
        return sorted(order)
""", """
    import asyncio
    assert asyncio.run(main()) == [0, 1, 2]
""")
program("asyncio_taskgroup_except_star", """
    import asyncio
    async def fail(msg):
        await asyncio.sleep(0)
        raise ValueError(msg)
    async def main():
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(fail("a"))
                tg.create_task(fail("b"))
        except* ValueError as group:
            messages = sorted(str(e) for e in group.exceptions)
        return messages
""", """
    import asyncio
    assert asyncio.run(main()) == ["a", "b"]
""")
program("asyncio_timeout_and_shield", """
    import asyncio
    async def main():
        try:
            async with asyncio.timeout(0.01):
                await asyncio.sleep(5)
        except TimeoutError:
            pass
        return await asyncio.shield(asyncio.sleep(0, result="kept"))
""", """
    import asyncio
    assert asyncio.run(main()) == "kept"
""")
program("asyncio_event_loop_call_soon", """
    import asyncio
    def run():
        loop = asyncio.new_event_loop()
        calls = []
        try:
            loop.call_soon(calls.append, 1)
            loop.call_later(0.001, calls.append, 2)
            loop.run_until_complete(asyncio.sleep(0.01))
        finally:
            loop.close()
        return calls
""", """
    assert run() == [1, 2]
""")

# -- decorators -------------------------------------------------------------------------------------
program("decorator_sets_function_attribute", """
    def counted(func):
        def wrapper(*args, **kwargs):
            wrapper.calls += 1
            return func(*args, **kwargs)
        wrapper.calls = 0
        return wrapper
    @counted
    def greet(name):
        return "hi " + name
""", """
    greet("a")
    greet("b")
    assert greet.calls == 2
""")
program("decorator_marks_original", """
    def route(path):
        def mark(func):
            func.route = path
            return func
        return mark
    @route("/home")
    def home():
        return "home"
""", """
    assert home.route == "/home" and home() == "home"
""")
program("decorator_functools_wraps", """
    import functools
    def logged(func):
        @functools.wraps(func)
        def wrapper(*args):
            wrapper.log.append(args)
            return func(*args)
        wrapper.log = []
        return wrapper
    @logged
    def add(a, b):
        '''Add two numbers.'''
        return a + b
""", """
    assert add(1, 2) == 3
    assert (add.__name__, add.__doc__, add.log) == ("add", "Add two numbers.", [(1, 2)])
    assert add.__wrapped__(5, 5) == 10
""")
program("decorator_lru_cache", """
    from functools import lru_cache
    @lru_cache(maxsize=None)
    def fib(n):
        return n if n < 2 else fib(n - 1) + fib(n - 2)
""", """
    assert fib(80) == 23416728348467685
    assert fib.cache_info().hits > 0
    fib.cache_clear()
    assert fib.cache_info().currsize == 0
""")
program("decorator_cache_3_9", """
    from functools import cache
    calls = []
    @cache
    def slow_square(x):
        calls.append(x)
        return x * x
""", """
    assert [slow_square(3), slow_square(3), slow_square(4)] == [9, 9, 16]
    assert calls == [3, 4]
""")
program("decorator_with_arguments_retry", """
    def retry(times):
        def decorate(func):
            def wrapper(*args):
                for attempt in range(times):
                    try:
                        return func(*args)
                    except RuntimeError:
                        if attempt == times - 1:
                            raise
            return wrapper
        return decorate
    state = {"n": 0}
    @retry(3)
    def flaky():
        state["n"] += 1
        if state["n"] < 3:
            raise RuntimeError("again")
        return state["n"]
""", """
    assert flaky() == 3
""")
program("decorator_class_based", """
    class Memo:
        def __init__(self, func):
            self.func = func
            self.cache = {}
        def __call__(self, n):
            if n not in self.cache:
                self.cache[n] = self.func(n)
            return self.cache[n]
    @Memo
    def triangle(n):
        return n if n < 2 else n + triangle(n - 1)
""", """
    assert triangle(100) == 5050 and len(triangle.cache) == 100
""")
program("decorator_class_decorator", """
    def with_repr(cls):
        def __repr__(self):
            return f"{cls.__name__}({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"
        cls.__repr__ = __repr__
        return cls
    @with_repr
    class Thing:
        def __init__(self, a, b):
            self.a, self.b = a, b
""", """
    assert repr(Thing(1, "x")) == "Thing(a=1, b='x')"
""")
program("decorator_stacked_order", """
    trace = []
    def tag(name):
        def deco(f):
            def wrapper(*a):
                trace.append(name)
                return f(*a)
            return wrapper
        return deco
    @tag("outer")
    @tag("inner")
    def f(x):
        return x
""", """
    assert f(7) == 7 and trace == ["outer", "inner"]
""")
program("singledispatch_total_ordering_partial", """
    from functools import singledispatch, total_ordering, partial, reduce
    @singledispatch
    def describe(x):
        return "thing"
    @describe.register
    def _(x: int):
        return "int"
    @describe.register(list)
    def _(x):
        return "list"
    @total_ordering
    class Grade:
        def __init__(self, v):
            self.v = v
        def __eq__(self, o):
            return self.v == o.v
        def __lt__(self, o):
            return self.v < o.v
    power_of_two = partial(pow, 2)
""", """
    assert [describe(1), describe([]), describe("s")] == ["int", "list", "thing"]
    assert max(Grade(3), Grade(2)).v == 3 and min(Grade(3), Grade(1)).v == 1
    assert power_of_two(10) == 1024
    from functools import reduce
    assert reduce(lambda a, b: a * b, range(1, 6)) == 120
""")

# -- context managers ---------------------------------------------------------------------------
program("contextmanager_generator", """
    from contextlib import contextmanager
    @contextmanager
    def tag(name, out):
        out.append(f"<{name}>")
        yield
        out.append(f"</{name}>")
    def render():
        out = []
        with tag("b", out):
            out.append("x")
        return "".join(out)
""", """
    assert render() == "<b>x</b>"
""")
program("contextlib_suppress_exitstack", """
    from contextlib import suppress, ExitStack, closing, nullcontext
    class Res:
        closed = []
        def __init__(self, n):
            self.n = n
        def close(self):
            Res.closed.append(self.n)
    def run():
        with suppress(ZeroDivisionError):
            1 / 0
        with ExitStack() as stack:
            for i in range(3):
                stack.enter_context(closing(Res(i)))
        with nullcontext(5) as v:
            return v, Res.closed
""", """
    assert run() == (5, [2, 1, 0])
""")
program("context_manager_exception_handling", """
    class Transaction:
        def __init__(self, store):
            self.store = store
        def __enter__(self):
            self.snapshot = dict(self.store)
            return self.store
        def __exit__(self, et, ev, tb):
            if et is not None:
                self.store.clear()
                self.store.update(self.snapshot)
            return False
    def transfer(store, fail):
        try:
            with Transaction(store) as s:
                s["a"] -= 5
                if fail:
                    raise RuntimeError("boom")
                s["b"] += 5
        except RuntimeError:
            pass
        return store
""", """
    assert transfer({"a": 10, "b": 0}, True) == {"a": 10, "b": 0}
    assert transfer({"a": 10, "b": 0}, False) == {"a": 5, "b": 5}
""")
program("contextlib_redirect_stdout", """
    import io
    from contextlib import redirect_stdout
    def captured():
        buf = io.StringIO()
        with redirect_stdout(buf):
            print("hello")
            print("world", end="!")
        return buf.getvalue()
""", """
    assert captured() == "hello\\nworld!"
""")

# -- match, except*, walrus, comprehensions, f-strings ------------------------------------------
program("match_literals_and_guards", """
    def classify(x):
        match x:
            case 0:
                return "zero"
            case int(n) if n < 0:
                return "negative"
            case int() | float():
                return "number"
            case str() as s if s.isdigit():
                return "digits"
            case _:
                return "other"
""", """
    assert [classify(v) for v in (0, -3, 2.5, "12", "ab", None)] == ["zero", "negative", "number", "digits", "other", "other"]
""")
program("match_sequences_mappings", """
    def parse(command):
        match command.split():
            case ["go", direction]:
                return ("move", direction)
            case ["pick", "up", *items]:
                return ("take", tuple(items))
            case []:
                return ("noop",)
            case _:
                return ("unknown",)
    def config(d):
        match d:
            case {"type": "db", "port": int(port), **rest}:
                return port, sorted(rest)
            case {"type": t}:
                return t
""", """
    assert parse("go north") == ("move", "north")
    assert parse("pick up a b") == ("take", ("a", "b"))
    assert parse("") == ("noop",) and parse("dance now please") == ("unknown",)
    assert config({"type": "db", "port": 5432, "user": "x"}) == (5432, ["user"])
    assert config({"type": "file"}) == "file"
""")
program("match_class_patterns", """
    from dataclasses import dataclass
    @dataclass
    class Point:
        x: int
        y: int
    @dataclass
    class Circle:
        center: Point
        r: int
    def where(shape):
        match shape:
            case Point(x=0, y=0):
                return "origin"
            case Point(0, y):
                return f"y-axis {y}"
            case Circle(Point(x, y), r) if r > 10:
                return f"big at {x},{y}"
            case Circle():
                return "circle"
""", """
    assert [where(Point(0, 0)), where(Point(0, 5)), where(Circle(Point(1, 2), 20)), where(Circle(Point(0, 0), 1))] == \\
        ["origin", "y-axis 5", "big at 1,2", "circle"]
""")
program("except_star_groups", """
    def handle():
        caught = []
        try:
            raise ExceptionGroup("many", [ValueError("v"), TypeError("t"), ValueError("w")])
        except* ValueError as eg:
            caught.append(("value", len(eg.exceptions)))
        except* TypeError as eg:
            caught.append(("type", len(eg.exceptions)))
        return caught
""", """
    assert handle() == [("value", 2), ("type", 1)]
""")
program("exception_notes_chaining", """
    class AppError(Exception):
        pass
    def load(text):
        try:
            return int(text)
        except ValueError as exc:
            err = AppError("bad config")
            err.add_note(f"while parsing {text!r}")
            raise err from exc
    def run():
        try:
            load("x")
        except AppError as e:
            return type(e.__cause__).__name__, e.__notes__
""", """
    assert run() == ("ValueError", ["while parsing 'x'"])
""")
program("exception_try_else_finally", """
    def divide(a, b, log):
        try:
            result = a / b
        except ZeroDivisionError:
            log.append("div0")
            result = None
        else:
            log.append("ok")
        finally:
            log.append("done")
        return result
""", """
    log = []
    assert divide(6, 3, log) == 2.0 and divide(1, 0, log) is None
    assert log == ["ok", "done", "div0", "done"]
""")
program("walrus_operator", """
    import re
    def first_numbers(lines):
        return [int(m.group()) for line in lines if (m := re.search(r"\\d+", line))]
    def chunks(data, size):
        out, it = [], iter(data)
        while chunk := [x for _, x in zip(range(size), it)]:
            out.append(chunk)
        return out
""", """
    assert first_numbers(["a1", "b", "c22d"]) == [1, 22]
    assert chunks(range(7), 3) == [[0, 1, 2], [3, 4, 5], [6]]
""")
program("comprehensions_all_kinds", """
    def build(n):
        squares = [i * i for i in range(n)]
        evens = {i for i in squares if i % 2 == 0}
        index = {v: i for i, v in enumerate(squares)}
        pairs = [(a, b) for a in range(3) for b in range(a)]
        matrix = [[r * c for c in range(3)] for r in range(3)]
        flat = [x for row in matrix for x in row if x]
        return squares, evens, index[9], pairs, flat
""", """
    assert build(5) == ([0, 1, 4, 9, 16], {0, 4, 16}, 3, [(1, 0), (2, 0), (2, 1)], [1, 2, 2, 4])
""")
program("fstring_formats", """
    import datetime
    def report(name, value, ratio, when):
        width = 8
        return [f"{name!r:>{width}}", f"{value:,}", f"{ratio:.1%}", f"{value:#x}", f"{value:08.2f}",
                f"{when:%Y-%m-%d}", f"{value=}", f"{'nested ' + f'{1 + 1}'}"]
""", """
    import datetime
    assert report("ab", 1234, 0.256, datetime.date(2024, 3, 9)) == \\
        ["    'ab'", "1,234", "25.6%", "0x4d2", "01234.00", "2024-03-09", "value=1234", "nested 2"]
""")
program("string_methods_formatting", """
    def tidy(text):
        words = text.split()
        return " ".join(w.capitalize() for w in words).center(20, "*"), text.count("a"), "%s-%05d" % ("id", 42)
""", """
    assert tidy("a banana") == ("******A Banana******", 4, "id-00042")
""")

# -- closures, nonlocal, global -----------------------------------------------------------------
program("closure_counter_nonlocal", """
    def make_counter(start=0):
        count = start
        def increment(step=1):
            nonlocal count
            count += step
            return count
        return increment
""", """
    c = make_counter(10)
    c()
    assert c(5) == 16
    other = make_counter()
    assert other() == 1
""")
program("closure_late_binding", """
    def multipliers():
        return [lambda x, i=i: x * i for i in range(4)]
    def late():
        return [f(2) for f in [lambda x: x * i for i in range(3)]]
""", """
    assert [m(3) for m in multipliers()] == [0, 3, 6, 9]
    assert late() == [4, 4, 4]
""")
program("global_statement", """
    TOTAL = 0
    def add(n):
        global TOTAL
        TOTAL += n
        return TOTAL
    def total():
        return TOTAL
""", """
    add(3)
    add(4)
    assert total() == 7
""")
program("closure_accumulators", """
    def make_stats():
        values = []
        def add(v):
            values.append(v)
            return mean()
        def mean():
            return sum(values) / len(values)
        return add, mean
""", """
    add, mean = make_stats()
    add(1)
    add(3)
    assert mean() == 2.0
""")
program("functions_args_kwargs", """
    def call(f, /, *args, sep="-", **kwargs):
        return sep.join([f(*args), *sorted(kwargs)])
    def keyword_only(a, *, b=2):
        return a * b
""", """
    assert call(lambda *a: str(sum(a)), 1, 2, 3, x=1, w=2) == "6-w-x"
    assert keyword_only(3) == 6 and keyword_only(3, b=4) == 12
    try:
        keyword_only(1, 2)
        assert False
    except TypeError:
        pass
""")

# -- recursion ------------------------------------------------------------------------------------
program("recursion_setrecursionlimit", """
    import sys
    sys.setrecursionlimit(20000)
    def depth(n):
        return 0 if n == 0 else 1 + depth(n - 1)
""", """
    assert depth(12000) == 12000
""")
program("recursion_memo_dict", """
    def ways(n, memo={}):
        if n < 0:
            return 0
        if n == 0:
            return 1
        if n not in memo:
            memo[n] = ways(n - 1) + ways(n - 2) + ways(n - 3)
        return memo[n]
""", """
    assert [ways(i) for i in range(6)] == [1, 1, 2, 4, 7, 13]
    assert ways(50) == 10562230626642
""")
program("recursion_permutations_backtracking", """
    def n_queens(n):
        solutions = 0
        def place(row, cols, d1, d2):
            nonlocal solutions
            if row == n:
                solutions += 1
                return
            for c in range(n):
                if c not in cols and row - c not in d1 and row + c not in d2:
                    place(row + 1, cols | {c}, d1 | {row - c}, d2 | {row + c})
        place(0, frozenset(), frozenset(), frozenset())
        return solutions
""", """
    assert [n_queens(i) for i in range(1, 8)] == [1, 0, 0, 2, 10, 4, 40]
""")
program("recursion_mutual", """
    def is_even(n):
        return True if n == 0 else is_odd(n - 1)
    def is_odd(n):
        return False if n == 0 else is_even(n - 1)
""", """
    assert is_even(500) and is_odd(301)
""")

# -- numbers: decimal, fractions, math, statistics, big ints --------------------------------------
program("decimal_context_quantize", """
    from decimal import Decimal, localcontext, ROUND_HALF_UP, getcontext
    def money(x):
        return Decimal(x).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    def third(prec):
        with localcontext() as ctx:
            ctx.prec = prec
            return Decimal(1) / Decimal(3)
""", """
    from decimal import Decimal
    assert money("2.675") == Decimal("2.68") and str(money("1.005")) == "1.01"
    assert str(third(5)) == "0.33333"
    assert Decimal("0.1") + Decimal("0.2") == Decimal("0.3")
""")
program("decimal_global_context", """
    import decimal
    decimal.getcontext().prec = 6
    def ratio(a, b):
        return decimal.Decimal(a) / decimal.Decimal(b)
""", """
    assert str(ratio(2, 3)) == "0.666667"
""")
program("fractions_arith", """
    from fractions import Fraction
    def harmonic(n):
        return sum(Fraction(1, k) for k in range(1, n + 1))
""", """
    from fractions import Fraction
    assert harmonic(4) == Fraction(25, 12)
    assert Fraction("0.75") + Fraction(1, 4) == 1
    assert Fraction(1, 3).limit_denominator(10) == Fraction(1, 3)
""")
program("math_functions", """
    import math
    def facts():
        return [math.gcd(12, 18), math.lcm(4, 6), math.comb(10, 3), math.perm(5, 2), math.isqrt(99),
                math.prod([1, 2, 3, 4]), math.factorial(10), math.floor(-2.5), math.ceil(2.1)]
""", """
    import math
    assert facts() == [6, 12, 120, 20, 9, 24, 3628800, -3, 3]
    assert math.isclose(math.sqrt(2) ** 2, 2.0) and math.isinf(math.inf) and math.isnan(math.nan)
""")
program("cmath_complex", """
    import cmath
    def roots(a, b, c):
        d = cmath.sqrt(b * b - 4 * a * c)
        return sorted([(-b + d) / (2 * a), (-b - d) / (2 * a)], key=lambda z: (z.real, z.imag))
""", """
    r = roots(1, 0, 1)
    assert [(round(z.real, 9), round(z.imag, 9)) for z in r] == [(0.0, -1.0), (0.0, 1.0)]
    assert abs(complex(3, 4)) == 5.0
""")
program("statistics_module", """
    import statistics as st
    def describe(xs):
        return st.mean(xs), st.median(xs), st.mode(xs), round(st.stdev(xs), 4), st.quantiles(xs, n=4)
""", """
    assert describe([1, 2, 2, 3, 4, 7, 9]) == (4, 3, 2, 2.9439, [2.0, 3.0, 7.0])
""")
program("big_integers", """
    import sys
    def digits_of_power(base, exp):
        sys.set_int_max_str_digits(0)
        return len(str(base ** exp))
    def mod_pow(b, e, m):
        return pow(b, e, m), pow(3, -1, 7)
""", """
    assert digits_of_power(2, 100000) == 30103
    assert mod_pow(4, 13, 497) == (445, 5)
""")
program("float_formatting_rounding", """
    def fmt(x):
        return [round(x, 2), round(2.5), round(3.5), f"{x:.3e}", float("inf") > 1e308, (0.1 + 0.2).hex()[:5]]
""", """
    assert fmt(3.14159) == [3.14, 2, 4, "3.142e+00", True, "0x1.3"]
""")
program("int_bit_operations", """
    def bits(n):
        return [n.bit_length(), n.bit_count(), n & 0xF, n >> 2, n ^ 0xFF, ~n, int("1011", 2), (255).to_bytes(2, "big")]
""", """
    assert bits(0b101101) == [6, 4, 13, 11, 210, -46, 11, b"\\x00\\xff"]
""")

# -- the standard library ---------------------------------------------------------------------------
program("re_groups_sub", """
    import re
    DATE = re.compile(r"(?P<y>\\d{4})-(?P<m>\\d{2})-(?P<d>\\d{2})")
    def swap_dates(text):
        return DATE.sub(lambda m: f"{m['d']}/{m['m']}/{m['y']}", text)
    def words(text):
        return re.findall(r"\\b\\w+\\b", text.lower()), re.split(r"[,;]\\s*", "a, b;c")
""", """
    assert swap_dates("on 2024-03-09 and 1999-12-31") == "on 09/03/2024 and 31/12/1999"
    assert words("Hello, World") == (["hello", "world"], ["a", "b", "c"])
""")
program("re_flags_fullmatch", """
    import re
    def is_identifier(s):
        return re.fullmatch(r"[a-z_][a-z0-9_]*", s, re.IGNORECASE) is not None
    def multiline(text):
        return re.findall(r"^#\\s*(.+)$", text, re.MULTILINE)
""", """
    assert [is_identifier(s) for s in ("Abc_1", "1abc", "a-b")] == [True, False, False]
    assert multiline("# one\\ntext\\n#two") == ["one", "two"]
""")
program("collections_counter_defaultdict", """
    from collections import Counter, defaultdict
    def top_words(text, n):
        return Counter(text.split()).most_common(n)
    def group_by_len(words):
        groups = defaultdict(list)
        for w in words:
            groups[len(w)].append(w)
        return dict(groups)
""", """
    assert top_words("a b a c b a", 2) == [("a", 3), ("b", 2)]
    assert group_by_len(["hi", "yo", "hey"]) == {2: ["hi", "yo"], 3: ["hey"]}
    from collections import Counter
    assert Counter("aab") + Counter("bc") == Counter({"a": 2, "b": 2, "c": 1})
""")
program("collections_deque_ordereddict_chainmap", """
    from collections import deque, OrderedDict, ChainMap
    def rotate(xs, k):
        d = deque(xs)
        d.rotate(k)
        return list(d)
    def lru_order(keys):
        od = OrderedDict()
        for k in keys:
            od[k] = True
            od.move_to_end(k)
        return list(od)
    def lookup(key):
        return ChainMap({"a": 1}, {"a": 2, "b": 3})[key]
""", """
    assert rotate([1, 2, 3, 4], 1) == [4, 1, 2, 3]
    assert lru_order("abcab") == ["c", "a", "b"]
    assert (lookup("a"), lookup("b")) == (1, 3)
    from collections import deque
    assert list(deque(range(5), maxlen=3)) == [2, 3, 4]
""")
program("itertools_combinatorics", """
    from itertools import permutations, combinations, product, combinations_with_replacement
    def counts():
        return (len(list(permutations("abcd", 2))), list(combinations([1, 2, 3], 2)),
                list(product("ab", repeat=2)), len(list(combinations_with_replacement(range(3), 2))))
""", """
    assert counts() == (12, [(1, 2), (1, 3), (2, 3)], [("a", "a"), ("a", "b"), ("b", "a"), ("b", "b")], 6)
""")
program("itertools_streams", """
    from itertools import groupby, accumulate, chain, islice, zip_longest, count, cycle, pairwise, takewhile, starmap
    import operator
    def demo():
        return ([(k, len(list(g))) for k, g in groupby("aaabccdd")], list(accumulate([1, 2, 3, 4], operator.mul)),
                list(chain([1], (2, 3))), list(islice(count(10, 5), 3)), list(zip_longest("ab", "x", fillvalue="-")),
                list(islice(cycle("xy"), 5)), list(pairwise([1, 2, 3])), list(takewhile(lambda x: x < 3, [1, 2, 5, 1])),
                list(starmap(pow, [(2, 3), (3, 2)])))
""", """
    assert demo() == ([("a", 3), ("b", 1), ("c", 2), ("d", 2)], [1, 2, 6, 24], [1, 2, 3], [10, 15, 20],
                      [("a", "x"), ("b", "-")], ["x", "y", "x", "y", "x"], [(1, 2), (2, 3)], [1, 2], [8, 9])
""")
program("heapq_priority_queue", """
    import heapq
    def k_smallest(xs, k):
        return heapq.nsmallest(k, xs)
    def merge_sorted(*lists):
        return list(heapq.merge(*lists))
    def schedule(tasks):
        heap = []
        for prio, name in tasks:
            heapq.heappush(heap, (prio, name))
        return [heapq.heappop(heap)[1] for _ in range(len(heap))]
""", """
    assert k_smallest([5, 1, 4, 2], 2) == [1, 2]
    import heapq
    assert heapq.nlargest(2, [5, 1, 4]) == [5, 4]
    assert merge_sorted([1, 4], [2, 3]) == [1, 2, 3, 4]
    assert schedule([(2, "b"), (1, "a"), (3, "c")]) == ["a", "b", "c"]
""")
program("heapq_dijkstra", """
    import heapq
    def shortest(graph, start):
        dist = {start: 0}
        heap = [(0, start)]
        while heap:
            d, node = heapq.heappop(heap)
            if d > dist.get(node, float("inf")):
                continue
            for nxt, w in graph.get(node, []):
                nd = d + w
                if nd < dist.get(nxt, float("inf")):
                    dist[nxt] = nd
                    heapq.heappush(heap, (nd, nxt))
        return dist
""", """
    g = {"a": [("b", 1), ("c", 4)], "b": [("c", 2), ("d", 6)], "c": [("d", 3)]}
    assert shortest(g, "a") == {"a": 0, "b": 1, "c": 3, "d": 6}
""")
program("bisect_module", """
    import bisect
    def grade(score, breakpoints=(60, 70, 80, 90), grades="FDCBA"):
        return grades[bisect.bisect(breakpoints, score)]
    def insert_all(xs):
        out = []
        for x in xs:
            bisect.insort(out, x)
        return out, bisect.bisect_left(out, 3), bisect.bisect_right(out, 3)
""", """
    assert [grade(s) for s in (33, 99, 77, 70, 89, 90, 100)] == ["F", "A", "C", "C", "B", "A", "A"]
    assert insert_all([3, 1, 3, 2]) == ([1, 2, 3, 3], 2, 4)
""")
program("operator_module", """
    import operator
    from operator import attrgetter, itemgetter, methodcaller
    class P:
        def __init__(self, name, age):
            self.name, self.age = name, age
    def by_age(people):
        return [p.name for p in sorted(people, key=attrgetter("age"))]
    def second_items(rows):
        return list(map(itemgetter(1), rows))
    upper = methodcaller("upper")
""", """
    assert by_age([P("a", 30), P("b", 20)]) == ["b", "a"]
    assert second_items([(1, "x"), (2, "y")]) == ["x", "y"]
    assert upper("hi") == "HI"
    import operator
    assert operator.add(2, 3) == 5 and operator.itemgetter(0, 2)("abc") == ("a", "c")
""")
program("string_module", """
    import string
    def caesar(text, k):
        letters = string.ascii_lowercase
        table = str.maketrans(letters, letters[k:] + letters[:k])
        return text.translate(table)
    def fill(template, **values):
        return string.Template(template).safe_substitute(values)
""", """
    assert caesar("abc xyz", 3) == "def abc"
    assert fill("$who likes $what", who="tim") == "tim likes $what"
    import string
    assert string.capwords("hello  world") == "Hello World" and len(string.punctuation) == 32
""")
program("datetime_arithmetic", """
    from datetime import date, datetime, timedelta, timezone
    def days_between(a, b):
        return (date.fromisoformat(b) - date.fromisoformat(a)).days
    def add_hours(stamp, hours):
        return (datetime.fromisoformat(stamp) + timedelta(hours=hours)).isoformat()
    def weekday(d):
        return date.fromisoformat(d).strftime("%A")
    def utc():
        return datetime(2024, 1, 1, 12, tzinfo=timezone(timedelta(hours=2))).astimezone(timezone.utc).hour
""", """
    assert days_between("2024-01-01", "2024-03-01") == 60
    assert add_hours("2024-02-28T23:00:00", 2) == "2024-02-29T01:00:00"
    assert weekday("2024-03-09") == "Saturday" and utc() == 10
""")
program("zoneinfo_timezones", """
    from datetime import datetime
    from zoneinfo import ZoneInfo
    def offset_hours(zone, iso):
        return datetime.fromisoformat(iso).replace(tzinfo=ZoneInfo(zone)).utcoffset().total_seconds() / 3600
""", """
    assert offset_hours("Europe/Paris", "2024-01-15T12:00") == 1.0
    assert offset_hours("Europe/Paris", "2024-07-15T12:00") == 2.0
""")
program("calendar_module", """
    import calendar
    def info(year, month):
        return calendar.monthrange(year, month), calendar.isleap(year), calendar.month_name[month]
""", """
    assert info(2024, 2) == ((3, 29), True, "February")
""")
program("time_module", """
    import time
    def elapsed():
        start = time.perf_counter()
        time.sleep(0.01)
        return time.perf_counter() - start
    def fmt(ts):
        return time.strftime("%Y-%m-%d", time.gmtime(ts))
""", """
    assert 0.005 < elapsed() < 2
    import time
    assert fmt(0) == "1970-01-01" and time.time() > 1.6e9
""")
program("json_roundtrip_custom", """
    import json
    from datetime import date
    def encode(obj):
        def default(o):
            if isinstance(o, date):
                return {"__date__": o.isoformat()}
            raise TypeError(o)
        return json.dumps(obj, default=default, sort_keys=True, indent=None, separators=(",", ":"))
    def decode(text):
        def hook(d):
            return date.fromisoformat(d["__date__"]) if "__date__" in d else d
        return json.loads(text, object_hook=hook)
""", """
    from datetime import date
    text = encode({"b": [1, 2.5, None, True], "a": date(2024, 1, 2)})
    assert text == '{"a":{"__date__":"2024-01-02"},"b":[1,2.5,null,true]}'
    assert decode(text) == {"a": date(2024, 1, 2), "b": [1, 2.5, None, True]}
""")
program("json_errors", """
    import json
    def safe_load(text):
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            return ("error", e.lineno, e.colno)
""", """
    assert safe_load('{"a": 1}') == {"a": 1}
    assert safe_load('{"a": }') == ("error", 1, 7)
""")
program("hashlib_digests", """
    import hashlib
    def digests(data):
        return hashlib.sha256(data).hexdigest(), hashlib.md5(data).hexdigest()
    def incremental(chunks):
        h = hashlib.sha256()
        for c in chunks:
            h.update(c)
        return h.hexdigest()
""", """
    assert digests(b"abc")[0] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert digests(b"hello")[1] == "5d41402abc4b2a76b9719d911017c592"
    assert incremental([b"a", b"bc"]) == digests(b"abc")[0]
""")
program("hmac_secrets_uuid", """
    import hmac, hashlib, secrets, uuid
    def sign(key, msg):
        return hmac.new(key, msg, hashlib.sha256).hexdigest()
    def tokens():
        return len(secrets.token_hex(8)), uuid.uuid4().version, str(uuid.UUID(int=0))
""", """
    assert len(sign(b"k", b"m")) == 64 and sign(b"k", b"m") == sign(b"k", b"m")
    assert tokens() == (16, 4, "00000000-0000-0000-0000-000000000000")
""")
program("copy_shallow_deep", """
    import copy
    class Node:
        def __init__(self, value, children=()):
            self.value, self.children = value, list(children)
    def clone(tree):
        return copy.deepcopy(tree)
""", """
    tree = Node(1, [Node(2)])
    twin = clone(tree)
    twin.children[0].value = 99
    assert tree.children[0].value == 2
    import copy
    outer = [[1], [2]]
    shallow = copy.copy(outer)
    shallow[0].append(5)
    assert outer == [[1, 5], [2]]
""")
program("random_with_seed", """
    import random
    def draw(seed):
        rng = random.Random(seed)
        return [rng.randint(1, 100) for _ in range(5)], rng.choice("abcdef"), round(rng.random(), 6)
    def shuffled(seed, xs):
        random.seed(seed)
        xs = list(xs)
        random.shuffle(xs)
        return xs
""", """
    import random
    rng = random.Random(42)
    assert draw(42) == ([rng.randint(1, 100) for _ in range(5)], rng.choice("abcdef"), round(rng.random(), 6))
    assert draw(7) == draw(7)
    random.seed(3)
    expected = list(range(10))
    random.shuffle(expected)
    assert shuffled(3, range(10)) == expected
""")
program("random_sample_distribution", """
    import random
    def simulate(seed, n):
        rng = random.Random(seed)
        rolls = [rng.randint(1, 6) for _ in range(n)]
        return sum(rolls) / n, sorted(rng.sample(range(100), 5)) == sorted(set(rng.sample(range(100), 5))) or True
""", """
    mean, ok = simulate(1, 10000)
    assert 3.3 < mean < 3.7 and ok
""")
program("struct_base64_binascii_zlib", """
    import struct, base64, binascii, zlib
    def pack(values):
        return struct.pack("<hIf", *values)
    def roundtrip(data):
        return base64.b64decode(base64.b64encode(data)), binascii.hexlify(data), zlib.decompress(zlib.compress(data * 100))
""", """
    import struct
    assert struct.unpack("<hIf", pack((-2, 7, 1.5))) == (-2, 7, 1.5)
    assert roundtrip(b"ab") == (b"ab", b"6162", b"ab" * 100)
    import base64
    assert base64.b64encode(b"hi") == b"aGk="
""")
program("textwrap_unicodedata", """
    import textwrap, unicodedata
    def wrap(text, width):
        return textwrap.wrap(text, width)
    def strip_accents(s):
        return "".join(c for c in unicodedata.normalize("NFD", s) if unicodedata.category(c) != "Mn")
""", """
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]
    assert strip_accents("café déjà") == "cafe deja"
    import textwrap
    assert textwrap.dedent("  a\\n  b") == "a\\nb"
""")
program("difflib_similarity", """
    import difflib
    def closest(word, options):
        return difflib.get_close_matches(word, options, n=1)
    def ratio(a, b):
        return round(difflib.SequenceMatcher(None, a, b).ratio(), 2)
""", """
    assert closest("appel", ["ape", "apple", "peach"]) == ["apple"]
    assert ratio("abcd", "abed") == 0.75
""")
program("array_memoryview", """
    from array import array
    def stats():
        a = array("i", [1, 2, 3])
        a.append(4)
        m = memoryview(bytearray(b"abcdef"))
        m[0] = ord("z")
        return a.tolist(), a.itemsize, bytes(m[:3]), a.typecode
""", """
    assert stats() == ([1, 2, 3, 4], 4, b"zbc", "i")
""")
program("typing_generics", """
    from typing import Generic, TypeVar, Optional, Iterator
    T = TypeVar("T")
    class Stack(Generic[T]):
        def __init__(self) -> None:
            self.items: list[T] = []
        def push(self, item: T) -> None:
            self.items.append(item)
        def pop(self) -> Optional[T]:
            return self.items.pop() if self.items else None
        def __iter__(self) -> Iterator[T]:
            return reversed(self.items)
    IntStack = Stack[int]
""", """
    s = IntStack()
    s.push(1)
    s.push(2)
    assert list(s) == [2, 1] and s.pop() == 2 and s.pop() == 1 and s.pop() is None
""")
program("typing_protocol_typeddict", """
    from typing import Protocol, TypedDict, runtime_checkable, Literal
    @runtime_checkable
    class Closable(Protocol):
        def close(self) -> None: ...
    class File:
        def close(self) -> None:
            pass
    class Movie(TypedDict):
        title: str
        year: int
    Mode = Literal["r", "w"]
    def check(obj) -> bool:
        return isinstance(obj, Closable)
    def make(title: str, year: int) -> Movie:
        return Movie(title=title, year=year)
""", """
    assert check(File()) and not check(42)
    assert make("x", 1999) == {"title": "x", "year": 1999}
""")
program("typing_get_type_hints_overload", """
    from typing import get_type_hints, overload, Union, Callable, Any
    @overload
    def double(x: int) -> int: ...
    @overload
    def double(x: str) -> str: ...
    def double(x):
        return x * 2
    def apply(f: Callable[[int], int], x: int) -> int:
        return f(x)
    def hints():
        return sorted(get_type_hints(apply))
""", """
    assert double(2) == 4 and double("a") == "aa"
    assert hints() == ["f", "return", "x"]
""")
program("typing_string_annotations", """
    from __future__ import annotations
    from dataclasses import dataclass
    import typing
    @dataclass
    class Tree:
        value: int
        left: Tree | None = None
        right: Tree | None = None
        def total(self) -> int:
            return self.value + sum(c.total() for c in (self.left, self.right) if c)
    def hint_names():
        return sorted(typing.get_type_hints(Tree))
""", """
    assert Tree(1, Tree(2), Tree(3, Tree(4))).total() == 10
    assert hint_names() == ["left", "right", "value"]
""")
program("abc_numbers", """
    import numbers
    from decimal import Decimal
    from fractions import Fraction
    def kinds(values):
        return [isinstance(v, numbers.Integral) for v in values], [isinstance(v, numbers.Real) for v in values]
""", """
    from fractions import Fraction
    assert kinds([1, 1.5, Fraction(1, 2), 2j]) == ([True, False, False, False], [True, True, True, False])
""")
program("inspect_signature_getsource", """
    import inspect
    def area(width: float, height: float = 1.0, *, unit: str = "m") -> str:
        return f"{width * height}{unit}"
    def describe():
        sig = inspect.signature(area)
        return [p.name for p in sig.parameters.values()], sig.parameters["height"].default, inspect.getsource(area).splitlines()[0]
""", """
    assert describe() == (["width", "height", "unit"], 1.0, 'def area(width: float, height: float = 1.0, *, unit: str = "m") -> str:')
""")
program("traceback_format", """
    import traceback
    def failing():
        return 1 / 0
    def capture():
        try:
            failing()
        except ZeroDivisionError:
            text = traceback.format_exc()
        return "ZeroDivisionError" in text, "failing" in text, len(traceback.extract_stack()) >= 1
""", """
    assert capture() == (True, True, True)
""")
program("logging_to_stderr", """
    import logging
    log = logging.getLogger("app")
    def work(n):
        logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
        for i in range(n):
            log.info("step %d", i)
        log.warning("done")
        return n
""", """
    assert work(3) == 3
""")
program("warnings_module", """
    import warnings
    def old():
        warnings.warn("use new()", DeprecationWarning, stacklevel=2)
        return 1
    def call_and_record():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            old()
        return [str(w.message) for w in caught], caught[0].category.__name__
""", """
    assert call_and_record() == (["use new()"], "DeprecationWarning")
""")
program("pickle_candidate_classes", """
    import pickle
    from dataclasses import dataclass
    @dataclass
    class Record:
        key: str
        values: list
    class Plain:
        def __init__(self, n):
            self.n = n
    def roundtrip():
        r = pickle.loads(pickle.dumps(Record("k", [1, 2])))
        p = pickle.loads(pickle.dumps(Plain(5)))
        return r.key, r.values, p.n, type(p).__name__
""", """
    assert roundtrip() == ("k", [1, 2], 5, "Plain")
""")
program("weakref_gc", """
    import weakref, gc
    class Node:
        pass
    def lifetime():
        n = Node()
        ref = weakref.ref(n)
        alive = ref() is n
        del n
        gc.collect()
        return alive, ref() is None, len(weakref.WeakValueDictionary())
""", """
    assert lifetime() == (True, True, 0)
""")
program("io_stringio_csv", """
    import csv, io
    def to_csv(rows):
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\\n")
        writer.writerows(rows)
        return buf.getvalue()
    def from_csv(text):
        return list(csv.DictReader(io.StringIO(text)))
""", """
    assert to_csv([["a", "b"], [1, "x,y"]]) == 'a,b\\n1,"x,y"\\n'
    assert from_csv("name,age\\nann,3\\n") == [{"name": "ann", "age": "3"}]
""")
program("files_in_the_working_directory", """
    import os, pathlib
    def write_and_read():
        with open("notes.txt", "w") as f:
            f.write("line1\\nline2\\n")
        with open("notes.txt") as f:
            lines = f.read().splitlines()
        p = pathlib.Path("data") / "x.bin"
        p.parent.mkdir()
        p.write_bytes(b"\\x00\\x01")
        os.remove("notes.txt")
        return lines, p.read_bytes(), sorted(os.listdir("."))
""", """
    assert write_and_read() == (["line1", "line2"], b"\\x00\\x01", ["data"])
""")
program("tempfile_and_shutil", """
    import tempfile, shutil, os
    def scratch():
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "a.txt")
            with open(src, "w") as f:
                f.write("hello")
            shutil.copy(src, os.path.join(d, "b.txt"))
            with tempfile.NamedTemporaryFile("w+", dir=d, suffix=".log") as t:
                t.write("x")
                t.flush()
                t.seek(0)
                content = t.read()
            with tempfile.TemporaryFile() as anon:
                anon.write(b"abc")
                anon.seek(0)
                blob = anon.read()
            return sorted(os.listdir(d)), content, blob
""", """
    assert scratch() == (["a.txt", "b.txt"], "x", b"abc")
""")
program("sqlite_in_memory", """
    import sqlite3
    def query():
        con = sqlite3.connect(":memory:")
        con.execute("create table t (name text, n int)")
        con.executemany("insert into t values (?, ?)", [("a", 1), ("b", 2), ("a", 3)])
        rows = con.execute("select name, sum(n) from t group by name order by name").fetchall()
        con.close()
        return rows
""", """
    assert query() == [("a", 4), ("b", 2)]
""")
program("argparse_explicit_args", """
    import argparse
    def parse(argv):
        p = argparse.ArgumentParser(prog="tool")
        p.add_argument("path")
        p.add_argument("-n", type=int, default=1)
        p.add_argument("--verbose", action="store_true")
        ns = p.parse_args(argv)
        return ns.path, ns.n, ns.verbose
""", """
    assert parse(["x.txt", "-n", "3", "--verbose"]) == ("x.txt", 3, True)
    assert parse(["y"]) == ("y", 1, False)
""")
program("shlex_fnmatch_glob", """
    import shlex, fnmatch, glob, os
    def demo():
        for name in ("a.py", "b.py", "c.txt"):
            open(name, "w").close()
        return shlex.split('cmd "two words" x'), fnmatch.filter(["a.py", "b.txt"], "*.py"), sorted(glob.glob("*.py"))
""", """
    assert demo() == (["cmd", "two words", "x"], ["a.py"], ["a.py", "b.py"])
""")
program("graphlib_topological", """
    from graphlib import TopologicalSorter
    def order(deps):
        return list(TopologicalSorter(deps).static_order())
""", """
    result = order({"c": {"b"}, "b": {"a"}, "d": {"a"}})
    assert result.index("a") < result.index("b") < result.index("c") and result.index("a") < result.index("d")
""")
program("contextvars_module", """
    import contextvars
    request_id = contextvars.ContextVar("request_id", default="none")
    def handle(rid):
        token = request_id.set(rid)
        try:
            return request_id.get()
        finally:
            request_id.reset(token)
    def in_copy():
        ctx = contextvars.copy_context()
        return ctx.run(handle, "inner"), request_id.get()
""", """
    assert in_copy() == ("inner", "none")
""")
program("queue_and_lock_without_threads", """
    import queue, threading
    def fifo(items):
        q = queue.Queue()
        lock = threading.Lock()
        with lock:
            for i in items:
                q.put(i)
        return [q.get_nowait() for _ in items], q.empty(), threading.current_thread().name
""", """
    assert fifo([1, 2, 3]) == ([1, 2, 3], True, "MainThread")
""")
program("socket_importable_local_pair", """
    import socket
    def echo(data):
        a, b = socket.socketpair()
        with a, b:
            a.sendall(data)
            return b.recv(1024)
    def names():
        return isinstance(socket.gethostname(), str), socket.AF_INET
""", """
    assert echo(b"ping") == b"ping"
    import socket
    assert names() == (True, socket.AF_INET)
""")
program("selectors_and_os_pipe", """
    import os, selectors
    def ready():
        r, w = os.pipe()
        os.write(w, b"x")
        sel = selectors.DefaultSelector()
        sel.register(r, selectors.EVENT_READ)
        events = sel.select(timeout=1)
        data = os.read(r, 1)
        sel.close()
        os.close(r)
        os.close(w)
        return len(events), data
""", """
    assert ready() == (1, b"x")
""")
program("os_environment_and_paths", """
    import os, sys
    def info():
        return (os.path.join("a", "b.txt"), os.path.splitext("x.tar.gz"), os.getcwd() == os.environ["HOME"],
                os.path.basename("/p/q.py"), sys.version_info >= (3, 8), os.sep)
""", """
    assert info() == ("a/b.txt", ("x.tar", ".gz"), True, "q.py", True, "/")
""")
program("sys_module_introspection", """
    import sys
    def info():
        return sys.getsizeof(0) > 0, sys.maxsize > 2 ** 31, __name__ in sys.modules, type(sys.modules[__name__]).__name__
""", """
    assert info() == (True, True, True, "module")
""")
program("eval_exec_compile", """
    def calc(expression):
        return eval(expression, {"__builtins__": {}}, {"x": 3})
    def define(source):
        namespace = {}
        exec(compile(source, "<generated>", "exec"), namespace)
        return namespace["f"](2)
""", """
    assert calc("x * 2 + 1") == 7
    assert define("def f(n):\\n    return n ** 3\\n") == 8
""")
program("globals_locals_vars", """
    LIMIT = 5
    def scope(a, b=2):
        c = a + b
        return sorted(locals()), "LIMIT" in globals(), sorted(k for k in vars() if not k.startswith("_"))
""", """
    assert scope(1) == (["a", "b", "c"], True, ["a", "b", "c"])
""")
program("heavy_printing", """
    import sys
    def noisy(n):
        for i in range(n):
            print(f"line {i}: " + "x" * 50)
        print("to stderr", file=sys.stderr)
        sys.stdout.write("direct\\n")
        return n
""", """
    assert noisy(20000) == 20000
""")
program("printing_unicode_and_flush", """
    def show():
        print("héllo wörld ✓ 日本", flush=True)
        print(*range(5), sep=", ", end=".\\n")
        print(repr("tab\\t"), b"bytes")
        return True
""", """
    assert show() is True
""")
program("big_memory_use", """
    def allocate():
        data = list(range(2_000_000))
        table = {i: str(i) for i in range(200_000)}
        return sum(data), len(table), len(bytearray(50 * 1024 * 1024))
""", """
    assert allocate() == (1999999000000, 200000, 52428800)
""")
program("cpu_heavy_loop", """
    def primes(limit):
        sieve = bytearray([1]) * (limit + 1)
        sieve[0:2] = b"\\x00\\x00"
        for i in range(2, int(limit ** 0.5) + 1):
            if sieve[i]:
                sieve[i * i::i] = bytearray(len(range(i * i, limit + 1, i)))
        return sum(sieve)
""", """
    assert primes(2_000_000) == 148933
""")
program("name_is_module_name", """
    def where():
        return __name__
    if __name__ == "__main__":
        print("run as a script")
""", """
    assert isinstance(where(), str)
""")

# -- HumanEval-like algorithmic functions, in varied styles ---------------------------------------
program("algo_two_sum", """
    def two_sum(nums, target):
        seen = {}
        for i, n in enumerate(nums):
            if target - n in seen:
                return [seen[target - n], i]
            seen[n] = i
        return []
""", """
    assert two_sum([2, 7, 11, 15], 9) == [0, 1] and two_sum([1, 2], 7) == []
""")
program("algo_binary_search", """
    def search(xs, target):
        lo, hi = 0, len(xs) - 1
        while lo <= hi:
            mid = (lo + hi) // 2
            if xs[mid] == target:
                return mid
            lo, hi = (mid + 1, hi) if xs[mid] < target else (lo, mid - 1)
        return -1
""", """
    assert [search([1, 3, 5, 7], t) for t in (1, 7, 4)] == [0, 3, -1]
""")
program("algo_merge_sort", """
    def merge_sort(xs):
        if len(xs) <= 1:
            return list(xs)
        mid = len(xs) // 2
        left, right = merge_sort(xs[:mid]), merge_sort(xs[mid:])
        out = []
        while left and right:
            out.append((left if left[0] <= right[0] else right).pop(0))
        return out + left + right
""", """
    import random
    rng = random.Random(0)
    data = [rng.randint(-50, 50) for _ in range(200)]
    assert merge_sort(data) == sorted(data)
""")
program("algo_quicksort_inplace", """
    def quicksort(a, lo=0, hi=None):
        if hi is None:
            hi = len(a) - 1
        if lo < hi:
            pivot, i = a[hi], lo
            for j in range(lo, hi):
                if a[j] < pivot:
                    a[i], a[j] = a[j], a[i]
                    i += 1
            a[i], a[hi] = a[hi], a[i]
            quicksort(a, lo, i - 1)
            quicksort(a, i + 1, hi)
        return a
""", """
    assert quicksort([5, 2, 9, 1, 5, 6]) == [1, 2, 5, 5, 6, 9]
""")
program("algo_lcs_dp", """
    def lcs(a, b):
        dp = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i, x in enumerate(a, 1):
            for j, y in enumerate(b, 1):
                dp[i][j] = dp[i - 1][j - 1] + 1 if x == y else max(dp[i - 1][j], dp[i][j - 1])
        return dp[-1][-1]
""", """
    assert lcs("ABCBDAB", "BDCABA") == 4 and lcs("", "x") == 0
""")
program("algo_edit_distance", """
    def edit(a, b):
        prev = list(range(len(b) + 1))
        for i, x in enumerate(a, 1):
            cur = [i]
            for j, y in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
            prev = cur
        return prev[-1]
""", """
    assert edit("kitten", "sitting") == 3 and edit("abc", "abc") == 0
""")
program("algo_bfs_grid", """
    from collections import deque
    def steps(grid):
        rows, cols = len(grid), len(grid[0])
        queue, seen = deque([(0, 0, 0)]), {(0, 0)}
        while queue:
            r, c, d = queue.popleft()
            if (r, c) == (rows - 1, cols - 1):
                return d
            for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nr, nc = r + dr, c + dc
                if 0 <= nr < rows and 0 <= nc < cols and grid[nr][nc] == "." and (nr, nc) not in seen:
                    seen.add((nr, nc))
                    queue.append((nr, nc, d + 1))
        return -1
""", """
    assert steps(["..#", "#..", "..."]) == 4
    assert steps([".#", "#."]) == -1
""")
program("algo_union_find", """
    class DSU:
        def __init__(self, n):
            self.parent = list(range(n))
        def find(self, x):
            while self.parent[x] != x:
                self.parent[x] = self.parent[self.parent[x]]
                x = self.parent[x]
            return x
        def union(self, a, b):
            self.parent[self.find(a)] = self.find(b)
    def components(n, edges):
        d = DSU(n)
        for a, b in edges:
            d.union(a, b)
        return len({d.find(i) for i in range(n)})
""", """
    assert components(5, [(0, 1), (1, 2), (3, 4)]) == 2
""")
program("algo_trie", """
    class Trie:
        def __init__(self):
            self.root = {}
        def insert(self, word):
            node = self.root
            for ch in word:
                node = node.setdefault(ch, {})
            node["$"] = True
        def starts_with(self, prefix):
            node = self.root
            for ch in prefix:
                if ch not in node:
                    return []
                node = node[ch]
            out = []
            def collect(n, acc):
                for k, v in sorted(n.items()):
                    if k == "$":
                        out.append(prefix + acc)
                    else:
                        collect(v, acc + k)
            collect(node, "")
            return out
""", """
    t = Trie()
    for w in ("car", "cart", "cat", "dog"):
        t.insert(w)
    assert t.starts_with("ca") == ["car", "cart", "cat"] and t.starts_with("x") == []
""")
program("algo_linked_list", """
    class Node:
        def __init__(self, val, nxt=None):
            self.val, self.next = val, nxt
    def from_list(xs):
        head = None
        for x in reversed(xs):
            head = Node(x, head)
        return head
    def reverse(head):
        prev = None
        while head:
            head.next, prev, head = prev, head, head.next
        return prev
    def to_list(head):
        out = []
        while head:
            out.append(head.val)
            head = head.next
        return out
""", """
    assert to_list(reverse(from_list([1, 2, 3]))) == [3, 2, 1]
""")
program("algo_roman_numerals", """
    def to_roman(n):
        table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
                 (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
        out = ""
        for value, sym in table:
            count, n = divmod(n, value)
            out += sym * count
        return out
""", """
    assert [to_roman(n) for n in (1994, 4, 3999)] == ["MCMXCIV", "IV", "MMMCMXCIX"]
""")
program("algo_matrix_ops", """
    def matmul(a, b):
        return [[sum(x * y for x, y in zip(row, col)) for col in zip(*b)] for row in a]
    def transpose(m):
        return [list(r) for r in zip(*m)]
""", """
    assert matmul([[1, 2], [3, 4]], [[5, 6], [7, 8]]) == [[19, 22], [43, 50]]
    assert transpose([[1, 2, 3]]) == [[1], [2], [3]]
""")
program("algo_balanced_brackets", """
    def balanced(s):
        pairs = {")": "(", "]": "[", "}": "{"}
        stack = []
        for ch in s:
            if ch in "([{":
                stack.append(ch)
            elif ch in pairs:
                if not stack or stack.pop() != pairs[ch]:
                    return False
        return not stack
""", """
    assert [balanced(s) for s in ("([]{})", "(]", "((", "")] == [True, False, False, True]
""")
program("algo_run_length", """
    from itertools import groupby
    def encode(s):
        return "".join(f"{len(list(g))}{k}" for k, g in groupby(s))
    def decode(s):
        import re
        return "".join(ch * int(n) for n, ch in re.findall(r"(\\d+)(\\D)", s))
""", """
    assert encode("aaabccdddd") == "3a1b2c4d" and decode("3a1b2c4d") == "aaabccdddd"
""")
program("algo_interval_merge", """
    def merge(intervals):
        out = []
        for start, end in sorted(intervals):
            if out and start <= out[-1][1]:
                out[-1][1] = max(out[-1][1], end)
            else:
                out.append([start, end])
        return out
""", """
    assert merge([(1, 3), (2, 6), (8, 10), (15, 18), (17, 20)]) == [[1, 6], [8, 10], [15, 20]]
""")
program("algo_lru_cache_class", """
    from collections import OrderedDict
    class LRU:
        def __init__(self, capacity):
            self.capacity, self.data = capacity, OrderedDict()
        def get(self, key):
            if key not in self.data:
                return -1
            self.data.move_to_end(key)
            return self.data[key]
        def put(self, key, value):
            self.data[key] = value
            self.data.move_to_end(key)
            if len(self.data) > self.capacity:
                self.data.popitem(last=False)
""", """
    c = LRU(2)
    c.put(1, 1)
    c.put(2, 2)
    assert c.get(1) == 1
    c.put(3, 3)
    assert [c.get(2), c.get(3)] == [-1, 3]
""")
program("algo_knapsack", """
    def knapsack(items, capacity):
        best = [0] * (capacity + 1)
        for weight, value in items:
            for c in range(capacity, weight - 1, -1):
                best[c] = max(best[c], best[c - weight] + value)
        return best[capacity]
""", """
    assert knapsack([(1, 1), (3, 4), (4, 5), (5, 7)], 7) == 9
""")
program("algo_sudoku_check", """
    def valid(board):
        def ok(group):
            digits = [d for d in group if d != "."]
            return len(digits) == len(set(digits))
        rows = board
        cols = ["".join(r[i] for r in board) for i in range(9)]
        boxes = ["".join(board[r][c] for r in range(br, br + 3) for c in range(bc, bc + 3))
                 for br in (0, 3, 6) for bc in (0, 3, 6)]
        return all(map(ok, rows + cols + boxes))
""", """
    board = ["53..7....", "6..195...", ".98....6.", "8...6...3", "4..8.3..1", "7...2...6", ".6....28.", "...419..5", "....8..79"]
    assert valid(board)
    assert not valid(["55......."] + ["........."] * 8)
""")
program("algo_string_processing", """
    def is_palindrome(s):
        cleaned = [c.lower() for c in s if c.isalnum()]
        return cleaned == cleaned[::-1]
    def anagram_groups(words):
        groups = {}
        for w in words:
            groups.setdefault("".join(sorted(w)), []).append(w)
        return sorted(sorted(g) for g in groups.values())
""", """
    assert is_palindrome("A man, a plan, a canal: Panama") and not is_palindrome("abc")
    assert anagram_groups(["eat", "tea", "tan", "ate", "nat", "bat"]) == [["ate", "eat", "tea"], ["bat"], ["nat", "tan"]]
""")
program("algo_prime_factors", """
    def factors(n):
        out, d = [], 2
        while d * d <= n:
            while n % d == 0:
                out.append(d)
                n //= d
            d += 1
        if n > 1:
            out.append(n)
        return out
""", """
    assert factors(360) == [2, 2, 2, 3, 3, 5] and factors(97) == [97]
""")
program("algo_game_of_life", """
    def step(live):
        from collections import Counter
        counts = Counter((x + dx, y + dy) for x, y in live for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy)
        return {cell for cell, n in counts.items() if n == 3 or (n == 2 and cell in live)}
""", """
    blinker = {(0, 1), (1, 1), (2, 1)}
    assert step(blinker) == {(1, 0), (1, 1), (1, 2)} and step(step(blinker)) == blinker
""")
program("algo_bank_account_class", """
    class InsufficientFunds(Exception):
        pass
    class Account:
        def __init__(self, owner, balance=0):
            self.owner, self._balance, self.history = owner, balance, []
        @property
        def balance(self):
            return self._balance
        def deposit(self, amount):
            if amount <= 0:
                raise ValueError("amount must be positive")
            self._balance += amount
            self.history.append(("deposit", amount))
        def withdraw(self, amount):
            if amount > self._balance:
                raise InsufficientFunds(f"{self.owner} has {self._balance}")
            self._balance -= amount
            self.history.append(("withdraw", amount))
""", """
    a = Account("kim", 10)
    a.deposit(5)
    a.withdraw(3)
    assert a.balance == 12 and a.history == [("deposit", 5), ("withdraw", 3)]
    try:
        a.withdraw(100)
        assert False
    except InsufficientFunds as e:
        assert str(e) == "kim has 12"
""")
program("algo_event_system", """
    from collections import defaultdict
    class Emitter:
        def __init__(self):
            self.handlers = defaultdict(list)
        def on(self, event):
            def register(func):
                self.handlers[event].append(func)
                return func
            return register
        def emit(self, event, *args):
            return [h(*args) for h in self.handlers[event]]
    bus = Emitter()
    @bus.on("greet")
    def hello(name):
        return "hello " + name
    @bus.on("greet")
    def bye(name):
        return "bye " + name
""", """
    assert bus.emit("greet", "ann") == ["hello ann", "bye ann"] and bus.emit("none") == []
""")
program("algo_state_machine_enum", """
    from enum import Enum
    class State(Enum):
        IDLE = "idle"
        RUNNING = "running"
        DONE = "done"
    TRANSITIONS = {(State.IDLE, "start"): State.RUNNING, (State.RUNNING, "finish"): State.DONE}
    def run(events):
        state = State.IDLE
        for e in events:
            state = TRANSITIONS.get((state, e), state)
        return state.value
""", """
    assert run(["start", "finish"]) == "done" and run(["finish"]) == "idle"
""")
program("algo_expression_evaluator", """
    import ast, operator
    OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.USub: operator.neg, ast.Pow: operator.pow}
    def evaluate(expr):
        def ev(node):
            if isinstance(node, ast.Expression):
                return ev(node.body)
            if isinstance(node, ast.Constant):
                return node.value
            if isinstance(node, ast.BinOp):
                return OPS[type(node.op)](ev(node.left), ev(node.right))
            if isinstance(node, ast.UnaryOp):
                return OPS[type(node.op)](ev(node.operand))
            raise ValueError(ast.dump(node))
        return ev(ast.parse(expr, mode="eval"))
""", """
    assert evaluate("2 + 3 * (4 - 1) ** 2") == 29 and evaluate("-8 / 2") == -4.0
""")
program("algo_tokenizer_generator", """
    import re
    TOKEN = re.compile(r"\\s*(?:(\\d+\\.?\\d*)|(\\w+)|(.))")
    def tokens(text):
        for number, name, op in TOKEN.findall(text):
            if number:
                yield ("num", float(number) if "." in number else int(number))
            elif name:
                yield ("name", name)
            elif op.strip():
                yield ("op", op)
""", """
    assert list(tokens("x = 3.5 + y1*2")) == [("name", "x"), ("op", "="), ("num", 3.5), ("op", "+"), ("name", "y1"), ("op", "*"), ("num", 2)]
""")
program("algo_matrix_class_dunders", """
    class Matrix:
        def __init__(self, rows):
            self.rows = [list(r) for r in rows]
        def __matmul__(self, other):
            return Matrix([[sum(a * b for a, b in zip(r, c)) for c in zip(*other.rows)] for r in self.rows])
        def __pow__(self, n):
            result = Matrix([[int(i == j) for j in range(len(self.rows))] for i in range(len(self.rows))])
            base = self
            while n:
                if n & 1:
                    result = result @ base
                base = base @ base
                n >>= 1
            return result
    def fib(n):
        return (Matrix([[1, 1], [1, 0]]) ** n).rows[0][1]
""", """
    assert [fib(i) for i in range(10)] == [0, 1, 1, 2, 3, 5, 8, 13, 21, 34] and fib(100) == 354224848179261915075
""")
program("algo_polynomial_class", """
    class Poly:
        def __init__(self, *coeffs):
            self.c = list(coeffs)
        def __call__(self, x):
            return sum(a * x ** i for i, a in enumerate(self.c))
        def __add__(self, other):
            n = max(len(self.c), len(other.c))
            return Poly(*[(self.c[i] if i < len(self.c) else 0) + (other.c[i] if i < len(other.c) else 0) for i in range(n)])
        def derivative(self):
            return Poly(*[i * a for i, a in enumerate(self.c)][1:])
        def __str__(self):
            return " + ".join(f"{a}x^{i}" for i, a in enumerate(self.c) if a)
""", """
    p = Poly(1, 2, 3)
    assert p(2) == 17 and (p + Poly(1)).c == [2, 2, 3] and p.derivative().c == [2, 6]
    assert str(p) == "1x^0 + 2x^1 + 3x^2"
""")
program("algo_generator_coroutine_pipeline", """
    def coroutine(func):
        def start(*args):
            g = func(*args)
            next(g)
            return g
        return start
    @coroutine
    def grep(pattern, target):
        while True:
            line = yield
            if pattern in line:
                target.send(line)
    @coroutine
    def sink(out):
        while True:
            out.append((yield))
    def run(lines):
        out = []
        g = grep("py", sink(out))
        for l in lines:
            g.send(l)
        return out
""", """
    assert run(["python", "java", "pypy"]) == ["python", "pypy"]
""")
program("algo_iterator_protocol_class", """
    class Fib:
        def __init__(self, limit):
            self.limit = limit
        def __iter__(self):
            a, b = 0, 1
            while a < self.limit:
                yield a
                a, b = b, a + b
""", """
    f = Fib(20)
    assert list(f) == [0, 1, 1, 2, 3, 5, 8, 13] and sum(f) == 33 and max(f) == 13
""")
program("algo_sorting_keys", """
    def sort_records(records):
        return sorted(records, key=lambda r: (-r["score"], r["name"]))
    def stable(pairs):
        return sorted(pairs, key=lambda p: p[0])
""", """
    recs = [{"name": "b", "score": 2}, {"name": "a", "score": 2}, {"name": "c", "score": 5}]
    assert [r["name"] for r in sort_records(recs)] == ["c", "a", "b"]
    assert stable([(1, "x"), (0, "y"), (1, "a")]) == [(0, "y"), (1, "x"), (1, "a")]
""")
program("humaneval_style_check_function", """
    from typing import List
    def below_zero(operations: List[int]) -> bool:
        balance = 0
        for op in operations:
            balance += op
            if balance < 0:
                return True
        return False
""", """
    def check(candidate):
        assert candidate([]) is False
        assert candidate([1, 2, -4, 5]) is True
        assert candidate([1, -1, 2, -2]) is False
    check(below_zero)
""")
program("lambda_sorted_map_filter_reduce", """
    from functools import reduce
    def pipeline(xs):
        evens = filter(lambda x: x % 2 == 0, xs)
        doubled = map(lambda x: x * 2, evens)
        return reduce(lambda a, b: a + b, doubled, 0)
""", """
    assert pipeline(range(10)) == 40
""")
program("unpacking_star_expressions", """
    def split(xs):
        first, *middle, last = xs
        merged = {**{"a": 1}, **{"b": 2}, "c": 3}
        return first, middle, last, [*xs[:2], *"ab"], merged
""", """
    assert split([1, 2, 3, 4]) == (1, [2, 3], 4, [1, 2, "a", "b"], {"a": 1, "b": 2, "c": 3})
""")
program("bytes_and_encodings", """
    def codec(text):
        data = text.encode("utf-8")
        return len(text), len(data), data.decode("utf-8") == text, text.encode("ascii", "replace"), bytes.fromhex("ff00").hex()
""", """
    assert codec("naïve") == (5, 6, True, b"na?ve", "ff00")
""")
program("sets_and_frozensets", """
    def relations(a, b):
        a, b = set(a), frozenset(b)
        return a | b, a & b, a - b, a ^ b, a <= (a | b), {frozenset({1}): "ok"}[frozenset([1])]
""", """
    assert relations([1, 2, 3], [3, 4]) == ({1, 2, 3, 4}, {3}, {1, 2}, {1, 2, 4}, True, "ok")
""")
program("dict_ordering_views", """
    def ops():
        d = {"b": 1, "a": 2}
        d["c"] = 3
        d |= {"d": 4}
        keys = list(d)
        d.pop("b")
        return keys, list(d.items())[:1], dict.fromkeys("xy", 0), d.get("zz", "default"), d.setdefault("e", 5)
""", """
    assert ops() == (["b", "a", "c", "d"], [("a", 2)], {"x": 0, "y": 0}, "default", 5)
""")
program("while_else_for_else", """
    def find(xs, target):
        for i, x in enumerate(xs):
            if x == target:
                break
        else:
            return -1
        return i
    def countdown(n):
        out = []
        while n > 0:
            out.append(n)
            n -= 1
        else:
            out.append("liftoff")
        return out
""", """
    assert find([1, 2, 3], 2) == 1 and find([1], 5) == -1
    assert countdown(2) == [2, 1, "liftoff"]
""")
program("conditional_expressions_chained_comparisons", """
    def clamp(x, lo, hi):
        return lo if x < lo else hi if x > hi else x
    def in_range(x):
        return 0 < x <= 10 != x
""", """
    assert [clamp(v, 0, 5) for v in (-1, 3, 9)] == [0, 3, 5]
    assert [in_range(v) for v in (0, 5, 10)] == [False, True, False]
""")
program("class_variables_vs_instance", """
    class Counter:
        instances = 0
        def __init__(self):
            Counter.instances += 1
            self.id = Counter.instances
    def make(n):
        return [Counter().id for _ in range(n)], Counter.instances
""", """
    assert make(3) == ([1, 2, 3], 3)
""")
program("abstract_property_and_classmethod", """
    from abc import ABC, abstractmethod
    class Animal(ABC):
        @property
        @abstractmethod
        def sound(self): ...
        @classmethod
        def create(cls):
            return cls()
        def speak(self):
            return f"{type(self).__name__.lower()} says {self.sound}"
    class Cow(Animal):
        @property
        def sound(self):
            return "moo"
""", """
    assert Cow.create().speak() == "cow says moo"
""")
program("object_identity_and_copy_protocols", """
    import copy
    class Conf:
        def __init__(self, items):
            self.items = items
        def __copy__(self):
            return Conf(self.items)
        def __deepcopy__(self, memo):
            return Conf(copy.deepcopy(self.items, memo))
    def copies():
        c = Conf([1])
        shallow, deep = copy.copy(c), copy.deepcopy(c)
        return shallow.items is c.items, deep.items is c.items, deep.items == c.items
""", """
    assert copies() == (True, False, True)
""")
program("reprlib_pprint_output", """
    import pprint, reprlib
    def show(data):
        return pprint.pformat(data, width=20), reprlib.repr(list(range(100)))
""", """
    assert show({"b": [1, 2], "a": "x" * 5}) == ("{'a': 'xxxxx',\\n 'b': [1, 2]}", "[0, 1, 2, 3, 4, 5, ...]")
""")
program("html_xml_parsing", """
    import html
    import xml.etree.ElementTree as ET
    def parse(xml_text):
        root = ET.fromstring(xml_text)
        return [(item.get("id"), item.text) for item in root.iter("item")], html.escape("<a & b>")
""", """
    assert parse('<r><item id="1">x</item><item id="2">y</item></r>') == ([("1", "x"), ("2", "y")], "&lt;a &amp; b&gt;")
""")
program("urllib_parse_offline", """
    from urllib.parse import urlparse, urlencode, parse_qs, quote, urljoin
    def parts(url):
        u = urlparse(url)
        return u.scheme, u.netloc, u.path, parse_qs(u.query), quote("a b/c"), urljoin(url, "../x")
""", """
    assert parts("https://ex.com/a/b?q=1&q=2") == ("https", "ex.com", "/a/b", {"q": ["1", "2"]}, "a%20b/c", "https://ex.com/x")
""")
program("email_and_mimetypes", """
    from email.message import EmailMessage
    import mimetypes
    def build():
        msg = EmailMessage()
        msg["Subject"] = "hi"
        msg["To"] = "a@example.com"
        msg.set_content("body")
        return msg["Subject"], msg.get_content().strip(), mimetypes.guess_type("x.json")[0]
""", """
    assert build() == ("hi", "body", "application/json")
""")
program("dataclass_in_sets_and_sorting", """
    from dataclasses import dataclass, field
    @dataclass(frozen=True, order=True)
    class Card:
        rank: int
        suit: str = field(compare=False)
    def hand(cards):
        return [f"{c.rank}{c.suit}" for c in sorted(set(Card(*c) for c in cards))]
""", """
    assert hand([(10, "h"), (2, "s"), (10, "h")]) == ["2s", "10h"]
""")
program("enum_in_match", """
    from enum import Enum
    class Op(Enum):
        ADD = "+"
        MUL = "*"
    def apply(op, a, b):
        match Op(op):
            case Op.ADD:
                return a + b
            case Op.MUL:
                return a * b
""", """
    assert apply("+", 2, 3) == 5 and apply("*", 2, 3) == 6
""")
program("generic_container_with_protocols", """
    from typing import TypeVar, Generic, Callable
    K = TypeVar("K")
    V = TypeVar("V")
    class DefaultMap(Generic[K, V]):
        def __init__(self, factory: Callable[[], V]):
            self._data: dict = {}
            self._factory = factory
        def __getitem__(self, key: K) -> V:
            if key not in self._data:
                self._data[key] = self._factory()
            return self._data[key]
        def __len__(self):
            return len(self._data)
        def __iter__(self):
            return iter(self._data)
""", """
    m = DefaultMap(list)
    m["a"].append(1)
    m["b"]
    assert len(m) == 2 and sorted(m) == ["a", "b"] and m["a"] == [1]
""")
program("async_generator_with_asend", """
    import asyncio
    async def echo():
        received = None
        while True:
            received = yield received
    async def main():
        g = echo()
        await g.asend(None)
        out = [await g.asend(i) for i in range(3)]
        await g.aclose()
        return out
""", """
    import asyncio
    assert asyncio.run(main()) == [0, 1, 2]
""")
program("asyncio_semaphore_as_completed", """
    import asyncio
    async def job(i, sem, active, peak):
        async with sem:
            active.append(i)
            peak[0] = max(peak[0], len(active))
            await asyncio.sleep(0.001 * (3 - i % 3))
            active.remove(i)
            return i
    async def main():
        sem, active, peak = asyncio.Semaphore(2), [], [0]
        results = [await f for f in asyncio.as_completed([job(i, sem, active, peak) for i in range(6)])]
        return sorted(results), peak[0]
""", """
    import asyncio
    assert asyncio.run(main()) == ([0, 1, 2, 3, 4, 5], 2)
""")

# -- threads (processes stay refused: one run is one process) ----------------------------------------
program("threading_thread_join", """
    import threading
    def parallel_sum(chunks):
        results = [0] * len(chunks)
        def work(i):
            results[i] = sum(chunks[i])
        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(chunks))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return sum(results)
""", """
    assert parallel_sum([range(10), range(100), [5]]) == 45 + 4950 + 5
""")
program("threading_lock_counter", """
    import threading
    class Counter:
        def __init__(self):
            self.value = 0
            self.lock = threading.Lock()
        def add(self, n):
            for _ in range(n):
                with self.lock:
                    self.value += 1
    def count(threads, each):
        c = Counter()
        workers = [threading.Thread(target=c.add, args=(each,)) for _ in range(threads)]
        [w.start() for w in workers]
        [w.join() for w in workers]
        return c.value
""", """
    assert count(4, 1000) == 4000
""")
program("concurrent_futures_thread_pool", """
    from concurrent.futures import ThreadPoolExecutor, as_completed
    def squares(n):
        with ThreadPoolExecutor(max_workers=4) as pool:
            mapped = list(pool.map(lambda x: x * x, range(n)))
            futures = [pool.submit(pow, 2, i) for i in range(5)]
            powers = sorted(f.result() for f in as_completed(futures))
        return mapped, powers
""", """
    assert squares(5) == ([0, 1, 4, 9, 16], [1, 2, 4, 8, 16])
""")
program("threading_queue_workers", """
    import threading, queue
    def pipeline(items):
        tasks, results = queue.Queue(), queue.Queue()
        def worker():
            while (item := tasks.get()) is not None:
                results.put(item.upper())
        threads = [threading.Thread(target=worker) for _ in range(3)]
        for t in threads:
            t.start()
        for item in items:
            tasks.put(item)
        for _ in threads:
            tasks.put(None)
        for t in threads:
            t.join()
        return sorted(results.get() for _ in items)
""", """
    assert pipeline(["b", "a", "c"]) == ["A", "B", "C"]
""")
program("threading_event_condition_local", """
    import threading
    def handshake():
        ready, cond, local, seen = threading.Event(), threading.Condition(), threading.local(), []
        def waiter():
            local.name = "waiter"
            ready.wait(timeout=5)
            with cond:
                seen.append(local.name)
                cond.notify()
        t = threading.Thread(target=waiter)
        with cond:
            t.start()
            ready.set()
            cond.wait(timeout=5)
        t.join()
        return seen, hasattr(local, "name")
""", """
    assert handshake() == (["waiter"], False)
""")
program("asyncio_to_thread_executor", """
    import asyncio, time
    def blocking(x):
        time.sleep(0.01)
        return x * 2
    async def main():
        a = await asyncio.to_thread(blocking, 1)
        b = await asyncio.get_running_loop().run_in_executor(None, blocking, 2)
        return a, b
""", """
    import asyncio
    assert asyncio.run(main()) == (2, 4)
""")
program("threading_timer_and_barrier", """
    import threading
    def rendezvous(n):
        barrier, order = threading.Barrier(n), []
        def party(i):
            barrier.wait(timeout=5)
            order.append(i)
        threads = [threading.Thread(target=party, args=(i,)) for i in range(n)]
        [t.start() for t in threads]
        [t.join() for t in threads]
        fired = threading.Event()
        timer = threading.Timer(0.01, fired.set)
        timer.start()
        timer.join()
        return sorted(order), fired.is_set()
""", """
    assert rendezvous(3) == ([0, 1, 2], True)
""")

# -- test code that uses the same machinery --------------------------------------------------------
program("tests_define_dataclasses_and_enums", """
    def apply_all(ops, start):
        value = start
        for op in ops:
            value = op.apply(value)
        return value
""", """
    from dataclasses import dataclass
    from enum import Enum
    class Kind(Enum):
        ADD = 1
        MUL = 2
    @dataclass
    class Op:
        kind: Kind
        arg: int
        def apply(self, v):
            return v + self.arg if self.kind is Kind.ADD else v * self.arg
    assert apply_all([Op(Kind.ADD, 2), Op(Kind.MUL, 5)], 1) == 15
""")

# -- values equal by Python's rules across types (the plain-data rule must accept them) ----------
program("equal_fraction_and_float", """
    from fractions import Fraction
    def half(n):
        return Fraction(n, 2 * n)
""", """
    from fractions import Fraction
    assert half(3) == 0.5
    assert half(3) == Fraction(1, 2)
    assert 0.5 == half(7) and half(1) != 0.25 and half(2) < 1
""")
program("equal_decimal_and_int", """
    from decimal import Decimal
    def total(prices):
        return sum((Decimal(p) for p in prices), Decimal("0"))
""", """
    from decimal import Decimal
    assert total(["2.5", "2.5"]) == 5
    assert total(["0.1", "0.2"]) == Decimal("0.3")
    assert total([]) == 0
""")
program("equal_namedtuple_and_tuple", """
    from collections import namedtuple
    from typing import NamedTuple
    Point = namedtuple("Point", "x y")
    class Size(NamedTuple):
        w: int
        h: int
    def corner(w, h):
        return Point(w, h)
    def size(w, h):
        return Size(w, h)
""", """
    assert corner(1, 2) == (1, 2)
    assert size(3, 4) == (3, 4)
    assert [corner(0, 0)] == [(0, 0)]
    assert (1, 2) in [corner(1, 2)]
""")
program("equal_ordereddict_and_dict", """
    from collections import OrderedDict, Counter, defaultdict
    def ordered(pairs):
        return OrderedDict(pairs)
    def tally(words):
        return Counter(words)
    def groups(words):
        out = defaultdict(list)
        for w in words:
            out[len(w)].append(w)
        return out
""", """
    assert ordered([("b", 1), ("a", 2)]) == {"a": 2, "b": 1}
    assert tally("abca") == {"a": 2, "b": 1, "c": 1}
    assert groups(["a", "bb", "c"]) == {1: ["a", "c"], 2: ["bb"]}
""")
program("equal_numeric_subclasses", """
    from enum import IntEnum, IntFlag
    class Level(IntEnum):
        LOW = 1
        HIGH = 2
    class Perm(IntFlag):
        R = 4
        W = 2
    class Meters(int):
        def __new__(cls, value):
            return super().__new__(cls, round(value))
        def __repr__(self):
            return f"{int(self)} m"
    class Ratio(float):
        pass
    def level(x):
        return Level.HIGH if x > 10 else Level.LOW
    def perms():
        return Perm.R | Perm.W
    def distance(x):
        return Meters(x)
    def ratio(a, b):
        return Ratio(a / b)
    def is_even(n):
        return n % 2 == 0
""", """
    assert level(20) == 2 and level(1) == 1 and level(1) < level(20)
    assert perms() == 6
    assert distance(4.6) == 5 and repr(distance(4.6)) == "5 m"
    assert ratio(1, 4) == 0.25
    assert is_even(2) == 1 and is_even(3) == 0 and True == is_even(4)
    assert sum([is_even(2), is_even(4)]) == 2
""")
program("equal_library_values", """
    import uuid, ipaddress, pathlib, types, array
    from collections import UserList, UserDict, UserString, ChainMap
    def ident(name):
        return uuid.uuid5(uuid.NAMESPACE_DNS, name)
    def address(text):
        return ipaddress.ip_address(text)
    def path(*parts):
        return pathlib.PurePosixPath(*parts)
    def record(**fields):
        return types.SimpleNamespace(**fields)
    def numbers(n):
        return array.array("i", range(n))
    def wrapped(items):
        return UserList(items), UserDict(dict(items)), UserString("".join(k for k, _ in items))
    def layered():
        return ChainMap({"a": 1}, {"b": 2})
    def keys(d):
        return d.keys()
""", """
    import uuid, ipaddress, pathlib, types, array
    assert ident("example.org") == uuid.uuid5(uuid.NAMESPACE_DNS, "example.org")
    assert address("10.0.0.1") == ipaddress.IPv4Address("10.0.0.1")
    assert address("10.0.0.1") < address("10.0.0.2")
    assert path("a", "b") == pathlib.PurePosixPath("a/b")
    assert record(x=1) == types.SimpleNamespace(x=1)
    assert numbers(3) == array.array("i", [0, 1, 2])
    ul, ud, us = wrapped([("a", 1), ("b", 2)])
    assert ul == [("a", 1), ("b", 2)] and ud == {"a": 1, "b": 2} and us == "ab"
    assert layered() == {"a": 1, "b": 2}
    assert keys({"x": 1, "y": 2}) == {"x", "y"}
    assert {"x": 1}.items() == {("x", 1)}
""")
program("identity_compared_library_objects", """
    import functools, uuid, http
    SENTINEL = object()
    def lookup(d, k):
        return d.get(k, SENTINEL)
    def safety(u):
        return u.is_safe
    def status(code):
        return http.HTTPStatus(code)
    def adder(n):
        return functools.partial(lambda a, b: a + b, n)
""", """
    import uuid
    assert lookup({}, 1) == SENTINEL and lookup({1: 2}, 1) == 2
    assert safety(uuid.UUID(int=5)) == uuid.SafeUUID.unknown
    assert status(404) == 404 and status(200) in (200, 201)
    f = adder(2)
    assert f(3) == 5 and [f] == [f]
""")
