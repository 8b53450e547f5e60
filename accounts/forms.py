from typing import Any

from django import forms
from django.contrib.auth import forms as auth_forms
from django.contrib.auth.forms import UserCreationForm
from django.utils.translation import gettext_lazy as _

from accounts.selectors import username_look_alike, username_taken


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


class _SameNameRefused:
    """A username form field refused when another account has the same name (username_normal)."""

    instance: Any
    cleaned_data: dict[str, Any]

    def clean_username(self) -> str:
        username = self.cleaned_data["username"]
        taken = username_taken(username=username, exclude_pk=self.instance.pk)
        if taken is not None:
            raise forms.ValidationError(
                _("Another account is already called %(name)s (names are the same in any case or width).")
                % {"name": taken},
                code="unique",
            )
        return username


class AdminUserCreationForm(_SameNameRefused, auth_forms.AdminUserCreationForm):  # type: ignore[misc,type-arg]
    """The admin's new-user form: a name that is another account's in another case or width is refused."""


class AdminUserChangeForm(_SameNameRefused, auth_forms.UserChangeForm):  # type: ignore[misc,type-arg]
    """The admin's user form: renaming to another account's name in another case or width is refused."""
