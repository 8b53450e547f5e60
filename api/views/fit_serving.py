"""GET /api/v1/fit/serving/: what to serve a model on at a tokens/s-per-user target (fitcalc.selectors.serving_plans)."""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.serializers import ErrorSerializer
from api.views.base import ERROR_429, ApiMixin, response_cached
from catalog.selectors.prices import PRICE_RULES
from dashboard.selectors.ranking_params import RankingParamError, gpu_prices_from_query
from fitcalc.selectors.serving_plans import (
    DEFAULT_LENGTHS,
    DEFAULT_TARGET,
    PRECISIONS,
    ServingPlan,
    serving_plans_asked,
)
from llm.question import (
    AUTO_ENGINE,
    BATCHED_ENGINES,
    MAX_SEQUENCE_TOKENS,
    MIN_SEQUENCE_TOKENS,
    QueryNumberError,
    target_parse,
)
from llm.serving.shapes import MODEL_SHAPES


class ServingPlanQuerySerializer(serializers.Serializer):
    model = serializers.ChoiceField(choices=sorted(MODEL_SHAPES), help_text=_("Model key, e.g. llama-3.1-70b."))
    precision = serializers.RegexField(
        r"^({names})(,({names}))*$".format(names="|".join(PRECISIONS)),
        default="fp8",
        help_text=_("Weight precision(s), comma-separated: %(names)s.") % {"names": ", ".join(PRECISIONS)},
        error_messages={"invalid": _("One or more of %(names)s, comma-separated.") % {"names": ", ".join(PRECISIONS)}},
    )
    # The pattern is the rule, so the schema says exactly what is accepted: 1 to 10,000, or "max".
    target = serializers.RegexField(
        r"^(max|maximum|[1-9][0-9]{0,3}(\.[0-9]+)?|10000)$",
        default=str(DEFAULT_TARGET),
        help_text=_('Output tokens/s per user to serve at, or "max" for the most throughput.'),
        error_messages={"invalid": _('A number of tokens/s per user from 1 to 10,000, or "max".')},
    )
    input_len = serializers.IntegerField(
        default=DEFAULT_LENGTHS[0], min_value=MIN_SEQUENCE_TOKENS, max_value=MAX_SEQUENCE_TOKENS,
        help_text=_("Prompt tokens per request."),
    )  # fmt: skip
    output_len = serializers.IntegerField(
        default=DEFAULT_LENGTHS[1], min_value=MIN_SEQUENCE_TOKENS, max_value=MAX_SEQUENCE_TOKENS,
        help_text=_("Output tokens per request."),
    )  # fmt: skip
    engine = serializers.ChoiceField(
        choices=[AUTO_ENGINE, *BATCHED_ENGINES],
        default=AUTO_ENGINE,
        help_text=_("auto: TensorRT-LLM on NVIDIA GPUs, vLLM/SGLang elsewhere (the rankings' rule)."),
    )
    fewest_gpus = serializers.BooleanField(default=False, help_text=_("Recommend the fewest GPUs, not the cheapest."))
    price_rule = serializers.ChoiceField(choices=list(PRICE_RULES), default="typical")

    def validate_precision(self, value: str) -> list[str]:
        names = [p.strip().lower() for p in value.split(",") if p.strip()]
        bad = [p for p in names if p not in PRECISIONS]
        if not names or bad:
            raise serializers.ValidationError(
                _("One or more of %(names)s, comma-separated.") % {"names": ", ".join(PRECISIONS)}
            )
        return names

    def validate_target(self, value: str) -> float | None:
        try:
            return target_parse(value)
        except QueryNumberError as error:
            raise serializers.ValidationError(error.message) from None


class ServingPlanSerializer(serializers.Serializer):
    gpu = serializers.CharField()
    gpu_name = serializers.CharField()
    gpu_count = serializers.IntegerField()
    tensor_parallel = serializers.IntegerField()
    replicas = serializers.IntegerField()
    precision = serializers.CharField()
    tokens_per_s = serializers.FloatField()
    tokens_per_s_per_gpu = serializers.FloatField()
    tokens_per_s_per_user = serializers.FloatField(allow_null=True)
    concurrency = serializers.IntegerField(allow_null=True)
    ttft_s = serializers.FloatField(allow_null=True)
    basis = serializers.ChoiceField(choices=["measured", "estimated"])
    error_pct = serializers.FloatField(allow_null=True, help_text=_("Estimates: the held-out median error."))
    inside_measured_range = serializers.BooleanField()
    allreduce = serializers.CharField(help_text=_("The all-reduce figure used: a measured run or the datasheet."))
    measured_from = serializers.CharField(help_text=_("Measured: the points read (source, scenario, date)."))
    price_per_gpu_hour_usd = serializers.FloatField(allow_null=True)
    cost_per_million_tokens_usd = serializers.FloatField(allow_null=True)
    rented = serializers.BooleanField()
    anchor = serializers.CharField(help_text=_("Estimates: the GPU's measured points the model is anchored on."))
    floor = serializers.BooleanField(help_text=_("Measured faster per user than the target: at least this much."))
    price_basis = serializers.ChoiceField(choices=["offer", "user", "none"])


