"""Query parameters of the API: strict validation, and a schema that says exactly what is valid.

Rules, so that the OpenAPI document and the server agree (schemathesis checks both directions):
- named catalogue entities (vendor, architecture, GPU, provider, region, workload) and fixed
  vocabularies (segment, precision, trust label) only accept values that exist; anything else is a
  400 naming the parameter. The schema lists the values that exist when it is generated;
- numbers have documented bounds (a negative price is a 400), dates are ISO ``YYYY-MM-DD`` only,
  booleans are ``true`` or ``false`` only;
- an empty value (``?vendor=``) means "no filter", as on the HTML pages (``allowEmptyValue``);
- opaque identifiers (offer id, comparison key) only filter: an unknown one gives no rows.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

import django_filters
from django import forms
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import RegexValidator
from django.db import DatabaseError
from django.db.models import F, QuerySet
from django.utils.functional import Promise
from django.utils.translation import gettext_lazy as _
from django_filters.rest_framework import DjangoFilterBackend
from drf_spectacular.extensions import OpenApiFilterExtension
from drf_spectacular.plumbing import ResolvedComponent, build_parameter_type
from drf_spectacular.utils import OpenApiParameter
from rest_framework import filters as drf_filters
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

StrOrPromise = str | Promise
NO_NUL_PATTERN = r"^[^\x00]*$"
MAX_TEXT_LENGTH = 200


# --- form fields ----------------------------------------------------------------------------


class StrictBooleanField(forms.Field):
    """``true``/``false`` only: Django's NullBooleanField turns ``?spot=maybe`` into "no filter"."""

    def to_python(self, value: Any) -> bool | None:
        if value in (None, ""):
            return None
        if value == "true":
            return True
        if value == "false":
            return False
        raise DjangoValidationError(_("Must be 'true' or 'false'."), code="invalid")


class StrictDateField(forms.Field):
    """ISO ``YYYY-MM-DD`` only: Django's DateField also accepts ``10/25/06``, which the schema does not."""

    _ISO = re.compile(r"^\d{4}-\d{2}-\d{2}$")

    def to_python(self, value: Any) -> dt.date | None:
        if value in (None, ""):
            return None
        if not self._ISO.match(str(value)):
            raise DjangoValidationError(_("Enter a date as YYYY-MM-DD."), code="invalid")
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            raise DjangoValidationError(_("Enter a valid date."), code="invalid") from None


class BoundedFloatField(forms.FloatField):
    """A finite float within declared bounds (``1e999`` is infinity: refused, not compared)."""

    def to_python(self, value: Any) -> float | None:  # type: ignore[override]
        number = super().to_python(value)
        if number is not None and not math.isfinite(number):
            raise DjangoValidationError(_("Enter a finite number."), code="invalid")
        return number


# --- filters that know their own schema ------------------------------------------------------


class SchemaMixin:
    """A filter that describes itself as an OpenAPI parameter schema."""

    description: StrOrPromise = ""
    component: str | None = None

    def openapi_schema(self) -> dict[str, Any]:
        raise NotImplementedError


