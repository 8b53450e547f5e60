from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.utils.translation import gettext_lazy as _

from accounts.selectors import username_look_alike


class TokenCreateForm(forms.Form):
    name = forms.CharField(max_length=100, label=_("Token name"), help_text=_("For example: lab workstation"))


class SignupForm(UserCreationForm):  # type: ignore[type-arg]
    """Django's sign-up form, refusing a username that reads the same as an existing one."""

    def clean_username(self) -> str:
        username = super().clean_username()
        if username and username_look_alike(username=username) is not None:
            raise forms.ValidationError(
                _(
                    "This username looks the same as an existing one (some of its letters are look-alikes "
                    "from other alphabets, or it differs only in letters that look alike, such as a lower-case L "
                    "and a capital i): choose another."
                ),
                code="confusable",
            )
        return username
