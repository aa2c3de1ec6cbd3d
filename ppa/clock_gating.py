"""Clock gating of the weight-stationary weight registers: the gating cell's cost and the array's
clock in flip-flop clock-cycles.

hw.array loads the stationary weight, metadata and mode registers under ``w_load`` alone (no reset),
so synthesis maps them to enable flip-flops and a clock-gating pass to one gated clock per enable.
ppa.model clocks them only on load edges and charges each PE one integrated clock-gating cell
(:class:`ClockGating`), in units of one held flip-flop's clock energy per cycle, which it multiplies
by its per-flop clock energy (ppa.model.clock_energy_per_ff_cycle_pj).
"""

from __future__ import annotations

from dataclasses import dataclass

# [D] from the ASAP7 RVT TT 0.7 V Liberty tables (asap7sc7p5t_SEQ_RVT_TT_nldm_220123, the VDD
# internal_power groups, 20 ps clock slew; ../shared/reference/asap7, Clark et al. 2016):
#   a held DFFHQNx1 (D = Q): clock-pin internal energy 0.586 / 0.588 fJ per cycle (D = 1 / 0), plus its
#     clock pin 0.474 fF x 0.7^2 = 0.232 fJ switched: 0.819 fJ per cycle;
#   ICGx1 (clock_gating_integrated_cell latch_posedge_precontrol), gated (ENA = 0): CLK internal
#     0.169 fJ + CLK pin 2.139 fF x 0.7^2 = 1.048 fJ: 1.217 fJ per cycle, whatever it gates;
#   ICGx1 enabled: CLK internal 0.650 fJ + GCLK internal 0.544 fJ (7.6-15 fF load) + 1.048 fJ:
#     2.242 fJ per cycle; the flip-flops behind it are then clocked as ungated ones.
# In units of one held flip-flop's clock energy per cycle, which ppa.model multiplies by its per-flop
# clock energy (library tables or CLOCK_TOGGLES_PER_FF_CYCLE, with the flop's share of clock wiring
# and tree) [A: the ICG's clock pin loads the tree like 4.5 flop clock pins and takes the same
# wiring and tree share per unit of pin energy]. osu018 has no ICG cell: these ASAP7 ratios are used
# for every library [A]. Break-even: a group of 1.5 flip-flops held.
ICG_GATED_FF_CYCLES = (0.169 + 2.139 * 0.7**2) / ((0.586 + 0.588) / 2 + 0.474 * 0.7**2)
ICG_ENABLED_FF_CYCLES = (0.650 + 0.544 + 2.139 * 0.7**2) / ((0.586 + 0.588) / 2 + 0.474 * 0.7**2)
#: [A] one ICG per PE: one gated clock per enable net (Yosys's clockgate makes one per enable; clock
#: tree synthesis clones it to the PEs it reaches); the weight, metadata and mode bits of a PE share it
ICGS_PER_PE = 1


@dataclass(frozen=True)
class ClockGating:
    """Clock of an array per cycle, in flip-flop clock-cycles (units of one held flip-flop's clock
    energy per cycle, ``clock_energy_per_ff_cycle_pj``), with the stationary registers gated or not.

    Gated: the ``gated_bits`` weight / metadata / mode flip-flops are clocked only on the fraction
    ``load_fraction`` of cycles that load weights; each of the ``icgs`` gating cells costs
    ppa.ICG_GATED_FF_CYCLES on the other cycles and ICG_ENABLED_FF_CYCLES on those. Ungated
    (``enabled`` False): every flip-flop every cycle."""

    enabled: bool
    flip_flops: int
    gated_bits: int
    icgs: int
    load_fraction: float

    @property
    def ff_cycles(self) -> float:
        if not self.enabled or not self.gated_bits:
            return float(self.flip_flops)
        lam = self.load_fraction
        icg = self.icgs * (ICG_GATED_FF_CYCLES * (1 - lam) + ICG_ENABLED_FF_CYCLES * lam)
        return (self.flip_flops - self.gated_bits) + self.gated_bits * lam + icg

    def details(self) -> dict:
        return {
            "enabled": self.enabled,
            "gated_flip_flops": self.gated_bits if self.enabled else 0,
            "icgs": self.icgs if self.enabled else 0,
            "load_enable_fraction": self.load_fraction,
            "ff_clock_cycles_per_cycle": self.ff_cycles,
            "flip_flops": self.flip_flops,
            "icg_ff_cycles_gated": ICG_GATED_FF_CYCLES,
            "icg_ff_cycles_enabled": ICG_ENABLED_FF_CYCLES,
        }


def clock_gating(
    flip_flops: int, gated_bits: int, icgs: int, load_fraction: float, enabled: bool = True
) -> ClockGating:
    """:class:`ClockGating` of an array (``gated_bits`` at most ``flip_flops``)."""
    if not 0.0 <= load_fraction <= 1.0:
        raise ValueError(f"load fraction must be in [0, 1], got {load_fraction}")
    return ClockGating(
        bool(enabled), int(flip_flops), int(min(gated_bits, flip_flops)), int(icgs), float(load_fraction)
    )