class ServingPlansSerializer(serializers.Serializer):
    model = serializers.CharField()
    precisions = serializers.ListField(child=serializers.CharField())
    target_tokens_per_s_per_user = serializers.FloatField(allow_null=True)
    input_len = serializers.IntegerField()
    output_len = serializers.IntegerField()
    engine = serializers.CharField()
    fewest_gpus = serializers.BooleanField()
    recommended = ServingPlanSerializer(allow_null=True)
    across_counts = ServingPlanSerializer(many=True)
    options = ServingPlanSerializer(many=True)
    not_fitting = serializers.ListField(child=serializers.DictField())


def _plan(plan: ServingPlan | None) -> dict[str, Any] | None:
    return plan.as_dict() if plan else None


class FitServingView(ApiMixin, APIView):
    """The cheapest configuration (GPU, count, tensor-parallel size, precision) to serve a model at a
    tokens/s-per-user target, measured points first, else the serving model with its error; the
    cost across GPU counts; the all-reduce figure each configuration used."""

    query_parameters = frozenset(ServingPlanQuerySerializer().fields)
    query_parameter_prefixes = ("gpu_price[",)

    @extend_schema(
        summary="What to serve an LLM on: $ per million output tokens at a tokens/s-per-user target",
        parameters=[ServingPlanQuerySerializer],
        responses={
            200: ServingPlansSerializer,
            400: OpenApiResponse(ErrorSerializer, description="An invalid parameter; `errors` names it."),
            429: ERROR_429,
        },
    )
    def get(self, request: Request) -> HttpResponse:
        def produce() -> Response:
            # DRF reads an empty query value as "not given" (form semantics); the schema says a value is
            # at least one character, so an empty one is an error naming the parameter.
            blank = sorted(
                name for name, value in request.query_params.items() if name in self.query_parameters and not value
            )
            if blank:
                raise ValidationError({name: [_("This parameter may not be blank.")] for name in blank})
            query = ServingPlanQuerySerializer(data=request.query_params)
            query.is_valid(raise_exception=True)
            data = query.validated_data
            try:
                gpu_prices = dict(gpu_prices_from_query(request.query_params))
            except RankingParamError as error:
                raise ValidationError({error.field: [error.message]}) from None
            try:
                plans = serving_plans_asked(
                    model=data["model"],
                    precisions=tuple(data["precision"]),
                    target=data["target"],
                    input_len=data["input_len"],
                    output_len=data["output_len"],
                    engine=data["engine"],
                    fewest_gpus=data["fewest_gpus"],
                    price_rule=data["price_rule"],
                    gpu_prices=tuple(sorted(gpu_prices.items())),
                )
            except ValueError as error:
                field, _sep, reason = str(error).partition(": ")
                raise ValidationError({field: [reason or str(error)]}) from None
            body = {
                "model": plans.model,
                "precisions": list(plans.precisions),
                "target_tokens_per_s_per_user": plans.target,
                "input_len": plans.input_len,
                "output_len": plans.output_len,
                "engine": plans.engine,
                "fewest_gpus": plans.fewest_gpus,
                "recommended": _plan(plans.recommended),
                "across_counts": [p.as_dict() for p in plans.across_counts],
                "options": [p.as_dict() for p in sorted(plans.options, key=lambda p: (p.cost_per_million is None,
                                                                                      p.cost_per_million or 0.0))],
                "not_fitting": [{"gpu": name, "reason": why} for name, why in plans.not_fitting],
            }  # fmt: skip
            return Response(ServingPlansSerializer(body).data)

        # The bytes sent, by the query and the data version (only a 200 is stored: a bad
        # parameter is refused on every request).
        return response_cached(self, request, produce)
