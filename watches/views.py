"""The watch pages: a new watch (from a GPU page's or a ranking row's bell), its deletion (from the
account page, which lists them: templates/watches/_account_watches.html)."""

from __future__ import annotations

from decimal import Decimal
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from accounts.throttles import throttle_posts
from dashboard.ranking.use_cases import USE_CASES
from watches.describe import question_text
from watches.forms import WatchForm
from watches.models import Watch, WatchKind, WatchMetric
from watches.selectors.readings import watch_preview
from watches.services.watches import watch_create, watch_delete
from watches.throttles import watch_create_throttles
from watches.validation import WatchInvalid, WatchSpec, watch_spec_check

# Parameters of the bell's link that are the watch's, not the ranking question's.
OWN_PARAMETERS = ("gpu", "kind")


def _initial(request: HttpRequest) -> dict[str, Any]:
    """The form as the bell's link fills it: a GPU, and the ranking question for a ranking row."""
    query = {name: value for name, value in request.GET.items() if name not in OWN_PARAMETERS}
    ranking = request.GET.get("kind") == WatchKind.RANKING or bool(query)
    user_email = getattr(request.user, "email", "")
    if not ranking:
        return {"kind": WatchKind.PRICE, "gpu": request.GET.get("gpu", ""), "currency": "USD", "email": user_email}
    return {
        "kind": WatchKind.RANKING,
        "gpu": request.GET.get("gpu", ""),
        "any_gpu": not request.GET.get("gpu"),
        "query": urlencode(query),
        "metric": WatchMetric.PERF_PER_DOLLAR,
        "email": user_email,
    }


def _preview(form: WatchForm) -> dict[str, Any]:
    """What the form asks about, in words, and its figure now; or the problems with the question."""
    data = form.cleaned_data if form.is_bound and form.is_valid() else form.initial
    kind = data.get("kind", WatchKind.PRICE)
    spec = WatchSpec(
        kind=kind,
        threshold=Decimal(1),  # any: the preview reads the figure, not the condition
        metric=data.get("metric") or (WatchMetric.PERF_PER_DOLLAR if kind == WatchKind.RANKING else ""),
        gpu="" if data.get("any_gpu") else data.get("gpu", ""),
        query=QueryDict(data.get("query", "")).dict(),
        currency=data.get("currency") or "USD",
    )
    try:
        fields = watch_spec_check(spec)
    except WatchInvalid as invalid:
        return {"problems": invalid.errors}
    use_case = USE_CASES.get(fields.get("use_case", ""))
    return {
        "watch": Watch(**fields),
        "reading": watch_preview(fields=fields),
        "question": question_text(fields["query"]) if kind == WatchKind.RANKING else "",
        "is_llm": use_case is not None and use_case.is_llm,
    }


@login_required
@throttle_posts(watch_create_throttles)
def watch_new_view(request: HttpRequest) -> HttpResponse:
    form = WatchForm(request.POST or None, initial=_initial(request))
    if request.method == "POST" and form.is_valid():
        try:
            watch, secret = watch_create(user=request.user, spec=form.spec())  # type: ignore[arg-type]
        except WatchInvalid as invalid:
            for name, reason in invalid.errors.items():
                form.add_error(name if name in form.fields else None, reason)
        else:
            feed_url = request.build_absolute_uri(reverse("watches:watch-feed", args=[watch.feed_token]))
            return render(request, "watches/created.html", {"watch": watch, "secret": secret, "feed_url": feed_url})
    return render(
        request,
        "watches/new.html",
        {"form": form, "preview": _preview(form), "cap": settings.WATCHES_PER_ACCOUNT_MAX},
    )


@login_required
@require_POST
def watch_delete_view(request: HttpRequest, watch_id: int) -> HttpResponse:
    if watch_delete(user=request.user, watch_id=watch_id):  # type: ignore[arg-type]
        messages.success(request, _("Watch deleted."))
    else:
        messages.error(request, _("No such watch on your account."))
    return redirect(reverse("accounts:account") + "#watches")
