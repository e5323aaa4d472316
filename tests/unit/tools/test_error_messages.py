"""Every error the package raises renders its own message: what went wrong, what to do."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from typing import Any

import pytest

from langchain_fstools import errors
from langchain_fstools.formats import syntax
from langchain_fstools.tools.render import render_error

PARTIAL_ONLY = {errors.PartialWrite}
"""Raised between a backend and the tools, never to the model (the tools undo or re-raise)."""

SENTENCES = {"missing": "StoreBackend needs a graph runtime; run the tool inside a graph."}
"""Fields that hold a whole sentence the message repeats."""


def _error_types() -> list[type[errors.FsToolsError]]:
    found = {
        cls
        for module in (errors, syntax)
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, errors.FsToolsError) and cls is not errors.FsToolsError
    }
    return sorted(found - PARTIAL_ONLY, key=lambda cls: cls.__name__)


def _sample(annotation: Any) -> Any:  # noqa: PLR0911 - one return per kind of type
    """A plain value of the annotated type."""
    origin = typing.get_origin(annotation)
    if annotation is str:
        return "/src/app.py"
    if annotation is int or annotation is float:
        return 3
    if annotation is bool:
        return False
    if origin is tuple or annotation is tuple:
        return ()
    if origin in (list, dict):
        return origin()
    if isinstance(annotation, type) and issubclass(annotation, BaseException):
        return ValueError("cause")
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        return _sample(typing.get_args(annotation)[0])
    if origin is typing.Literal:
        return typing.get_args(annotation)[0]
    return None


def _instance(cls: type[errors.FsToolsError]) -> errors.FsToolsError:
    hints = typing.get_type_hints(cls, vars(errors) | vars(syntax))
    fields = {
        f.name: SENTENCES.get(f.name) or _sample(hints[f.name])
        for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.init
    }
    return cls(**fields)


@pytest.mark.parametrize("cls", _error_types(), ids=lambda cls: cls.__name__)
def test_every_error_type_renders_a_message_of_its_own(cls: type[errors.FsToolsError]) -> None:
    message = render_error(_instance(cls), tool="read_file")
    assert "failed unexpectedly" not in message
    # the error's own line (a timed-out command's output comes before it)
    sentence = next(line for line in message.splitlines() if line.startswith("Error: "))
    assert sentence.rstrip().endswith((".", "?", ":")), sentence


def test_the_error_types_are_all_found() -> None:
    names = {cls.__name__ for cls in _error_types()}
    assert {"MissingFile", "SandboxUnavailable", "SyntaxBroken", "StaleApproval"} <= names
    assert len(names) >= 35
