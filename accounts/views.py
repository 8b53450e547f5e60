"""Account page: create and revoke API tokens; sign up."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.forms import SignupForm, TokenCreateForm
from accounts.services import api_token_create, api_token_revoke
from accounts.throttles import sign_up_throttles, throttle_posts, token_create_throttles


@login_required
@throttle_posts(token_create_throttles)
def account_view(request: HttpRequest) -> HttpResponse:
    new_key = None
    form = TokenCreateForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        _token, new_key = api_token_create(user=request.user, name=form.cleaned_data["name"])  # type: ignore[arg-type]
        messages.success(request, _("Token created. Copy it now: it is shown only once."))
        form = TokenCreateForm()
    tokens = request.user.api_tokens.all()  # type: ignore[union-attr,misc]
    submissions = request.user.submissions.order_by("-received_at")[:20]  # type: ignore[union-attr,misc]
    return render(
        request,
        "accounts/account.html",
        {"form": form, "tokens": tokens, "new_key": new_key, "submissions": submissions},
    )


@login_required
@require_POST
def token_revoke_view(request: HttpRequest, token_id: int) -> HttpResponse:
    if api_token_revoke(user=request.user, token_id=token_id):  # type: ignore[arg-type]
        messages.success(request, _("Token revoked."))
    else:
        messages.error(request, _("No such active token on your account."))
    return redirect("accounts:account")


@throttle_posts(sign_up_throttles)
def signup_view(request: HttpRequest) -> HttpResponse:
    form = SignupForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        user = form.save()
        login(request, user)
        return redirect("accounts:account")
    return render(request, "accounts/signup.html", {"form": form})
