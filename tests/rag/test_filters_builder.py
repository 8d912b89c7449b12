"""The Python filter builder and the tree's value semantics (equality, hashing, validation)."""

from __future__ import annotations

import copy
import pickle
from enum import StrEnum

import numpy as np
import pytest

from rag.errors import FilterError
from rag.filters import And, Comparison, Filter, Key, Not, Op, Or, key, negate, parse
from rag.filters.tree import operands


class Colour(StrEnum):
    RED = "red"


def test_each_builder_method_makes_its_comparison() -> None:
    k = key("a")
    assert (k == 1, k != 1, k < 1, k <= 1, k > 1, k >= 1) == tuple(
        Comparison("a", op, 1) for op in (Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE)
    )
    assert k.in_([1, "x"]) == Comparison("a", Op.IN, (1, "x"))
    assert k.not_in(v for v in (1, 2)) == Comparison("a", Op.NIN, (1, 2))
    assert k.contains("x") == Comparison("a", Op.CONTAINS, "x")
    assert k.not_contains("x") == Comparison("a", Op.NOT_CONTAINS, "x")
    assert k.is_null() == Comparison("a", Op.IS_NULL)
    assert k.is_not_null() == Comparison("a", Op.IS_NOT_NULL, None)
    assert Comparison("a", "NOT IN", [1]) == k.not_in([1])  # type: ignore[arg-type]
    assert repr(k) == "key('a')"


def test_connectives_build_binary_left_deep_nodes() -> None:
    a, b, c = key("a") == 1, key("b") == 2, key("c") == 3
    assert a & b & c == And(And(a, b), c)
    assert a | b | c == Or(Or(a, b), c)
    assert ~a == Not(a)
    assert a & b != Or(a, b)
    assert parse("a == 1 AND b == 2 AND c == 3") == (key("a") == 1) & (key("b") == 2) & (key("c") == 3)
    assert operands(a & b & c) == [a, b, c]
    assert operands(a & (b & c)) == [a, b & c]
    assert operands(a | b) == [a, b] and operands(a) == [a]


def test_booleans_are_not_numbers_but_ints_equal_floats() -> None:
    assert Comparison("a", "==", True) != Comparison("a", "==", 1)  # type: ignore[arg-type]
    assert Comparison("a", "==", False) != Comparison("a", "==", 0.0)  # type: ignore[arg-type]
    assert (key("a") == 2020) == (key("a") == 2020.0)
    assert hash(key("a") == 2020) == hash(key("a") == 2020.0)
    assert key("a").in_([1, True]) != key("a").in_([True, 1])
    assert key("a").in_([1, True]) == key("a").in_([1.0, True])
    assert len({key("a") == 1, key("a") == True, key("a") == 1.0}) == 2  # noqa: E712
    assert (key("a") == 1) != (key("b") == 1)
    assert (key("a") == 1) != (key("a") != 1)
    assert (key("a") == "1") != (key("a") == 1)


def test_equal_trees_hash_alike_and_work_as_dict_keys() -> None:
    left = parse("(a == 1 OR NOT b IN [1, 'x']) AND c IS NULL")
    right = ((key("a") == 1.0) | ~key("b").in_([1, "x"])) & key("c").is_null()
    assert left == right and hash(left) == hash(right)
    assert {left: "found"}[right] == "found"
    assert left != "a == 1" and left != None  # noqa: E711


def test_values_are_checked_and_normalised() -> None:
    for bad in (None, float("nan"), float("inf"), {"x": 1}, [1], b"x"):
        with pytest.raises(FilterError, match="filter value"):
            key("a") == bad  # noqa: B015
    with pytest.raises(FilterError, match="takes a list"):
        Comparison("a", Op.IN, "abc")
    with pytest.raises(FilterError, match="takes no value"):
        Comparison("a", Op.IS_NULL, 1)
    with pytest.raises(FilterError, match="must be a non-empty string"):
        key("") == 1  # noqa: B015
    with pytest.raises(FilterError, match="unknown filter operator '='"):
        Comparison("a", "=", 1)  # type: ignore[arg-type]
    for value, plain in ((np.float64(2.5), 2.5), (np.int64(7), 7), (Colour.RED, "red")):
        made = Comparison("a", Op.EQ, value)  # type: ignore[arg-type]
        assert type(made.value) is type(plain) and made.value == plain
        assert parse(str(made)) == made


def test_a_filter_has_no_truth_value() -> None:
    with pytest.raises(TypeError, match="no truth value"):
        bool(key("a") == 1)
    with pytest.raises(TypeError, match="expected a filter node"):
        (key("a") == 1) & "b == 2"  # type: ignore[operator]
    with pytest.raises(TypeError, match="expected a filter node"):
        And(key("a") == 1, "b == 2")  # type: ignore[arg-type]


def test_a_key_is_not_hashable() -> None:
    assert isinstance(key("a"), Key)
    with pytest.raises(TypeError):
        hash(key("a"))


def test_nodes_are_frozen_and_copy_and_pickle() -> None:
    tree = And(key("a") == 1, Not(key("b").in_(["x", 2.5])))
    with pytest.raises(AttributeError):
        tree.left = tree  # type: ignore[misc]
    assert tree == parse("a == 1 AND NOT b IN ['x', 2.5]")
    for clone in (pickle.loads(pickle.dumps(tree)), copy.deepcopy(tree), copy.copy(tree)):
        assert clone == tree and hash(clone) == hash(tree)


def test_repr_shows_the_structure() -> None:
    tree = (key("a") == 1) & ~key("b").in_(["x"])
    assert repr(tree) == "And(Comparison('a', '==', 1), Not(Comparison('b', 'IN', ('x',))))"


def test_negate_keeps_the_shape_of_long_chains() -> None:
    chain: Filter = key("k0") == 0
    expected: Filter = key("k0") != 0
    for i in range(1, 3000):
        chain = chain & (key(f"k{i}") == i)
        expected = expected | (key(f"k{i}") != i)
    assert negate(chain) == expected
    assert negate(Not(chain)) == chain
