"""The upload form of /submit/: a result file written by the client, or its text pasted."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.utils.translation import gettext_lazy as _

TOO_LARGE = "too_large"


class SubmissionUploadForm(forms.Form):
    file = forms.FileField(
        label=_("Result file"), required=False, help_text=_("The JSON file written by gpuatlas-bench run --out ...")
    )
    text = forms.CharField(
        label=_("…or paste its content"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 8, "spellcheck": "false", "class": "mono"}),
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload, text = cleaned.get("file"), (cleaned.get("text") or "").strip()
        if bool(upload) == bool(text):
            raise forms.ValidationError(_("Choose a result file or paste its content (one of the two)."))
        limit = settings.SUBMISSION_MAX_BYTES
        if upload is not None and upload.size > limit:
            raise forms.ValidationError(
                _("The file is %(size)s bytes; the limit is %(limit)s bytes.") % {"size": upload.size, "limit": limit},
                code=TOO_LARGE,
            )
        return cleaned

    def body(self) -> bytes:
        """The submission exactly as uploaded (the file's bytes) or pasted."""
        upload = self.cleaned_data.get("file")
        if upload is not None:
            return b"".join(upload.chunks())
        return self.cleaned_data["text"].strip().encode("utf-8")
