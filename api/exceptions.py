"""Error bodies of the API: every 4xx says what went wrong, and a 400 names the parameter.

Shape (documented in the schema as ``Error``)::

    {"detail": "Invalid parameter: vendor.", "errors": {"vendor": ["Select a valid choice. ..."]}}

``errors`` is present only on validation failures; its keys are the query parameters (or body
fields) that were rejected.
"""

from __future__ import annotations

from typing import Any

from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler


def _messages(detail: Any) -> list[str]:
    if isinstance(detail, list | tuple):
        found: list[str] = []
        for item in detail:
            found.extend(_messages(item))
        return found
    if isinstance(detail, dict):
        return [f"{key}: {message}" for key, value in detail.items() for message in _messages(value)]
    return [str(detail)]


def validation_errors(detail: Any) -> dict[str, list[str]]:
    """Flatten a DRF ValidationError detail into ``{parameter: [messages]}``."""
    if isinstance(detail, dict):
        return {str(key): _messages(value) for key, value in detail.items()}
    return {"non_field_errors": _messages(detail)}


def api_exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with validation failures reshaped to name the offending parameters."""
    response = exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, exceptions.ValidationError):
        errors = validation_errors(exc.detail)
        names = ", ".join(sorted(errors))
        label = "parameter" if len(errors) == 1 else "parameters"
        response.data = {"detail": f"Invalid {label}: {names}.", "errors": errors}
        response.status_code = status.HTTP_400_BAD_REQUEST
    elif isinstance(response.data, dict) and "detail" in response.data:
        response.data = {"detail": str(response.data["detail"])}
    return response
