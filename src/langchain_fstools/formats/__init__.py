"""Content handlers used by the tools: encodings, text windows, matching."""
