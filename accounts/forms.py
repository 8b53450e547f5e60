from django import forms
from django.utils.translation import gettext_lazy as _


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, label=_("Token name"), help_text=_("For example: lab workstation"))
