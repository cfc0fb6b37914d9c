"""``@plain`` (rook_core.plain) answers exactly what ``@dataclass`` does."""

from dataclasses import FrozenInstanceError, asdict, dataclass, field, replace

import pytest

from rook_core.plain import plain


def pair(**options):
    """The same class body under @dataclass and under @plain."""

    def body():
        class Item:
            name: str
            size: int = 0
            secret: str = field(default="", repr=False)
            note: str = field(default="", compare=False)
            tags: list = field(default_factory=list)

        return Item

    return dataclass(**options)(body()), plain(**options)(body())


@pytest.mark.parametrize("options", [{}, {"slots": True}])
def test_repr_equality_and_hash_match_a_dataclass(options):
    real, lean = pair(**options)
    for args in [("a",), ("a", 2, "s", "n", [1, "x"]), ("it's", -1)]:
        r, p = real(*args), lean(*args)
        assert repr(p) == repr(r)
        assert repr(p).startswith("pair.<locals>.body.<locals>.Item(name=")
        assert "secret" not in repr(p)
    assert lean("a", 1, note="x") == lean("a", 1, note="y")  # compare=False is left out
    assert lean("a", 1) != lean("a", 2)
    assert lean("a") != real("a")  # another class: NotImplemented both ways, so unequal
    assert lean("a").__eq__("a") is NotImplemented
    with pytest.raises(TypeError, match="unhashable"):
        hash(lean("a"))
    with pytest.raises(TypeError, match="unhashable"):
        hash(real("a"))
    assert asdict(lean("a", 3)) == asdict(real("a", 3))
    assert replace(lean("a"), size=5) == lean("a", 5)
    if options.get("slots"):
        assert not hasattr(lean("a"), "__dict__")


def test_a_recursive_value_and_a_class_s_own_methods():
    @plain
    class Node:
        children: list

        def __repr__(self):
            return "own"

    @plain
    class Tree:
        children: list

    t = Tree([])
    t.children.append(t)
    assert (
        repr(t) == "test_a_recursive_value_and_a_class_s_own_methods.<locals>.Tree(children=[...])"
    )
    assert repr(Node([])) == "own"


def test_frozen_and_explicit_choices_are_dataclass_itself():
    @plain(frozen=True)
    class Key:
        a: int

    assert hash(Key(1)) == hash(Key(1))
    with pytest.raises(FrozenInstanceError):
        Key(1).a = 2  # type: ignore[misc]

    @plain(eq=False)
    class Token:
        a: int

    assert Token(1) != Token(1)  # identity, as asked
    assert hash(Token(1)) is not None
