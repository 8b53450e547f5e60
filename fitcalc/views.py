"""The /fit/ page: the form, then fit, time and cost on every GPU, a chart and buy versus rent.

Thin: the form validates (fitcalc.forms), the selector reads and computes (fitcalc.selectors),
the figure is a pure function (fitcalc.figures). Invalid input re-renders the form with the
message beside the field; it never raises.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from fitcalc.errors import FitInputError
from fitcalc.figures import cost_time_points, fit_cost_time_figure
from fitcalc.forms import MODE_LABELS, PRECISION_LABELS, FitForm
from fitcalc.plan import MAX_HOURS
from fitcalc.presets import PRESETS
from fitcalc.selectors import fit_compute
from fitcalc.selectors_serving import fit_serving_answer, serving_target_parse

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
            "kv_cache_precision",
            "context",
            "batch",
            "flash_attention",
            "activation_checkpointing",
            "lora_rank",
            "lora_targets",
        ),
    ),
    ("work", ("tokens", "samples", "epochs", "dataset_size")),
    ("money", ("price", "hours_per_day", "electricity_price_per_kwh", "condition", "currency")),
)


def fit_view(request: HttpRequest) -> HttpResponse:
    """GET /fit/: with no parameters, the default example; otherwise the submitted inputs."""
    submitted = any(name in request.GET for name in FitForm.base_fields)
    form = FitForm(data=request.GET if submitted else PAGE_DEFAULTS)
    result = None
    figure = None
    if form.is_valid():
        try:
            result = fit_compute(request=form.fit_request)
        except FitInputError as error:
            form.add_error(error.field if error.field in form.fields else None, error.message)
    if result is not None:
        figure = fit_cost_time_figure(cost_time_points(result.fitting), currency=result.currency, max_hours=MAX_HOURS)
    serving = None
    target = serving_target_parse(request.GET.get("tokens_per_user"))
    if result is not None and result.request.mode == "inference" and result.request.serving == "batched":
        serving = fit_serving_answer(
            preset=result.request.model.slug, precision=result.request.precision, target=target
        )
    groups = [(key, [form[name] for name in names]) for key, names in FIELD_GROUPS]
    return render(
        request,
        "fitcalc/fit.html",
        {
            "form": form,
            "groups": groups,
            "result": result,
            "figure": figure,
            "presets": sorted(PRESETS.values(), key=lambda spec: spec.name),
            "max_hours": MAX_HOURS,
            "mode_label": MODE_LABELS.get(result.request.mode, "") if result else "",
            "work_unit_label": WORK_LABELS.get(result.request.work.unit, "") if result and result.request.work else "",
            "work_given_label": WORK_LABELS.get(result.request.work.given_as, "")
            if result and result.request.work
            else "",
            "no_power_note": _("no electricity price given: power is not counted"),
            "precision_label": PRECISION_LABELS.get(result.request.precision, "") if result else "",
            "serving": serving,
            "serving_targets": (10, 20, 50, 100),
        },
    )
