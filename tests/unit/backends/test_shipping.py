"""What `backends.shipping` sends another host's Python: our errors as their skeleton."""

from __future__ import annotations

import ast
import dataclasses
import inspect
from typing import Any

import pytest

from langchain_fstools import errors
from langchain_fstools.backends import shipping
from langchain_fstools.backends.sandbox.transport import PROGRAM

ERRORS_SOURCE = inspect.getsource(errors)

ERROR_CLASSES = [
    cls
    for cls in vars(errors).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and issubclass(cls, Exception)
]


def shipped_errors() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    exec(compile(shipping.skeleton(ERRORS_SOURCE), "<skeleton>", "exec"), namespace)  # noqa: S102 - our own source
    return namespace


def test_the_program_ships_the_errors_as_a_skeleton_that_imports_nothing() -> None:
    shipped = shipping.program(PROGRAM).sources["langchain_fstools.errors"]
    assert shipped == shipping.skeleton(ERRORS_SOURCE)
    tree = ast.walk(ast.parse(shipped))
    assert not [node for node in tree if isinstance(node, ast.Import | ast.ImportFrom)]
    assert "dataclass" not in shipped


@pytest.mark.parametrize("cls", ERROR_CLASSES, ids=lambda cls: cls.__name__)
def test_a_shipped_error_carries_the_fields_the_real_one_is_rebuilt_from(cls: type) -> None:
    """Built as the sandbox builds it (positionally), its `vars` rebuild the real error."""
    required = [
        f.name
        for f in dataclasses.fields(cls)
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]
    values = [f"value of {name}" for name in required]
    skeleton = shipped_errors()
    shipped = skeleton[cls.__name__](*values)
    assert cls(**vars(shipped)) == cls(*values)
    assert isinstance(shipped, skeleton["FsToolsError"])


def test_a_shipped_error_takes_keywords_and_defaults_as_its_dataclass_does() -> None:
    shipped = shipped_errors()["StoreUnavailable"]("sandbox", lasting=True)
    assert vars(shipped) == vars(errors.StoreUnavailable("sandbox", lasting=True))
    with pytest.raises(TypeError):
        shipped_errors()["StoreUnavailable"]()
    with pytest.raises(TypeError):
        shipped_errors()["OutsideRoot"]("/a", surplus=1)


def test_a_skeleton_keeps_bases_and_inherited_fields_in_dataclass_order() -> None:
    source = """
from dataclasses import dataclass

class Base(Exception):
    def method(self) -> None: ...

@dataclass(eq=False)
class Outer(Base):
    first: int
    second: str = "two"

@dataclass(eq=False)
class Inner(Outer, ValueError):
    third: int = 3
"""
    namespace: dict[str, Any] = {}
    exec(compile(shipping.skeleton(source), "<skeleton>", "exec"), namespace)  # noqa: S102 - the source above
    inner = namespace["Inner"](1, third=4)
    assert vars(inner) == {"first": 1, "second": "two", "third": 4}
    assert isinstance(inner, namespace["Base"])
    assert isinstance(inner, ValueError)
    assert not hasattr(inner, "method")
