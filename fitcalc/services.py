"""The fit calculator's one write: import a model's config.json from Hugging Face."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from fitcalc.errors import FitInputError, HubRefusal
from fitcalc.hub import hf_config_fetch
from fitcalc.models import HfModel
from fitcalc.selectors.hf_models import hf_model_spec_from_row


def hf_model_import(*, repo_id: str) -> HfModel:
    """Fetch ``repo_id``'s config.json from the Hub and store it, replacing an earlier import.

    The config is checked before it is stored: one the calculator can't read (a vision model
    without ``num_hidden_layers``, say) is refused here, so every stored model can be read.
    Raises FitInputError on field ``hf_model`` for a malformed id, and its HubRefusal for a model
    the Hub won't give or the calculator can't read, each naming the problem. Nothing follows
    the write: the fit page and API read the row when asked."""
    fetched = hf_config_fetch(repo_id=repo_id)
    row = HfModel(
        repo_id=fetched.repo_id,
        config=fetched.config,
        source_url=fetched.source_url,
        revision=fetched.revision,
        fetched_at=timezone.now(),
    )
    try:
        hf_model_spec_from_row(row=row)
    except HubRefusal:
        raise
    except FitInputError as error:
        raise HubRefusal(error.field, error.message, kind="unreadable") from None
    with transaction.atomic():
        stored, _created = HfModel.objects.update_or_create(
            repo_id=row.repo_id,
            defaults={
                "config": row.config,
                "source_url": row.source_url,
                "revision": row.revision,
                "fetched_at": row.fetched_at,
            },
        )
    return stored
