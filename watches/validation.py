"""What makes a watch valid. The page's form and the API's serializer check types; ``watch_spec_check``
checks meaning (the GPU, provider and ranking question exist, the webhook may be called) and
raises ``WatchInvalid`` naming the field, so that both answer the same errors."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.utils.translation import gettext as _

from catalog.models import Gpu, Provider
from catalog.money import CURRENCIES
from dashboard.selectors.ranking_params import RankingParamError, ranking_params_from_query
from watches.models import Watch, WatchKind, WatchMetric
from watches.webhook_address import WebhookRefused, webhook_target

THRESHOLD_MAX = Decimal("10000000")
GPU_COUNT_MAX = 64
RANKING_METRICS = (WatchMetric.COST_PER_MILLION_TOKENS, WatchMetric.PERF_PER_DOLLAR)


class WatchInvalid(ValueError):
    """A watch that cannot be created: ``errors`` maps each field to its reasons."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        super().__init__("; ".join(f"{name}: {reason}" for name, reason in errors.items()))
        self.errors = dict(errors)


@dataclass(frozen=True)
class WatchSpec:
    """What a user asks to watch, as the form or the API parsed it."""

    kind: str
    threshold: Decimal
    metric: str = ""
    gpu: str = ""  # GPU slug; empty: any GPU (ranking watches only)
    gpu_count: int | None = None
    spot: bool = False
    provider: str = ""
    region: str = ""
    query: Mapping[str, str] = field(default_factory=dict)
    currency: str = "USD"
    email: str = ""
    webhook_url: str = ""


@dataclass
class _Checked:
    fields: dict[str, Any]
    errors: dict[str, str]


def _check_common(spec: WatchSpec, checked: _Checked) -> None:
    if not (Decimal(0) < spec.threshold <= THRESHOLD_MAX):
        checked.errors["threshold"] = _("must be above 0 and at most %(most)s") % {"most": THRESHOLD_MAX}
    if spec.gpu:
        gpu = Gpu.objects.filter(slug=spec.gpu.strip().lower()).first()
        if gpu is None:
            checked.errors["gpu"] = _("no GPU with the identifier %(slug)r") % {"slug": spec.gpu[:60]}
        checked.fields["gpu"] = gpu
    if spec.email:
        try:
            validate_email(spec.email)
        except ValidationError:
            checked.errors["email"] = _("not a valid email address")
        checked.fields["email"] = spec.email.strip()
    if spec.webhook_url:
        if len(spec.webhook_url) > 500:
            checked.errors["webhook_url"] = _("at most 500 characters")
        else:
            try:
                webhook_target(spec.webhook_url)
            except WebhookRefused as refused:
                checked.errors["webhook_url"] = str(refused)
        checked.fields["webhook_url"] = spec.webhook_url.strip()


def _check_price(spec: WatchSpec, checked: _Checked) -> None:
    if not spec.gpu:
        checked.errors["gpu"] = _("a price watch needs a GPU")
    if spec.metric and spec.metric != WatchMetric.PRICE_PER_GPU_HOUR:
        checked.errors["metric"] = _("a price watch follows the price per GPU-hour")
    if spec.gpu_count is not None and not (1 <= spec.gpu_count <= GPU_COUNT_MAX):
        checked.errors["gpu_count"] = _("between 1 and %(most)d") % {"most": GPU_COUNT_MAX}
    if spec.currency not in CURRENCIES:
        checked.errors["currency"] = _("one of: %(allowed)s") % {"allowed": ", ".join(CURRENCIES)}
    provider = None
    if spec.provider:
        provider = Provider.objects.filter(slug=spec.provider.strip().lower()).first()
        if provider is None:
            checked.errors["provider"] = _("no provider with the identifier %(slug)r") % {"slug": spec.provider[:60]}
    region = spec.region.strip()
    if len(region) > 64 or "\x00" in region:
        checked.errors["region"] = _("at most 64 characters, no NUL")
    checked.fields.update(
        metric=WatchMetric.PRICE_PER_GPU_HOUR,
        gpu_count=spec.gpu_count,
        spot=spec.spot,
        provider=provider,
        region=region[:64],
        currency=spec.currency,
    )


def _check_ranking(spec: WatchSpec, checked: _Checked) -> None:
    try:
        params = ranking_params_from_query(spec.query)
    except RankingParamError as exc:
        checked.errors[f"query.{exc.field}"] = exc.message
        return
    if params.gpu_prices:
        checked.errors["query.gpu_price"] = _("a watch follows the offers' prices: a price of your own never moves")
    if spec.metric not in RANKING_METRICS:
        checked.errors["metric"] = _("one of: %(allowed)s") % {"allowed": ", ".join(RANKING_METRICS)}
    elif spec.metric == WatchMetric.COST_PER_MILLION_TOKENS and not params.use_case_def.is_llm:
        checked.errors["metric"] = _("cost per million tokens is a figure of the LLM use cases only")
    # Sorting only orders the rows: the same question whatever it says.
    query = {name: value for name, value in params.to_query().items() if name != "sort"}
    query["use_case"] = params.use_case
    checked.fields.update(metric=spec.metric, query=query, use_case=params.use_case, currency=params.currency)


def watch_spec_check(spec: WatchSpec) -> dict[str, Any]:
    """The watch's fields (model field -> value) for a valid spec; WatchInvalid names every bad field."""
    checked = _Checked(fields={}, errors={})
    if spec.kind not in WatchKind.values:
        raise WatchInvalid({"kind": _("one of: %(allowed)s") % {"allowed": ", ".join(WatchKind.values)}})
    _check_common(spec, checked)
    if spec.kind == WatchKind.PRICE:
        _check_price(spec, checked)
    else:
        _check_ranking(spec, checked)
    if checked.errors:
        raise WatchInvalid(checked.errors)
    return {"kind": spec.kind, "threshold": spec.threshold, **checked.fields}


def watch_is_past(*, watch: Watch, value: float) -> bool:
    """Whether ``value`` is at or past the watch's threshold (below it for prices and costs)."""
    threshold = float(watch.threshold)
    return value >= threshold if watch.higher_is_better else value <= threshold
