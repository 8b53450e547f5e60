"""Catalogue pages: the searchable GPU list (the GPU page is the dashboard's: dashboard/urls.py, dashboard/gpu_views.py)."""

from __future__ import annotations

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict
from django.utils.translation import gettext_lazy as _

from catalog.forms import GpuFilterForm
from catalog.models import Architecture, Gpu, Vendor
from catalog.selectors.gpus import gpu_catalogue
from gpuatlas.data_version import data_version_cached
from gpuatlas.page_bodies import body_render, page_response
from gpuatlas.render_limits import page_renders_limited

# The query parameters the catalogue reads: its cached body is keyed by these alone, so other
# parameters (tracking tags, typos) neither make a new entry nor reach the page's links.
CATALOGUE_PARAMS = (*GpuFilterForm.base_fields, "page")


@page_renders_limited
def gpu_list_view(request: HttpRequest) -> HttpResponse:
    asked = QueryDict(mutable=True)
    for name in CATALOGUE_PARAMS:
        if name in request.GET:
            asked[name] = request.GET[name]
    body = data_version_cached("page:catalogue", sorted(asked.items()), lambda: _catalogue_body(asked), bounded=True)
    return page_response(request, template="catalog/gpu_list.html", body=body)


def _catalogue_body(asked: QueryDict) -> str:
    """The filtered, sorted catalogue page for the parameters ``asked`` (rendered without a request)."""
    form = GpuFilterForm(asked or None)
    filters = dict(form.cleaned_data) if form.is_valid() else {}
    scope = filters.pop("scope", "") or "dl"
    sort = filters.pop("sort", "") or ""
    rows = gpu_catalogue(scope=scope, sort=sort, **{k: v for k, v in filters.items() if v not in (None, "")})
    page = Paginator(rows, 50).get_page(asked.get("page"))
    query = asked.copy()
    query.pop("page", None)
    sortless = query.copy()
    sortless.pop("sort", None)
    scopeless = query.copy()
    scopeless.pop("scope", None)
    return body_render(
        template="catalog/gpu_list.html",
        context={
            "form": form,
            "page": page,
            "scope": scope,
            "sort": sort,
            "query_string": query.urlencode(),
            "sortless_query": sortless.urlencode(),
            "all_href": "?" + "&".join(filter(None, [scopeless.urlencode(), "scope=all"])),
            "dl_href": "?" + scopeless.urlencode(),
            "vendors": Vendor.objects.all(),
            "architectures": Architecture.objects.all(),
            "columns": CATALOGUE_COLUMNS,
            "all_count": Gpu.objects.count(),
        },
    )


# (sort key, header, unit): the sortable columns of the catalogue, in page order.
CATALOGUE_COLUMNS = (
    ("memory", _("Memory"), "GiB"),
    ("bandwidth", _("Bandwidth"), "GB/s"),
    ("bf16", _("BF16 dense"), "TFLOPS"),
    ("fp8", _("FP8 dense"), "TFLOPS"),
    ("tdp", _("TDP"), "W"),
    ("price", _("Typical price"), _("USD/GPU-hour")),
    ("released", _("Released"), ""),
)
