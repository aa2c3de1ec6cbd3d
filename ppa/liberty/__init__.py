"""Reading a Liberty library.

- ``parse``: the Liberty file format (groups, attributes, tables, units).
- ``energy``: clock and flip-flop energy in the library's own toggle-equivalents, which ppa.model
  moves to a node the way ppa.timing moves FO4.
"""
