"""Create and delete watches (validation: watches/validation.py)."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from watches.models import Watch
from watches.selectors.readings import watch_readings
from watches.validation import WatchInvalid, WatchSpec, watch_is_past, watch_spec_check


def watch_create(*, user: User, spec: WatchSpec) -> tuple[Watch, str]:
    """Create a watch for ``user``; returns it and its webhook secret (empty without a webhook),
    which is never shown again. Its figure is read now and stored with whether it is already past
    the threshold: only a later crossing alerts. WatchInvalid names what is wrong."""
    fields = watch_spec_check(spec)
    secret = secrets.token_hex(32) if fields.get("webhook_url") else ""
    with transaction.atomic():
        # The user's row, locked: two creations at once cannot both pass the cap.
        get_user_model().objects.select_for_update().filter(pk=user.pk).first()
        if Watch.objects.of_user(user).count() >= settings.WATCHES_PER_ACCOUNT_MAX:
            raise WatchInvalid(
                {"non_field_errors": _("an account holds at most %(most)d watches: delete one first")
                 % {"most": settings.WATCHES_PER_ACCOUNT_MAX}}
            )  # fmt: skip
        watch = Watch(user=user, webhook_secret=secret, feed_token=secrets.token_urlsafe(32), **fields)
        reading = watch_readings(watches=[watch], fresh=False).get(watch.pk)
        if reading is not None and reading.value is not None:
            watch.last_value = reading.value
            watch.met = watch_is_past(watch=watch, value=reading.value)
            watch.value_since = timezone.now()
        watch.save()
    return watch, secret


def watch_delete(*, user: User, watch_id: int) -> bool:
    """Delete one of ``user``'s own watches, with its crossings and deliveries; another user's is never touched."""
    deleted, _by_model = Watch.objects.of_user(user).filter(pk=watch_id).delete()
    return deleted > 0
