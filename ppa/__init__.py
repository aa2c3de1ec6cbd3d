"""What the hardware costs: synthesis with Yosys, gate-level switching activity, area, timing,
power, SRAM, DRAM, thermal and technology nodes. May import hw/, never sim/."""
