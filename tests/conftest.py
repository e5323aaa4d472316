"""Shared test configuration. Unit tests run with sockets disabled (see pyproject)."""

import pytest

# conformance.py is a library of test classes, not a test module: rewrite its asserts
# so failures show the values compared.
pytest.register_assert_rewrite("tests.unit.backends.conformance")
