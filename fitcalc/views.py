"""The /fit/ page: the form, then fit, time and cost on every GPU, a chart and buy versus rent;
and the one write behind it, importing a model from Hugging Face.

Thin: the form validates each field (fitcalc.forms), the selectors build the request and compute
(fitcalc.selectors), the figure is a pure function (fitcalc.figures). Invalid input re-renders
the form with the message beside the field; it never raises. A read never calls the Hub: a
Hugging Face id that was not imported is answered with the import button, whose POST
(:func:`hf_model_import_view`) fetches the config and comes back to the page.

The page's parts that hold no user (the answer, the form, the tables and charts) are rendered
without a request and cached by the query and the data version, as the rankings' bodies are
(dashboard/fragments.py); the import form between them, with the visitor's CSRF token or the
sign-in link, is rendered on every request.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_POST

from accounts.throttles import hf_import_throttles, throttle_posts
from fitcalc.errors import FitInputError
from fitcalc.figures import cost_time_points, fit_cost_time_figure
from fitcalc.forms import MODE_LABELS, PRECISION_LABELS, FitForm
from fitcalc.hub import REPO_ID_PATTERN
from fitcalc.models import MAX_HF_ID
from fitcalc.plan import MAX_HOURS
from fitcalc.presets import PRESETS
from fitcalc.selectors.fit import FitResult, fit_compute
from fitcalc.selectors.fit_request import fit_request_from_form
from fitcalc.selectors.hf_models import hf_model_get, hf_models_newest_import
from fitcalc.selectors.serving_plans import fit_serving_answer, owned_serving_costs, serving_target_parse
from fitcalc.services import hf_model_import
from gpuatlas.data_version import data_version_cached
from gpuatlas.render_limits import page_renders_limited

#: The page's first view: the issue's first example, "fine-tune a 7B-class model with LoRA", on
#: 100 million tokens (about 49,000 sequences of 2,048 tokens).
PAGE_DEFAULTS = {"model": "llama-3-8b", "mode": "lora", "context": "2048", "batch": "1", "tokens": "100000000"}

WORK_LABELS = {"tokens": gettext_lazy("tokens"), "samples": gettext_lazy("samples"), "epochs": gettext_lazy("epochs")}

FIELD_GROUPS = (
    ("model", ("model", "hf_model", "params", "kind", "layers", "hidden", "heads", "kv_heads", "head_dim")),
    (
        "job",
        (
            "mode",
            "precision",
            "serving",
            "users",
            "input_len",
            "output_len",
            "kv_cache_precision",
            "context",
            "batch",
            "flash_attention",
            "activation_checkpointing",
            "lora_rank",
            "lora_targets",
        ),
    ),
    ("work", ("tokens", "samples", "epochs", "dataset_size", "days")),
    ("money", ("price", "hours_per_day", "electricity_price_per_kwh", "condition", "currency")),
)


class HfImportForm(forms.Form):
    """The import button's one field: the Hugging Face id, checked for its shape only."""

    hf_id = forms.CharField(max_length=MAX_HF_ID, strip=True)


def _fit_result(form: FitForm) -> FitResult | None:
    """The answer to a form, or None with the reason added to the form beside its field."""
    request = fit_request_from_form(form=form)
    if request is None:
        return None
    try:
        return fit_compute(request=request)
    except FitInputError as error:
        form.add_error(error.field if error.field in form.fields else None, error.message)
        return None


def _not_imported(form: FitForm) -> str:
    """The form's Hugging Face id when no import of it is stored (the page offers the button)."""
    repo_id = str(form.data.get("hf_model") or "").strip()
    if not form.has_error("hf_model") or not REPO_ID_PATTERN.match(repo_id):
        return ""
    return repo_id if hf_model_get(repo_id=repo_id) is None else ""


