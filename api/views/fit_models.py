"""POST /api/v1/fit/models/: import a model's config.json from Hugging Face, so that GET
/api/v1/fit/?hf_model=<id> (and the /fit/ page) can use it. The one fit endpoint that calls the
Hub; every read answers from what it stored. An import needs an account and spends the fit page's
import allowance (api.throttling.HfImportThrottle). GET lists the models imported so far, a page
at a time and without their configs (each up to a megabyte: fitcalc.hub.MAX_CONFIG_BYTES); the
import's answer holds the config."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import generics, permissions, status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from api.pagination import StrictLimitOffsetPagination
from api.parsers import BoundedJSONParser
from api.serializers import ErrorSerializer
from api.serializers_fit import HfModelImportSerializer, HfModelListSerializer, HfModelSerializer
from api.throttling import DEFAULT_THROTTLES, HfImportThrottle
from api.views.base import ERROR_429, ApiMixin
from fitcalc.errors import FitInputError, HubRefusal
from fitcalc.selectors.hf_models import hf_model_list
from fitcalc.services import hf_model_import

#: The status of each kind of refusal: 4xx, each naming ``hf_id`` with the reason.
REFUSAL_STATUS = {
    "missing": status.HTTP_404_NOT_FOUND,
    "gated": status.HTTP_403_FORBIDDEN,
    "offline": status.HTTP_403_FORBIDDEN,
    "unreadable": status.HTTP_400_BAD_REQUEST,
    "unavailable": status.HTTP_400_BAD_REQUEST,
}


class HfModelPagination(StrictLimitOffsetPagination):
    default_limit = 50
    max_limit = 100


class FitModelsView(ApiMixin, generics.ListAPIView):
    """The Hugging Face models the fit calculator can read, and their import."""

    # JSON only, as the schema says: the page's import button posts to its own form view.
    parser_classes = [BoundedJSONParser]
    serializer_class = HfModelListSerializer
    pagination_class = HfModelPagination
    filter_backends: list = []
    throttle_classes = [*DEFAULT_THROTTLES, HfImportThrottle]

    def get_queryset(self):  # type: ignore[no-untyped-def]
        return hf_model_list().defer("config")

    def get_permissions(self) -> list:
        if self.request.method == "POST":
            return [permissions.IsAuthenticated()]
        return list(super().get_permissions())

    @extend_schema(
        summary="Hugging Face models imported into the fit calculator",
        description="A page at a time (limit, offset), without their configs: the import's answer holds one.",
        responses={
            200: HfModelListSerializer(many=True),
            400: OpenApiResponse(ErrorSerializer, description="A malformed `limit` or `offset`; `errors` names it."),
            429: ERROR_429,
        },
    )
    def get(self, request: Request, *args: object, **kwargs: object) -> Response:
        return super().get(request, *args, **kwargs)

    @extend_schema(
        summary="Import a model's config.json from Hugging Face",
        description=(
            "Fetches config.json of `hf_id` from the Hub (no token: gated and private models are refused) and "
            "stores it, replacing an earlier import. Needs an account (a token or a session) and is throttled "
            "(THROTTLE_HF_IMPORT, per account and per address). A refusal names `hf_id` with the reason: 400 for a "
            "malformed id, a config the calculator can't read, or the Hub down, too slow or answering an "
            "error; 403 for a gated model or a deployment that does not reach the Hub; 404 for no such "
            "public model or no config.json."
        ),
        request=HfModelImportSerializer,
        responses={
            201: HfModelSerializer,
            400: OpenApiResponse(
                ErrorSerializer, description="Malformed, unreadable, or the Hub failed; `errors.hf_id` says which."
            ),
            403: OpenApiResponse(ErrorSerializer, description="Gated, or this deployment is offline."),
            401: OpenApiResponse(ErrorSerializer, description="No account: sign in or send a token."),
            404: OpenApiResponse(ErrorSerializer, description="No such public model, or no config.json."),
            413: OpenApiResponse(
                ErrorSerializer, description='The body is over the size limit; `errors["$"]` says by how much.'
            ),
            429: ERROR_429,
        },
    )
    def post(self, request: Request) -> Response:
        given = HfModelImportSerializer(data=request.data)
        given.is_valid(raise_exception=True)
        try:
            stored = hf_model_import(repo_id=given.validated_data["hf_id"])
        except HubRefusal as refusal:
            return Response(
                {"detail": refusal.message, "errors": {"hf_id": [refusal.message]}}, status=REFUSAL_STATUS[refusal.kind]
            )
        except FitInputError as error:
            raise ValidationError({"hf_id": [error.message]}) from None
        return Response(HfModelSerializer(stored).data, status=status.HTTP_201_CREATED)