class EntityFilter(SchemaMixin, django_filters.CharFilter):
    """A value that must exist: a slug (or a fixed vocabulary), validated against current data.

    ``values`` is called at schema time, so the schema's enum is what the server accepts at that
    moment; ``contains`` checks one value (an indexed EXISTS for database-backed vocabularies
    rather than loading thousands of GPU slugs). Large vocabularies are emitted once, as a component.
    """

    def __init__(
        self,
        *args: Any,
        values: Callable[[], Iterable[str]],
        contains: Callable[[str], bool] | None = None,
        description: StrOrPromise = "",
        component: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.values = values
        self.contains = contains or (lambda value: value in set(values()))
        self.description = description
        self.component = component
        # strip=False: " nvidia " is not in the enum, so it must not be accepted as "nvidia".
        super().__init__(*args, strip=False, validators=[self._validate], **kwargs)

    def _validate(self, value: str) -> None:
        # NUL: CharField's own validator reports it, and PostgreSQL cannot even compare it.
        if "\x00" in value or self.contains(value):
            return
        # The value goes in as a parameter, never into the format string: it may contain "%".
        known = sorted(self.values()) if self.component is None else []
        if known and len(known) <= 20:
            raise DjangoValidationError(
                _("Unknown value %(value)s; expected one of: %(known)s."),
                code="invalid_choice",
                params={"value": repr(value[:60]), "known": ", ".join(known)},
            )
        raise DjangoValidationError(
            _("Unknown value %(value)s; see the API schema for the accepted values."),
            code="invalid_choice",
            params={"value": repr(value[:60])},
        )

    def openapi_schema(self) -> dict[str, Any]:
        try:
            values = sorted({str(value) for value in self.values()})
        except DatabaseError:
            # No tables yet (``check --deploy`` before ``migrate`` builds the schema too): the
            # vocabulary is unknown, so the parameter is documented as a plain string.
            return {"type": "string"}
        if not values:
            # Nothing exists yet: only the empty value ("no filter") is valid.
            return {"type": "string", "maxLength": 0}
        return {"type": "string", "enum": values}


class FloatFilter(SchemaMixin, django_filters.NumberFilter):
    field_class = BoundedFloatField

    def __init__(
        self, *args: Any, minimum: float, maximum: float, description: StrOrPromise = "", **kwargs: Any
    ) -> None:
        self.minimum, self.maximum, self.description = minimum, maximum, description
        super().__init__(*args, min_value=minimum, max_value=maximum, **kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "number", "minimum": self.minimum, "maximum": self.maximum}


class IntFilter(SchemaMixin, django_filters.NumberFilter):
    field_class = forms.IntegerField

    def __init__(self, *args: Any, minimum: int, maximum: int, description: StrOrPromise = "", **kwargs: Any) -> None:
        self.minimum, self.maximum, self.description = minimum, maximum, description
        super().__init__(*args, min_value=minimum, max_value=maximum, **kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.minimum, "maximum": self.maximum}


class DateFilter(SchemaMixin, django_filters.DateFilter):
    field_class = StrictDateField

    def __init__(self, *args: Any, description: StrOrPromise = "", **kwargs: Any) -> None:
        self.description = description
        super().__init__(*args, **kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "string", "format": "date"}


class BooleanFilter(SchemaMixin, django_filters.BooleanFilter):
    field_class = StrictBooleanField

    def __init__(self, *args: Any, description: StrOrPromise = "", **kwargs: Any) -> None:
        self.description = description
        super().__init__(*args, **kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class KeyFilter(SchemaMixin, django_filters.CharFilter):
    """An opaque identifier (a sha256 comparison key): filters, never validated against data."""

    def __init__(self, *args: Any, pattern: str, description: StrOrPromise = "", **kwargs: Any) -> None:
        self.pattern, self.description = pattern, description
        message = _("Must match %(pattern)s.") % {"pattern": pattern}
        super().__init__(*args, validators=[RegexValidator(pattern, message=message)], **kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "string", "pattern": self.pattern}


class ApiFilterSet(django_filters.FilterSet):
    """FilterSet whose filters all document themselves (checked at class creation)."""

    @classmethod
    def get_filters(cls) -> dict[str, Any]:
        found = super().get_filters()
        for name, item in found.items():
            if not isinstance(item, SchemaMixin):
                raise TypeError(f"{cls.__name__}.{name}: API filters must document their schema")
        return found


class ApiFilterBackend(DjangoFilterBackend):
    """django-filter, raising (400) on any invalid value; the error names the parameter."""

    raise_exception = True

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        # Building the FilterSet's form costs more than many queries: skip it when no filter is asked for.
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None or not any(name in request.query_params for name in filterset_class.base_filters):
            return queryset
        return super().filter_queryset(request, queryset, view)


class ApiFilterExtension(OpenApiFilterExtension):
    target_class = "api.filters.base.ApiFilterBackend"
    priority = 1

    def get_schema_operation_parameters(self, auto_schema: Any, *args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        filterset_class = getattr(auto_schema.view, "filterset_class", None)
        if filterset_class is None:
            return []
        parameters = []
        for name, item in filterset_class.base_filters.items():
            schema = item.openapi_schema()
            if item.component:
                component = ResolvedComponent(
                    name=item.component, type=ResolvedComponent.SCHEMA, object=item.component, schema=schema
                )
                auto_schema.registry.register_on_missing(component)
                schema = component.ref
            parameter = build_parameter_type(
                name=name, schema=schema, location=OpenApiParameter.QUERY, description=str(item.description) or None
            )
            parameter["allowEmptyValue"] = True
            parameters.append(parameter)
        return parameters


# --- search and ordering ---------------------------------------------------------------------


class StrictSearchFilter(drf_filters.SearchFilter):
    def get_search_terms(self, request: Request) -> list[str]:
        value = request.query_params.get(self.search_param, "")
        if "\x00" in value or len(value) > MAX_TEXT_LENGTH:
            raise ValidationError(
                {self.search_param: [_("At most %(n)d characters, no NUL bytes.") % {"n": MAX_TEXT_LENGTH}]}
            )
        return super().get_search_terms(request)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        if not getattr(view, "search_fields", None):
            return []
        fields = ", ".join(str(field).lstrip("^=@$").replace("__", ".") for field in view.search_fields)
        return [
            {
                "name": self.search_param,
                "required": False,
                "in": "query",
                "description": f"Case-insensitive words, all of which must appear in one of: {fields}.",
                "schema": {"type": "string", "maxLength": MAX_TEXT_LENGTH, "pattern": NO_NUL_PATTERN},
            }
        ]


class StrictOrderingFilter(drf_filters.OrderingFilter):
    """One ordering key from the view's ``ordering_map`` (public name -> ORM path), optionally ``-``."""

    def _choices(self, view: Any) -> list[str]:
        names = list(view.ordering_map)
        return names + [f"-{name}" for name in names]

    def get_ordering(self, request: Request, queryset: Any, view: Any) -> list[str]:
        raw = request.query_params.get(self.ordering_param)
        if raw is None or raw == "":
            return list(view.ordering)
        if raw not in self._choices(view):
            raise ValidationError(
                {self.ordering_param: [_("Must be one of: %(choices)s.") % {"choices": ", ".join(self._choices(view))}]}
            )
        descending = raw.startswith("-")
        path = view.ordering_map[raw.lstrip("-")]
        return [f"-{path}" if descending else path]

    def filter_queryset(self, request: Request, queryset: QuerySet, view: Any) -> QuerySet:
        # Nulls last in both directions and on every database; the id makes pages deterministic.
        ordering = self.get_ordering(request, queryset, view)
        terms = [
            F(term[1:]).desc(nulls_last=True) if term.startswith("-") else F(term).asc(nulls_last=True)
            for term in ordering
        ]
        terms.append(F("id").desc() if ordering[0].startswith("-") else F("id").asc())
        return queryset.order_by(*terms)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        if not getattr(view, "ordering_map", None):
            return []
        return [
            {
                "name": self.ordering_param,
                "required": False,
                "in": "query",
                "description": "Sort key; prefix with '-' for descending.",
                "schema": {"type": "string", "enum": self._choices(view)},
                "allowEmptyValue": True,
            }
        ]


class TextFilter(SchemaMixin, django_filters.CharFilter):
    """Free text (a substring), bounded and without NUL bytes (PostgreSQL refuses those)."""

    def __init__(self, *args: Any, max_length: int, description: StrOrPromise = "", **kwargs: Any) -> None:
        self.max_length, self.description = max_length, description
        super().__init__(*args, max_length=max_length, **kwargs)

    def openapi_schema(self) -> dict[str, Any]:
        return {"type": "string", "maxLength": self.max_length, "pattern": NO_NUL_PATTERN}
