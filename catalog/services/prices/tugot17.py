"""tugot17 gpu-price-tracker summaries (``data/summary/<GPU>.jsonl``, MIT).

One JSON object per snapshot: ``timestamp, gpu_type, socket_type, price_stats, availability,
by_provider{p: {count, min, avg}}, by_config{"1x".."8x": {..., best_deal{provider, spot}}}``.
Prices are USD per GPU-hour.

What we import (and why): one offer per (tracked GPU, provider) whose price series is the
provider's minimum per GPU-hour in ``by_provider``, one observation per snapshot timestamp.
``by_provider`` is the only per-provider figure; ``by_config`` only names the single best deal
per configuration. The minimum may come from a spot listing: when a ``best_deal`` of that
provider is flagged ``spot`` at exactly that price, the observation goes to the provider's
spot offer (and the on-demand offer is only confirmed as still listed); otherwise to its
on-demand offer. A provider missing from a snapshot has its offer marked unavailable from
that snapshot on, and available again when it reappears.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

from catalog.services.prices.common import (
    OfferRow,
    ParsedFile,
    RowError,
    RowRejection,
    parse_decimal_price,
    provider_slug,
)

FORMAT = "tugot17"
_REQUIRED = ("timestamp", "gpu_type", "by_provider")


def looks_like_tugot17(first_line: str) -> bool:
    try:
        value = json.loads(first_line)
    except json.JSONDecodeError:
        return False
    return isinstance(value, dict) and all(k in value for k in _REQUIRED)


def _gpu_names(gpu_type: str, socket: str | None) -> tuple[str, tuple[str, ...], tuple[float, ...]]:
    """``H100_80GB`` + ``PCIe`` -> raw name ``H100_80GB PCIe``, alternatives, memory (80)."""
    model, _, memory_text = gpu_type.partition("_")
    memories: tuple[float, ...] = ()
    if memory_text.upper().endswith("GB"):
        try:
            memories = (float(memory_text[:-2]),)
        except ValueError:
            memories = ()
    raw = f"{gpu_type} {socket}" if socket else gpu_type
    others = tuple(dict.fromkeys(n for n in (f"{model} {socket}" if socket else "", gpu_type, model) if n and n != raw))
    return raw, others, memories


def parse_tugot17(*, path: Path, text: str | None = None) -> ParsedFile:
    """Parse a tracker summary file into per-provider observations, one group per snapshot."""
    parsed = ParsedFile(format=FORMAT, feed=f"tugot17-gpu-price-tracker/{path.name}")
    if text is None:
        text = path.read_text(encoding="utf-8-sig")
    for line_number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        parsed.rows_read += 1
        try:
            parsed.rows.extend(_rows_for(line, line_number))
        except RowError as exc:
            parsed.rejected.append(RowRejection(line_number, str(exc)))
    return parsed


def _rows_for(line: str, line_number: int) -> list[OfferRow]:
    try:
        snapshot = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RowError(f"not valid JSON ({exc.msg})") from None
    except RecursionError:
        raise RowError("not valid JSON (nested too deeply)") from None
    if not isinstance(snapshot, dict):
        raise RowError("a snapshot must be a JSON object")
    missing = [k for k in _REQUIRED if k not in snapshot]
    if missing:
        raise RowError(f"missing key(s): {', '.join(missing)}")
    try:
        observed_at = dt.datetime.fromisoformat(str(snapshot["timestamp"]).replace("Z", "+00:00"))
    except ValueError:
        raise RowError(f"timestamp {snapshot['timestamp']!r} is not an ISO date-time") from None
    if observed_at.tzinfo is None:
        observed_at = observed_at.replace(tzinfo=dt.UTC)
    by_provider = snapshot["by_provider"]
    if not isinstance(by_provider, dict):
        raise RowError("by_provider must be an object")
    socket = snapshot.get("socket_type") or None
    gpu_type = str(snapshot["gpu_type"])
    raw, others, memories = _gpu_names(gpu_type, socket)
    spot_minimums = _spot_best_deals(snapshot.get("by_config") or {})
    instance = f"tracker minimum: {raw}"
    rows: list[OfferRow] = []
    for name, stats in by_provider.items():
        if not isinstance(stats, dict) or "min" not in stats:
            raise RowError(f"by_provider.{name} has no min")
        price = parse_decimal_price(str(stats["min"]), f"by_provider.{name}.min")
        if price is None:
            raise RowError(f"by_provider.{name}.min is zero")
        slug = provider_slug(name)
        is_spot = spot_minimums.get(name) == price
        extra: dict[str, Any] = {"provider_name": name, "listings": stats.get("count"), "average": stats.get("avg")}
        base: dict[str, Any] = {
            "line": line_number,
            "provider": slug,
            "instance_type": instance,
            "gpu_name_raw": raw,
            "gpu_count": 1.0,
            "other_gpu_names": others,
            "hints": socket or "",
            "memory_candidates": memories,
            "observed_at": observed_at,
            "extra": extra,
        }
        rows.append(OfferRow(**base, price_per_hour=price, is_spot=is_spot))
        if is_spot:
            rows.append(OfferRow(**base, price_per_hour=None, is_spot=False, touch_only=True))
    return rows


def _spot_best_deals(by_config: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for config in by_config.values():
        if not isinstance(config, dict):
            continue
        deal = config.get("best_deal") or {}
        if deal.get("spot") and deal.get("provider") and config.get("min_per_gpu") is not None:
            try:
                found[deal["provider"]] = parse_decimal_price(str(config["min_per_gpu"]), "min_per_gpu")
            except RowError:
                continue
    return found
