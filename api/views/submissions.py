"""REST API of benchmark submissions: POST /api/v1/submissions/ and GET /api/v1/submissions/<uuid>/.

The body is read as bytes and parsed by the intake service, not by DRF's JSON parser,
which would accept NaN and Infinity and keep the last of duplicated keys.
"""

from __future__ import annotations

from typing import Any

from django.http.request import RawPostDataException
from django.urls import reverse
from django.utils.translation import gettext as _
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiExample, OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import permissions, serializers, status
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.openapi import openapi_schema_from_json_schema
from api.throttling import SUBMISSION_THROTTLES
from benchmarks_app.models import RawSubmission, SubmissionStatus, TrustLabel
from benchmarks_app.selectors import submission_get_for_viewer, submission_summary
from benchmarks_app.services.errors import FieldError, SubmissionInvalid
from benchmarks_app.services.intake import submission_intake
from benchmarks_app.services.schema import submission_schema


class SubmissionBodyParser(BaseParser):
    """Declares application/json for the schema; the view reads the raw body itself."""

    media_type = "application/json"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        return stream.read() if stream is not None else b""


class SubmissionErrorSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Reasons by field: each key is the JSON path of an offending value, e.g. $.results[0].median.",
    )


class ReasonSerializer(serializers.Serializer):
    field = serializers.CharField()
    reason = serializers.CharField()
    verdict = serializers.ChoiceField(choices=["rejected", "flagged", "on_hold", "note"])


class SubmissionGpuSerializer(serializers.Serializer):
    slug = serializers.CharField()
    name = serializers.CharField()


class SubmissionResultSerializer(serializers.Serializer):
    workload = serializers.CharField()
    workload_version = serializers.CharField()
    precision = serializers.CharField()
    gpu_count = serializers.IntegerField()
    params = serializers.DictField()
    unit = serializers.CharField()
    value = serializers.FloatField(help_text="Median of the repetitions' statistics window, in the unit.")
    spread_pct = serializers.FloatField(allow_null=True)
    trust = serializers.ChoiceField(choices=TrustLabel.choices)
    comparison_label = serializers.CharField()


class SubmissionStatusSerializer(serializers.Serializer):
    run_uuid = serializers.UUIDField()
    status = serializers.ChoiceField(choices=SubmissionStatus.choices)
    status_display = serializers.CharField()
    reasons = ReasonSerializer(many=True)
    received_at = serializers.DateTimeField()
    processed_at = serializers.DateTimeField(allow_null=True)
    channel = serializers.ChoiceField(choices=RawSubmission.Channel.choices)
    sha256 = serializers.CharField(help_text="sha256 of the body as received.")
    gpu_name_reported = serializers.CharField()
    gpu = SubmissionGpuSerializer(allow_null=True)
    results = SubmissionResultSerializer(many=True)
    status_url = serializers.CharField(help_text="API URL of this submission's status.")
    page_url = serializers.CharField(help_text="Web page of this submission.")


# One serializer for every response, as building one per request deep-copies its nested fields
# (more CPU than the rest of the response); its fields keep no per-call state.
_STATUS_SERIALIZER = SubmissionStatusSerializer()


def _status_document(submission: RawSubmission, *, with_results: bool = True) -> dict[str, Any]:
    document = submission_summary(submission=submission, with_results=with_results)
    document["status_url"] = reverse("api:submission-detail", kwargs={"run_uuid": submission.run_uuid})
    document["page_url"] = reverse("benchmarks:submission-detail", kwargs={"run_uuid": submission.run_uuid})
    return _STATUS_SERIALIZER.to_representation(document)


def submission_error_body(exc: SubmissionInvalid) -> dict[str, Any]:
    """The API's error shape (api.exceptions): a detail line and the reasons by field."""
    errors: dict[str, list[str]] = {}
    for error in exc.errors:
        errors.setdefault(error.field, []).append(error.reason)
    fields = ", ".join(errors)
    label = {409: "Run UUID already taken", 413: "Submission too large"}.get(exc.status_code, "Invalid submission")
    return {"detail": f"{label}: {fields}.", "errors": errors}


def _error_response(exc: SubmissionInvalid) -> Response:
    return Response(submission_error_body(exc), status=exc.status_code)


# How long a client waits before it sends the run again after a 503: the broker's usual restart.
QUEUE_RETRY_AFTER_S = 30


def _queue_unavailable_response(submission: RawSubmission) -> Response:
    """503: the run is stored but its ingest could not be queued (the broker did not answer within
    its timeouts, settings.BROKER_TIMEOUT_S). Nothing is lost: the sweeper queues it once the
    broker answers, and the client's retry of the same run is answered 200 with it."""
    reason = _("the ingest queue is not answering: the run is stored and will be processed")
    detail = _("Try again in %(seconds)s s: %(reason)s; send the same run again to see its status.") % {
        "seconds": QUEUE_RETRY_AFTER_S,
        "reason": reason,
    }
    return Response(
        {"detail": detail, "errors": {"$": [reason]}},
        status=status.HTTP_503_SERVICE_UNAVAILABLE,
        headers={
            "Retry-After": str(QUEUE_RETRY_AFTER_S),
            "Location": reverse("api:submission-detail", kwargs={"run_uuid": submission.run_uuid}),
        },
    )


