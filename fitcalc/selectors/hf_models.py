"""Hugging Face models as the fit calculator reads them: from the stored import, never the Hub."""

from __future__ import annotations

import datetime as dt

from django.conf import settings
from django.db.models import Max, QuerySet
from django.utils.translation import gettext as _

from fitcalc.errors import FitInputError
from fitcalc.models import HfModel
from fitcalc.presets import Citation, ModelSpec, model_spec_from_config

FIELD = "hf_model"
#: The ``quantization_config.quant_method`` values that name a weight format the calculator knows.
NATIVE_QUANT_METHODS = {"fp8": "fp8", "mxfp4": "mxfp4", "gptq": "gptq", "awq": "awq"}


def hf_model_spec_from_row(*, row: HfModel) -> ModelSpec:
    """The ModelSpec of a stored (or about to be stored) config.json, cited with the day it was read.

    Raises FitInputError on ``hf_model`` for a config without the keys the calculator needs."""
    config = row.config
    citation = Citation(
        title=f"{row.repo_id}: config.json",
        publisher="Hugging Face",
        date=row.fetched_at.date().isoformat(),
        url=row.source_url,
    )
    quantization = config.get("quantization_config")
    native = None
    if isinstance(quantization, dict):
        native = NATIVE_QUANT_METHODS.get(str(quantization.get("quant_method", "")).lower())
    return model_spec_from_config(
        config=config,
        slug=f"hf:{row.repo_id}",
        name=row.repo_id,
        hf_repo=row.repo_id,
        citations=(citation,),
        native_precision=native,
        notes=(_("shapes read from %(id)s's config.json on Hugging Face") % {"id": row.repo_id},),
    )


def hf_model_missing_message(*, repo_id: str) -> str:
    """Why a read can't use ``repo_id``, and what to do: import it, or (offline) use a preset."""
    if not settings.FITCALC_HF_ONLINE:
        return _(
            "%(id)s is not imported, and this deployment is offline, so models can't be loaded from "
            "Hugging Face: choose one of the presets or give the parameter count"
        ) % {"id": repo_id}
    return _(
        "%(id)s has not been imported yet: import it from Hugging Face first (POST /api/v1/fit/models/ "
        "with its hf_id, or the import button on the fit page)"
    ) % {"id": repo_id}


def hf_model_get(*, repo_id: str) -> HfModel | None:
    """The stored import of ``repo_id``, or None."""
    return HfModel.objects.filter(repo_id=repo_id).first()


def hf_model_spec(*, repo_id: str) -> ModelSpec:
    """The ModelSpec of an imported model; FitInputError on ``hf_model`` if it was never imported."""
    row = hf_model_get(repo_id=repo_id)
    if row is None:
        raise FitInputError(FIELD, hf_model_missing_message(repo_id=repo_id))
    return hf_model_spec_from_row(row=row)


def hf_model_list() -> QuerySet[HfModel]:
    """Every imported model, by id."""
    return HfModel.objects.order_by("repo_id")


def hf_models_newest_import() -> dt.datetime | None:
    """When the newest import was stored (None before the first): part of the key of a cached fit
    page, which an import changes without a new data version (one query on a small table)."""
    return HfModel.objects.aggregate(newest=Max("fetched_at"))["newest"]
