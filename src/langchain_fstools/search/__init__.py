"""The pure-Python search engine: globs, ignore rules, walking and grepping any backend."""
