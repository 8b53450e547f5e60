"""A watch and a crossing in words, for the account page, the emails, the webhooks and the feeds."""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from dashboard.ranking.use_cases import MODEL_SIZE_LABELS, USE_CASES
from watches.models import Crossing, Watch, WatchKind, WatchMetric


def metric_unit(watch: Watch) -> str:
    """The unit of the watch's figure, e.g. "USD per GPU-hour"."""
    if watch.metric == WatchMetric.PRICE_PER_GPU_HOUR:
        return _("%(currency)s per GPU-hour") % {"currency": watch.currency}
    if watch.metric == WatchMetric.COST_PER_MILLION_TOKENS:
        return _("%(currency)s per million tokens") % {"currency": watch.currency}
    return _("per %(currency)s per GPU-hour") % {"currency": watch.currency}


def question_text(query: dict[str, Any]) -> str:
    """A ranking question in words: its use case, model size, target speed and price rule."""
    use_case = USE_CASES.get(str(query.get("use_case", "training")))
    if use_case is None:
        return str(query.get("use_case", ""))
    parts = [str(use_case.label)]
    size = query.get("model_size") or use_case.default_model_size
    if use_case.is_llm and size in MODEL_SIZE_LABELS:
        parts.append(str(MODEL_SIZE_LABELS[size]))
    if use_case.llm_mode == "batched":
        target = query.get("interactivity", "20")
        parts.append(_("highest throughput") if target == "max" else _("%(rate)s tokens/s per user") % {"rate": target})
    if query.get("precision"):
        parts.append(str(query["precision"]))
    if query.get("price") in ("cheapest", "spot"):
        parts.append(_("cheapest offer") if query["price"] == "cheapest" else _("spot"))
    if query.get("provider"):
        parts.append(str(query["provider"]))
    if query.get("region"):
        parts.append(_("region “%(region)s”") % {"region": query["region"]})
    return " · ".join(parts)


def watch_text(watch: Watch) -> str:
    """What the watch follows, e.g. "H100 SXM5 80 GB · on-demand · 8 GPUs · lambda · region “us”"."""
    if watch.kind == WatchKind.PRICE:
        parts = [watch.gpu.name if watch.gpu else "", _("spot") if watch.spot else _("on-demand")]
        if watch.gpu_count:
            parts.append(_("%(count)d GPUs per machine") % {"count": watch.gpu_count})
        if watch.provider is not None:
            parts.append(watch.provider.name)
        if watch.region:
            parts.append(_("region “%(region)s”") % {"region": watch.region})
        return " · ".join(parts)
    who = watch.gpu.name if watch.gpu else _("any GPU")
    return f"{who} · {question_text(watch.query)} · {WatchMetric(watch.metric).label}"


def threshold_text(watch: Watch) -> str:
    """The condition, e.g. "at most 2.00 USD per GPU-hour"."""
    amount = f"{watch.threshold:.6f}".rstrip("0").rstrip(".")
    if watch.higher_is_better:
        return _("at least %(amount)s %(unit)s") % {"amount": amount, "unit": metric_unit(watch)}
    return _("at most %(amount)s %(unit)s") % {"amount": amount, "unit": metric_unit(watch)}


def crossing_text(crossing: Crossing) -> str:
    """One line for an alert: the figure, the GPU and where it comes from."""
    watch = crossing.watch
    cause = crossing.cause
    value = f"{crossing.value:.4f}".rstrip("0").rstrip(".")
    if watch.kind == WatchKind.PRICE:
        return _("%(gpu)s: %(value)s %(unit)s at %(provider)s (%(instance)s, %(region)s)") % {
            "gpu": cause.get("gpu_name", ""),
            "value": value,
            "unit": metric_unit(watch),
            "provider": cause.get("provider", ""),
            "instance": cause.get("instance_type", ""),
            "region": cause.get("region") or "—",
        }
    return _("%(gpu)s: %(value)s %(unit)s (%(question)s)") % {
        "gpu": cause.get("gpu_name", ""),
        "value": value,
        "unit": metric_unit(watch),
        "question": question_text(watch.query),
    }
