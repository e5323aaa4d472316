"""Shared test configuration. Unit tests run with sockets disabled (see pyproject)."""
