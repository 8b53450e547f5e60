"""tugot17 gpu-price-tracker summaries (``data/summary/<GPU>.jsonl``, MIT).

One JSON object per snapshot: ``timestamp, gpu_type, socket_type, price_stats, availability,
by_provider{p: {count, min, avg}}, by_config{"1x".."8x": {count, min_per_gpu, min_total, ...,
best_deal{provider, location, socket, spot}}}``. Prices are USD per GPU-hour.

What we import, and why: one offer per configuration's best deal, ``(provider, "Nx", location,
spot)``, observed at the snapshot's timestamp, at ``min_total`` for the N GPUs. That is the only
figure in the file whose provider, GPU count, socket and spot flag are all stated.
``by_provider.min`` mixes spot and on-demand listings of any size (DataCrunch's B200 1.79 is a
4x spot deal), so it is never imported as a price: a provider minimum would put a spot price
among on-demand prices, and moving an on-demand offer's "last seen" with it would date a price
the offer never had. A configuration's offer is in a snapshot only while it is that
configuration's best deal; otherwise it is marked unavailable from that snapshot on.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path
from typing import Any

from catalog.services.prices.common import (
    PRICE_QUANTUM,
    OfferRow,
    ParsedFile,
    RowError,
    RowRejection,
    parse_decimal_price,
)
from catalog.services.prices.providers import provider_slug

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
    """Parse a tracker summary file into best-deal offers, one group of rows per snapshot."""
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
    if not isinstance(snapshot["by_provider"], dict):
        raise RowError("by_provider must be an object")
    by_config = snapshot.get("by_config") or {}
    if not isinstance(by_config, dict):
        raise RowError("by_config must be an object")
    socket = snapshot.get("socket_type") or None
    gpu_type = str(snapshot["gpu_type"])
    raw, others, memories = _gpu_names(gpu_type, socket)
    rows: list[OfferRow] = []
    for config, stats in sorted(by_config.items()):
        row = _best_deal_row(config, stats, raw=raw, others=others, memories=memories, socket=socket)
        if row is not None:
            rows.append(replace(row, line=line_number, observed_at=observed_at))
    return rows


def _best_deal_row(
    config: str,
    stats: Any,
    *,
    raw: str,
    others: tuple[str, ...],
    memories: tuple[float, ...],
    socket: str | None,
) -> OfferRow | None:
    """The best deal of one configuration ("4x") as an offer row; None when it names no deal."""
    if not isinstance(stats, dict) or not isinstance(stats.get("best_deal"), dict):
        return None
    deal = stats["best_deal"]
    name = str(deal.get("provider") or "").strip()
    if not name:
        return None
    try:
        count = float(config.lower().removesuffix("x"))
    except ValueError:
        raise RowError(f"by_config key {config!r} is not a GPU count such as '4x'") from None
    if count <= 0:
        raise RowError(f"by_config key {config!r} is not a positive GPU count")
    total = parse_decimal_price(str(stats.get("min_total") or ""), f"by_config.{config}.min_total")
    if total is None:
        per_gpu_price = parse_decimal_price(str(stats.get("min_per_gpu") or ""), f"by_config.{config}.min_per_gpu")
        if per_gpu_price is None:
            raise RowError(f"by_config.{config} has neither min_total nor min_per_gpu")
        total = (per_gpu_price * Decimal(str(count))).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)
    deal_socket = str(deal.get("socket") or socket or "")
    return OfferRow(
        line=0,
        provider=provider_slug(name),
        instance_type=f"tracker best deal: {raw} {config}",
        gpu_name_raw=raw,
        gpu_count=count,
        price_per_hour=total,
        region=str(deal.get("location") or "")[:200],
        is_spot=deal.get("spot") is True,
        other_gpu_names=others,
        hints=deal_socket,
        memory_candidates=memories,
        extra={"provider_name": name, "socket": deal_socket, "listings": stats.get("count")},
    )
