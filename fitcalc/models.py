"""What the fit calculator stores: the Hugging Face models imported into it."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

#: The longest id the Hub allows: 96 characters of owner, a slash, 96 of name.
MAX_HF_ID = 193


class HfModel(models.Model):
    """A Hugging Face model's config.json as it was imported (fitcalc.services.hf_model_import).

    The fit calculator reads the model from here and never from the Hub, so a read costs no
    network call and answers the same until the model is imported again."""

    repo_id = models.CharField(_("Hugging Face id"), max_length=MAX_HF_ID, unique=True)
    config = models.JSONField(_("config.json"))
    source_url = models.URLField(_("source"), max_length=500)
    revision = models.CharField(_("commit"), max_length=64, blank=True, help_text=_("Empty if the Hub did not say."))
    fetched_at = models.DateTimeField(_("fetched at"))

    class Meta:
        verbose_name = _("Hugging Face model")
        ordering = ["repo_id"]

    def __str__(self) -> str:
        return self.repo_id
