"""Whether a result's measured energy may be published (pure functions).

The client reports energy per output token for its serving points (``extra.joules_per_token``) with
the average power per GPU, the window it was read over and the board's power limit
(``gpuatlas_bench/energy.py``). The figure is published only when it can be defended:

* the window lasted at least ``MIN_ENERGY_WINDOW_S`` (5 s): a counter read over half a second
  catches whichever power plateau is current and the counter's own update steps;
* the average power of every GPU is at most the board's limit: the one the client read from the
  driver, and the catalogue's TDP as a cross-check (the lower of the two known). A board holds its
  average under its limit, so a reading above it is an artefact of the window or the counter;
* a limit is known at all, the client did not flag the figure itself (it checks each GPU of a
  tensor-parallel group against its own limit), and J/token times the tokens/s agrees with the
  power within ``CONSISTENCY_TOLERANCE`` (both come from the same window and timing).

A refused figure is not an error in the submission: the throughput is kept and ranked as usual;
the refusal is a note in the submission's report, and the serving point carries no energy.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MIN_ENERGY_WINDOW_S = 5.0
# J/token x tokens/s against power x GPUs: the timing and the window are seconds apart, and a
# board at its power limit may clock a little lower in the window than in the timing.
CONSISTENCY_TOLERANCE = 0.25


@dataclass(frozen=True)
class EnergyVerdict:
    """A result's energy figures, and why they are not published (empty: they are)."""

    joules_per_token: float | None
    power_w: float | None
    window_s: float | None
    samples: int | None
    source: str
    power_limit_w: float | None
    refusals: list[str] = field(default_factory=list)

    @property
    def published(self) -> bool:
        return not self.refusals


def _positive(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) and number > 0 else None


def board_limit(*, reported_w: Any, tdp_w: Any) -> tuple[float | None, str]:
    """The power a GPU's average must stay under, and what it is: the lower of the known two."""
    reported, tdp = _positive(reported_w), _positive(tdp_w)
    known = []
    if reported is not None:
        known.append((reported, f"the board's {reported:g} W limit"))
    if tdp is not None:
        known.append((tdp, f"the catalogue's {tdp:g} W TDP"))
    if not known:
        return None, ""
    return min(known, key=lambda item: item[0])


def energy_verdict(
    *, extra: Mapping[str, Any], tokens_per_s: float, gpu_count: int, reported_limit_w: Any, tdp_w: Any
) -> EnergyVerdict | None:
    """Judge the energy of one result (``extra`` as the client wrote it); None when it carries none.

    ``tokens_per_s``: the result's rate for the whole group of ``gpu_count`` GPUs; ``reported_limit_w``:
    the limit the client read (``extra.power_limit_w``, else the run's ``environment.power_limit_w``);
    ``tdp_w``: the catalogue's board power of the GPU.
    """
    joules = _positive(extra.get("joules_per_token"))
    if extra.get("joules_per_token") is None:
        return None
    power = _positive(extra.get("power_w"))
    window = _positive(extra.get("energy_window_s"))
    samples = extra.get("energy_samples")
    limit, what = board_limit(reported_w=extra.get("power_limit_w") or reported_limit_w, tdp_w=tdp_w)
    refusals = []
    if joules is None:
        refusals.append(f"joules_per_token {extra.get('joules_per_token')!r} is not a positive number")
    if window is None or window < MIN_ENERGY_WINDOW_S:
        seconds = "no" if window is None else f"a {window:g} s"
        refusals.append(f"measured over {seconds} window; energy needs at least {MIN_ENERGY_WINDOW_S:g} s")
    if power is None:
        refusals.append("no average power (extra.power_w) beside the energy")
    elif limit is None:
        refusals.append("no board power limit (reported or in the catalogue) to check the power against")
    elif power > limit:
        refusals.append(f"average power {power:g} W per GPU is above {what}")
    flag = extra.get("energy_flag")
    if isinstance(flag, str) and flag.strip():
        refusals.append(f"flagged by the client: {flag.strip()}")
    if joules is not None and power is not None and tokens_per_s > 0:
        implied = joules * tokens_per_s / max(gpu_count, 1)
        if abs(implied / power - 1) > CONSISTENCY_TOLERANCE:
            refusals.append(
                f"{joules:g} J/token at {tokens_per_s:g} tokens/s is {implied:.0f} W per GPU, not the "
                f"{power:g} W reported"
            )
    return EnergyVerdict(
        joules_per_token=joules,
        power_w=power,
        window_s=window,
        samples=int(samples) if isinstance(samples, int | float) and not isinstance(samples, bool) else None,
        source=str(extra.get("energy_source") or "")[:24],
        power_limit_w=limit,
        refusals=refusals,
    )


__all__ = ["CONSISTENCY_TOLERANCE", "MIN_ENERGY_WINDOW_S", "EnergyVerdict", "board_limit", "energy_verdict"]
