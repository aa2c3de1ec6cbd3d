"""The stored-study side of ``sparsepe diff`` (explore.diff): a run given as ``STORAGE#STUDY`` (a
journal file, ``sqlite:///...`` or ``postgresql://...``; a storage holding a single study may omit
``#STUDY``). Its chosen design (best feasible, else the closest) is re-evaluated with the study's
evaluator, per layer; the stored metrics of every design it evaluated come along. A module of its
own so that a diff of two JSON files does not load Optuna and the study reader."""

from __future__ import annotations

from pathlib import Path

import optuna

from explore.diff import Run, flatten
from explore.report.data import load_study_data
from explore.results import Evaluator
from explore.space import design_key
from explore.storage import open_storage, redact, resolve_storage
from hw.errors import InputError
from hw.host import printable

__all__ = ["load_study_run"]


def load_study_run(spec: str, label: str) -> Run:
    """The run of the stored study ``spec`` (``STORAGE#STUDY``), labelled ``label``."""
    storage, _, name = spec.partition("#")
    shown = printable(redact(storage) + (f"#{name}" if name else ""))
    if not storage:
        raise InputError(
            "no storage before '#': give STORAGE#STUDY, a best.json or a simulate --json file",
            where=f"{label} {shown}",
        )
    if not name:
        st = open_storage(resolve_storage(storage, Path(".")), create=False)
        names = [s.study_name for s in optuna.get_all_study_summaries(storage=st, include_best_trial=False)]
        if len(names) != 1:
            raise InputError(
                f"the storage holds {len(names)} studies ({', '.join(names) or 'none'}): name one as "
                "STORAGE#STUDY",
                where=label,
            )
        name = names[0]
    try:
        data = load_study_data(storage, name)
    except InputError as exc:
        msg = str(exc)
        for part in (f"{exc.where}: " if exc.where else "", f"{redact(storage)}: ", f"{storage}: "):
            msg = msg.removeprefix(part)  # the storage is named once, masked
        raise InputError(msg, where=f"{label} {shown}") from None
    rec = data.best.get("best") if data.best.get("feasible") else data.best.get("closest")
    if rec is None:
        raise InputError("the study has no finished trial", where=f"{label} {shown}")
    ev = Evaluator(data.evaluator, data.cfg)
    det = ev.detail(rec["params"])
    layers = []
    for _, _, net in det.networks:  # workloads by the cycle model's name, with their parameters
        lay = net.layers
        for i, n in enumerate(net.names):
            layers.append(
                {
                    "workload": net.workload,
                    "layer": n,
                    "count": int(net.counts[i]),
                    "cycles": int(lay["cycles"][i]) + 1,
                    "stall_cycles": int(lay["stall_cycles"][i]),
                    "utilization": float(lay["utilization"][i]),
                    "sparse": bool(lay["sparse"][i]),
                    "dram_bytes": float(lay["dram_bytes"][i]),
                }
            )
    m = dict(det.metrics)
    m["total_cycles"] = sum(float(net.totals["total_cycles"]) * w for _, w, net in det.networks)
    m["fallback_fraction"] = max(float(net.totals["fallback_fraction"]) for _, _, net in det.networks)
    cfgj = {k: v for k, v in data.config_json.items()}
    tags = {
        "config_fingerprint": data.fingerprint,
        "evaluator": data.evaluator,
        "sweep": data.sweep,
        "tools": data.user_attrs.get("tools") or {},
    }
    designs = {design_key(r["params"]): r["metrics"] for r in data.records}
    return Run(
        f"{label}: {printable(redact(storage))}#{printable(name)}",
        "study",
        dict(rec["params"]),
        m,
        layers,
        [n.workload for _, _, n in det.networks],
        config=flatten(cfgj),
        tags=flatten(tags),
        designs=designs,
    )
