"""Timing of the RTL: the critical register-to-register stage in FO4 delays.

- ``mapping``: Yosys maps a design to a Liberty library (timing-driven when a clock is given).
- ``buffer``: balanced buffer trees on flip-flop and input nets before timing (ABC buffers only
  inside the logic).
- ``opensta``: OpenSTA's worst setup path of a mapped netlist, and the library's FO4.
- ``sta``: the flow (map, buffer, time) and its result cache (the default path).
- ``effort``: the fallback without OpenSTA or a library: the generic netlist timed by logical
  effort, scaled to STA.
- ``stage``: the stage ppa.model clocks (the design's own array column), which library times it,
  and its cycle time at a node and voltage.
"""
