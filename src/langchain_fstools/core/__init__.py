"""The lowest layer: virtual paths, backend calls as data, globs, tokens, records.

Imports only the standard library and `langchain_fstools.errors`.
"""
