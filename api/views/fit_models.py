"""POST /api/v1/fit/models/: import a model's config.json from Hugging Face, so that GET
/api/v1/fit/?hf_model=<id> (and the /fit/ page) can use it. The one fit endpoint that calls the
Hub; every read answers from what it stored. GET lists the models imported so far."""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.parsers import BoundedJSONParser
from api.serializers import ErrorSerializer
from api.serializers_fit import HfModelImportSerializer, HfModelSerializer
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


class FitModelsView(ApiMixin, APIView):
    """The Hugging Face models the fit calculator can read, and their import."""

    # JSON only, as the schema says: the page's import button posts to its own form view.
    parser_classes = [BoundedJSONParser]

    @extend_schema(
        summary="Hugging Face models imported into the fit calculator",
        responses={200: HfModelSerializer(many=True), 429: ERROR_429},
    )
    def get(self, request: Request) -> Response:
        return Response(HfModelSerializer(hf_model_list(), many=True).data)

    @extend_schema(
        summary="Import a model's config.json from Hugging Face",
        description=(
            "Fetches config.json of `hf_id` from the Hub (no token: gated and private models are refused) and "
            "stores it, replacing an earlier import. A refusal names `hf_id` with the reason: 400 for a "
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
