"""Timing of the RTL: the critical register-to-register stage in FO4 delays.

- ``sta``: Yosys maps the design to a Liberty library and OpenSTA times it (the default path);
  the library's FO4, the stage moved to a node and voltage.
- ``buffer``: balanced buffer trees on flip-flop and input nets before timing (ABC buffers only
  inside the logic).
- ``effort``: the fallback without OpenSTA or a library: the generic netlist timed by logical effort.
"""