_EXAMPLE_ERROR = {
    "detail": "Invalid submission: $.results[0].repetitions[3].",
    "errors": {"$.results[0].repetitions[3]": ["-1.5 is less than or equal to the minimum of 0"]},
}


class SubmissionCreateView(APIView):
    """Submit one run of the benchmark client."""

    permission_classes = [permissions.IsAuthenticated]
    parser_classes = [SubmissionBodyParser]
    throttle_classes = SUBMISSION_THROTTLES

    @extend_schema(
        operation_id="submissions_create",
        summary="Submit a benchmark run",
        description=(
            "The body is the JSON document written by the gpuatlas-bench client, valid against "
            "schemas/submission-1.schema.json of the client package (schema version 1). Standard JSON only: "
            "NaN, Infinity and duplicated keys are refused. At most SUBMISSION_MAX_BYTES (1 MB) bytes. "
            "Beyond the schema: created_at is a real UTC time between 2026-11-22 (the client's first run) and "
            "the time of receipt plus SUBMISSION_CLOCK_SKEW_S; each result's precision, gpu_count and params are "
            "those its workload declares in the client's workloads.json, and no more results per workload and "
            "mode than one run produces; memory_total_mib is at most 1 TiB. "
            "An invalid body is a 400 whatever its run_uuid: ownership of a run UUID is checked for valid bodies only. "
            "Idempotent on run_uuid: posting the same run again returns the stored submission (200). "
            "The ingest runs in the background: poll status_url until the status is accepted, flagged, "
            "rejected or on_hold."
        ),
        request={"application/json": openapi_schema_from_json_schema(submission_schema())},
        responses={
            201: OpenApiResponse(SubmissionStatusSerializer, description="Stored; the ingest is queued."),
            200: OpenApiResponse(
                SubmissionStatusSerializer, description="This run was already submitted: the stored submission."
            ),
            400: OpenApiResponse(
                SubmissionErrorSerializer,
                description="Invalid: each error names the field (a JSON path) and the reason. Nothing was stored.",
                examples=[OpenApiExample("negative repetition", value=_EXAMPLE_ERROR, response_only=True)],
            ),
            401: OpenApiResponse(description="No or invalid token: send `Authorization: Token <key>`."),
            409: OpenApiResponse(
                SubmissionErrorSerializer, description="The run UUID was used for another payload or by another user."
            ),
            413: OpenApiResponse(SubmissionErrorSerializer, description="The body is over the size limit."),
            429: OpenApiResponse(description="Too many submissions: slow down."),
            503: OpenApiResponse(
                SubmissionErrorSerializer,
                description="Stored, but the ingest queue did not answer: send the same run again after "
                "Retry-After seconds (it is processed meanwhile; the retry answers 200 with it).",
            ),
        },
        tags=["submissions"],
    )
    def post(self, request: Request) -> Response:
        # A body over DATA_UPLOAD_MAX_MEMORY_SIZE never gets here (gpuatlas.request_limits: 413);
        # the intake refuses one over SUBMISSION_MAX_BYTES.
        try:
            body = request._request.body
        except RawPostDataException:  # a form-encoded body was already read as form fields
            return _error_response(
                SubmissionInvalid([FieldError("$", "send the submission as an application/json body")])
            )
        try:
            outcome = submission_intake(body=body, submitter=request.user)
        except SubmissionInvalid as exc:
            return _error_response(exc)
        if outcome.queued is False:
            return _queue_unavailable_response(outcome.submission)
        code = status.HTTP_201_CREATED if outcome.created else status.HTTP_200_OK
        document = _status_document(outcome.submission, with_results=not outcome.created)
        return Response(document, status=code, headers={"Location": document["status_url"]})


class SubmissionDetailView(APIView):
    """Status and results of one submission."""

    permission_classes = [permissions.AllowAny]
    throttle_classes = SUBMISSION_THROTTLES

    @extend_schema(
        operation_id="submissions_retrieve",
        summary="Status of a submission",
        description=(
            "Decided submissions (accepted, flagged, rejected) are public; a pending one (received, "
            "processing, on_hold) is visible to its submitter and to staff only, and reads as 404 to others."
        ),
        parameters=[OpenApiParameter("run_uuid", OpenApiTypes.UUID, OpenApiParameter.PATH)],
        responses={
            200: SubmissionStatusSerializer,
            404: OpenApiResponse(description="No such submission, or not yours to see."),
        },
        tags=["submissions"],
    )
    def get(self, request: Request, run_uuid: str) -> Response:
        submission = submission_get_for_viewer(run_uuid=run_uuid, user=request.user)
        if submission is None:
            return Response({"detail": "No such submission."}, status=status.HTTP_404_NOT_FOUND)
        return Response(_status_document(submission))
