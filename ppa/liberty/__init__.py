"""Reading a Liberty library.

- ``parse``: the Liberty file format (groups, attributes, tables, units).
- ``library``: one library as one object (``LibertyLibrary``): header, cells, pins, tables, and the
  inverter, buffer and flip-flop queries timing and energy ask it; parsed once per file.
- ``mapped``: a netlist of the library's cells as Yosys writes it (module body, ports, instances).
- ``energy``: clock and flip-flop energy in the library's own toggle-equivalents, which ppa.model
  moves to a node the way ppa.timing moves FO4.
- ``gates``: each net of a generic gate netlist (ppa.netlist) at its energy as the default
  library's cells (osu018's figures, built in): the toggle-equivalents switching is costed in.
- ``switching``: a mapped netlist simulated at zero delay with each net's library energy.
- ``sizing``: how much more a netlist sized for minimum delay switches than one mapped for area
  (the sizing factor ppa.model applies to a PE on the STA path).
"""
