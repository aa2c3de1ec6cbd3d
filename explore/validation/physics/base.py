"""What the physics rows of ``sparsepe validate`` share: the anchor operating points, the Liberty
keywords applied to a design, the 1.5x agreement test a row's reason is chosen by, and the bounds of
a reference given as a range."""

from __future__ import annotations

from dataclasses import replace

from ppa import tech
from ppa.design import DesignPoint
from ppa.references import Reference

#: the operating points the operator anchors state: Horowitz's table is at 0.9 V (45 nm), Jouppi's
#: is taken at the 7 nm nominal 0.7 V (ppa.tech.JOUPPI_V)
ANCHOR_V = {45: tech.HOROWITZ_V, 7: tech.JOUPPI_V}


def with_liberty(design: DesignPoint, liberty: dict | None) -> DesignPoint:
    """``design`` timed with the Liberty file in ``liberty`` (``{"liberty": path, "liberty_node_nm": nm}``)."""
    return replace(design, **liberty) if liberty else design


def agrees(model: float, ref: float) -> bool:
    """The model lies within 1.5x of the reference."""
    return 1 / 1.5 <= model / ref <= 1.5


def bounds(ref: Reference) -> tuple[float, float]:
    """(low, high) of a reference given as a range."""
    if ref.low is None or ref.high is None:
        raise ValueError(f"not a range: {ref.source}")
    return ref.low, ref.high
