"""Staff-only moderation: the submissions held back (flagged, on hold) and the decisions on them.

Decisions call the ingest services (benchmarks_app.services.moderation); this module only
validates the request and reports what changed and what was skipped, and why.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.db.models import QuerySet
from django.utils.translation import gettext_lazy as _
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import permissions, serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.filters import ApiFilterBackend, ApiFilterSet, EntityFilter, fixed_values
from api.pagination import KeysetCursorPagination
from api.parsers import BoundedJSONParser
from api.serializers import ErrorSerializer, ModerationSubmissionSerializer
from api.views.base import ERROR_400, ERROR_404, ERROR_429, ApiMixin, ValuesListView
from benchmarks_app.models import RawSubmission, SubmissionStatus
from benchmarks_app.selectors import submissions_needing_moderation
from benchmarks_app.services.moderation import submissions_approve, submissions_reject

MAX_DECISIONS = 500
AUTH_ERRORS = {
    401: OpenApiResponse(ErrorSerializer, description="No or invalid credentials."),
    403: OpenApiResponse(
        ErrorSerializer, description="Staff with the benchmark submission permissions the admin asks for only."
    ),
}
HELD_STATUSES = (SubmissionStatus.FLAGGED, SubmissionStatus.ON_HOLD)


class ModeratesSubmissions(permissions.IsAdminUser):
    """What the admin asks of a curator: staff, with the model permission its page or action needs.

    The admin's submissions list needs ``view_rawsubmission`` or ``change_rawsubmission``; its
    approve and reject actions need ``change_rawsubmission`` (benchmarks_app/admin.py). A staff
    user without them gets 403 here as there. Superusers hold every permission.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        label = RawSubmission._meta.app_label
        change = request.user.has_perm(f"{label}.change_rawsubmission")
        if request.method in permissions.SAFE_METHODS:
            return change or request.user.has_perm(f"{label}.view_rawsubmission")
        return change


class ModerationFilterSet(ApiFilterSet):
    status = EntityFilter(
        field_name="status", values=fixed_values(str(s) for s in HELD_STATUSES), description="flagged or on_hold."
    )

    class Meta:
        model = RawSubmission
        fields: list[str] = []


@extend_schema_view(
    get=extend_schema(
        summary=_("Submissions awaiting a curator (staff)"),
        description=_("Flagged submissions (implausible results) and those on hold (unknown GPU), oldest first."),
        responses={
            200: ModerationSubmissionSerializer(many=True),
            **AUTH_ERRORS,
            400: ERROR_400,
            404: ERROR_404,
            429: ERROR_429,
        },
        tags=["moderation"],
    )
)
class ModerationQueueView(ValuesListView):
    permission_classes = [ModeratesSubmissions]
    serializer_class = ModerationSubmissionSerializer
    filterset_class = ModerationFilterSet
    filter_backends = [ApiFilterBackend]
    pagination_class = KeysetCursorPagination
    ordering: ClassVar[list[str]] = ["received_at"]

    def base_queryset(self) -> QuerySet:
        return submissions_needing_moderation()


class StrictUUIDField(serializers.UUIDField):
    """A UUID written as a string: DRF's field also takes integers (and so ``false`` as UUID 0)."""

    def to_internal_value(self, data: Any) -> Any:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class DecisionRequestSerializer(serializers.Serializer):
    run_uuids = serializers.ListField(
        child=StrictUUIDField(), min_length=1, max_length=MAX_DECISIONS, help_text="Submissions to decide."
    )


class DecisionResultSerializer(serializers.Serializer):
    changed = serializers.ListField(child=serializers.UUIDField(), help_text="Run UUIDs whose status changed.")
    skipped = serializers.DictField(child=serializers.CharField(), help_text="Run UUID -> why it was left as is.")


class _DecisionView(ApiMixin, APIView):
    permission_classes = [ModeratesSubmissions]
    # JSON only: form encodings cannot express the list's bounds (an empty field becomes an item).
    parser_classes = [BoundedJSONParser]

    def post(self, request: Request) -> Response:
        body = DecisionRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        wanted = list(dict.fromkeys(str(u) for u in body.validated_data["run_uuids"]))
        ids = dict(RawSubmission.objects.filter(run_uuid__in=wanted).values_list("run_uuid", "pk"))
        known = {str(u): pk for u, pk in ids.items()}
        summary = self.service(submission_ids=list(known.values()), moderator=request.user)
        skipped = dict(summary.skipped)
        for run_uuid in wanted:
            if run_uuid not in known:
                skipped[run_uuid] = "no such submission"
        return Response({"changed": summary.changed, "skipped": skipped})

    service: ClassVar[Any]


_DECISION_RESPONSES = {
    200: DecisionResultSerializer,
    400: ERROR_400,
    **AUTH_ERRORS,
    413: OpenApiResponse(
        ErrorSerializer, description='The body is over the size limit; `errors["$"]` says by how much.'
    ),
    429: ERROR_429,
}


class ModerationApproveView(_DecisionView):
    service = staticmethod(submissions_approve)

    @extend_schema(
        summary=_("Approve flagged submissions (staff)"),
        description=_(
            "Their results become trusted community results and count in the aggregates. "
            "Only flagged submissions can be approved; others are reported in `skipped` with the reason."
        ),
        request=DecisionRequestSerializer,
        responses=_DECISION_RESPONSES,
        tags=["moderation"],
    )
    def post(self, request: Request) -> Response:
        return super().post(request)


class ModerationRejectView(_DecisionView):
    service = staticmethod(submissions_reject)

    @extend_schema(
        summary=_("Reject submissions (staff)"),
        description=_(
            "Their results are removed from the site and the aggregates; the raw submission is kept. "
            "Submissions still being ingested are reported in `skipped`."
        ),
        request=DecisionRequestSerializer,
        responses=_DECISION_RESPONSES,
        tags=["moderation"],
    )
    def post(self, request: Request) -> Response:
        return super().post(request)