def _fit_body(form: FitForm, *, tokens_per_user: str | None, query: str) -> dict[str, str]:
    """The page's parts that hold no user: the HTML above the import form (the answer, the form)
    and below it (the presets, the tables and charts), rendered without a request, and the
    Hugging Face id to offer the import of ("" for none)."""
    result = _fit_result(form)
    figure = None
    if result is not None:
        figure = fit_cost_time_figure(cost_time_points(result.fitting), currency=result.currency, max_hours=MAX_HOURS)
    serving = None
    target = serving_target_parse(tokens_per_user)
    if result is not None and result.request.mode == "inference" and result.request.serving == "batched":
        serving = fit_serving_answer(
            preset=result.request.model.slug,
            precision=result.request.precision,
            target=target,
            input_len=result.request.input_len,
            output_len=result.request.output_len,
        )
    owned = (
        owned_serving_costs(
            rows=result.buy_vs_rent,
            serving=serving,
            price_per_kwh=result.request.electricity_price_per_kwh,
            hours_per_day=result.request.hours_per_day,
        )
        if result is not None
        else {}
    )
    groups = [(key, [form[name] for name in names]) for key, names in FIELD_GROUPS]
    context = {
        "form": form,
        "groups": groups,
        "result": result,
        "figure": figure,
        "presets": sorted(PRESETS.values(), key=lambda spec: spec.name),
        "max_hours": MAX_HOURS,
        "mode_label": MODE_LABELS.get(result.request.mode, "") if result else "",
        "work_unit_label": WORK_LABELS.get(result.request.work.unit, "") if result and result.request.work else "",
        "work_given_label": WORK_LABELS.get(result.request.work.given_as, "") if result and result.request.work else "",
        "no_power_note": _("no electricity price given: power is not counted"),
        "precision_label": PRECISION_LABELS.get(result.request.precision, "") if result else "",
        "serving": serving,
        "serving_targets": (10, 20, 50, 100),
        "buy_rows": [(row, owned.get(row.slug)) for row in result.buy_vs_rent] if result else [],
        "owned_serving": bool(owned),
        "query": query,
    }
    return {
        "top": render_to_string("fitcalc/_fit_top.html", context),
        "bottom": render_to_string("fitcalc/_fit_bottom.html", context),
        "hf_not_imported": _not_imported(form),
    }


def _fit_page(request: HttpRequest, body: dict[str, str], *, status: int = 200) -> HttpResponse:
    """The page around its parts (``_fit_body``): the import form, with the user's CSRF token or
    the sign-in link, rendered per request."""
    return render(
        request,
        "fitcalc/fit.html",
        {
            # Our own HTML, escaped by the fragments' templates.
            "body_top": mark_safe(body["top"]),  # noqa: S308
            "body_bottom": mark_safe(body["bottom"]),  # noqa: S308
            "hf_not_imported": body["hf_not_imported"],
            "hf_online": settings.FITCALC_HF_ONLINE,
        },
        status=status,
    )


@page_renders_limited
def fit_view(request: HttpRequest) -> HttpResponseBase:
    """GET /fit/: with no parameters, the default example; otherwise the submitted inputs (each
    answer computed: it counts against the address's page render limit)."""
    submitted = any(name in request.GET for name in FitForm.base_fields)
    # The parts depend on the query alone (the form's fields, the speed per user, the links that
    # repeat the query) and the data: cached under the data version like the rankings' bodies,
    # at most DATA_VERSION_CACHE_VARIANTS queries per version (a computed one is spent). A Hugging
    # Face import moves no data version, so a question naming a Hugging Face model has the newest
    # import in its key: the page the import redirects to answers with the model at once.
    imported = hf_models_newest_import() if "hf_model" in request.GET else None
    body = data_version_cached(
        "page:fit",
        (list(request.GET.lists()), imported),
        lambda: _fit_body(
            FitForm(data=request.GET if submitted else PAGE_DEFAULTS),
            tokens_per_user=request.GET.get("tokens_per_user"),
            query=request.GET.urlencode(),
        ),
        bounded=True,
    )
    return _fit_page(request, body)


@require_POST
@login_required
@throttle_posts(hf_import_throttles)
def hf_model_import_view(request: HttpRequest) -> HttpResponse:
    """POST /fit/models/import/: fetch a model's config.json from Hugging Face and store it, then
    show it on the fit page; a refusal shows the fit page with the reason beside the id (400).
    Signed-in users only, within the import allowance (accounts.throttles.hf_import_throttles)."""
    importing = HfImportForm(data=request.POST)
    repo_id = request.POST.get("hf_id", "")[:MAX_HF_ID]
    form = FitForm(data={"hf_model": repo_id})
    try:
        if not importing.is_valid():
            raise FitInputError("hf_model", str(importing.errors["hf_id"][0]))
        stored = hf_model_import(repo_id=importing.cleaned_data["hf_id"])
    except FitInputError as error:
        if form.is_valid() or not form.has_error("hf_model"):
            form.add_error("hf_model", error.message)
        return _fit_page(request, _fit_body(form, tokens_per_user=None, query=""), status=400)
    return HttpResponseRedirect(f"{reverse('fitcalc:fit')}?{urlencode({'hf_model': stored.repo_id})}")
