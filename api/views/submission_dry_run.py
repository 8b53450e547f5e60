"""POST /api/v1/submissions/dry-run/: the verdict a submission would get, with nothing stored.

(benchmarks_app.services.dry_run.) A CPU-only run, the one way to try the loop without a GPU the
client measures, is checked here and answered; the real endpoint refuses it.
"""

from __future__ import annotations

from django.http.request import RawPostDataException
from drf_spectacular.utils import OpenApiExample, OpenApiResponse, extend_schema
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.openapi import openapi_schema_from_json_schema
from api.throttling import SUBMISSION_THROTTLES
from api.views.submissions import (
    _EXAMPLE_ERROR,
    ReasonSerializer,
    SubmissionBodyParser,
    SubmissionErrorSerializer,
    SubmissionGpuSerializer,
    _error_response,
)
from benchmarks_app.models import SubmissionStatus
from benchmarks_app.services.dry_run import CHECKED, submission_dry_run
from benchmarks_app.services.errors import FieldError, SubmissionInvalid
from benchmarks_app.services.schema import submission_schema


class DryRunResultSerializer(serializers.Serializer):
    path = serializers.CharField(help_text="Where the result is in the body, e.g. $.results[3].")
    workload = serializers.CharField()
    workload_version = serializers.CharField()
    precision = serializers.CharField()
    gpu_count = serializers.IntegerField()
    params = serializers.DictField()
    unit = serializers.CharField()
    value = serializers.FloatField(help_text="The result's median, in the unit.")


class DryRunSerializer(serializers.Serializer):
    dry_run = serializers.BooleanField(help_text="Always true: nothing was stored.")
    verdict = serializers.ChoiceField(
        choices=[*SubmissionStatus.choices, (CHECKED, "checked")],
        help_text="The status the submission would get now (accepted, flagged, rejected, on_hold), or checked: a "
        "CPU-only run that passed every rule that applies to it (never stored nor published).",
    )
    cpu_only = serializers.BooleanField()
    gpu = SubmissionGpuSerializer(allow_null=True, help_text="The catalogue GPU the run matches; null if none.")
    reasons = ReasonSerializer(many=True)
    results = DryRunResultSerializer(many=True)


_SERIALIZER = DryRunSerializer()


class SubmissionDryRunView(APIView):
    """Check a benchmark run as a submission would be checked; store nothing."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [SubmissionBodyParser]
    throttle_classes = SUBMISSION_THROTTLES

    @extend_schema(
        operation_id="submissions_dry_run",
        summary="Check a benchmark run without submitting it",
        description=(
            "The same body as POST /api/v1/submissions/, judged by the same rules, and nothing stored or "
            "published: the answer is the verdict the run would get now (the GPU match, datasheet peaks, energy "
            "checks) with every reason. A CPU-only run (`gpuatlas-bench run --device cpu`), which the real "
            "endpoint refuses, is checked here by every rule but its workloads' params (a CPU runs tiny sizes) and "
            "answered with the verdict `checked`. Not judged here: whether a result is an outlier among stored "
            "results of the same GPU (at ingest), and whether the run UUID is taken."
        ),
        request={"application/json": openapi_schema_from_json_schema(submission_schema())},
        responses={
            200: OpenApiResponse(DryRunSerializer, description="Judged; nothing was stored."),
            400: OpenApiResponse(
                SubmissionErrorSerializer,
                description="What the real endpoint would refuse, by field (a JSON path) and reason.",
                examples=[OpenApiExample("negative repetition", value=_EXAMPLE_ERROR, response_only=True)],
            ),
            401: OpenApiResponse(description="No or invalid token: send `Authorization: Token <key>`."),
            413: OpenApiResponse(SubmissionErrorSerializer, description="The body is over the size limit."),
            429: OpenApiResponse(description="Too many submissions: slow down."),
        },
        tags=["submissions"],
    )
    def post(self, request: Request) -> Response:
        try:
            outcome = submission_dry_run(body=request._request.body)
        except RawPostDataException:  # a form-encoded body was already read as form fields
            return _error_response(
                SubmissionInvalid([FieldError("$", "send the submission as an application/json body")])
            )
        except SubmissionInvalid as exc:
            return _error_response(exc)
        document = {
            "dry_run": True,
            "verdict": outcome.verdict,
            "cpu_only": outcome.cpu_only,
            "gpu": outcome.gpu,
            "reasons": outcome.reasons,
            "results": outcome.results,
        }
        return Response(_SERIALIZER.to_representation(document))
