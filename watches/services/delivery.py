"""Send one alert (an email or a webhook POST) and log how it went.

``delivery_attempt`` makes one attempt and records it; the Celery task (watches/tasks.py) retries
an attempt that may succeed later (a timeout, a 5xx, an SMTP error) with exponential backoff, and
calls ``delivery_give_up`` when the retries are spent. A webhook that failed
``WATCH_WEBHOOK_DISABLE_AFTER`` deliveries in a row is disabled: the feed and the email go on.
A delivery already sent or given up is not sent again (a task delivered twice does nothing).
"""

from __future__ import annotations

import enum
import logging
import smtplib

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F
from django.urls import reverse
from django.utils import timezone, translation
from django.utils.translation import gettext as _

from watches.describe import crossing_text, threshold_text, watch_text
from watches.models import Delivery, Watch
from watches.webhook_address import WebhookRefused, webhook_target
from watches.webhook_send import webhook_post

logger = logging.getLogger(__name__)

DONE = (Delivery.Status.SENT, Delivery.Status.FAILED)


class Outcome(enum.Enum):
    SENT = "sent"
    RETRY = "retry"  # may succeed later
    FAILED = "failed"  # will not: given up
    NOTHING = "nothing"  # already sent or given up


def delivery_attempt(*, delivery_id: int) -> Outcome:
    """One attempt at sending the delivery; recorded on it. Never raises for the receiver's faults."""
    delivery = (
        Delivery.objects.select_related("crossing__watch__gpu", "crossing__watch__provider")
        .filter(pk=delivery_id)
        .first()
    )
    if delivery is None or delivery.status in DONE:
        return Outcome.NOTHING
    if delivery.channel == Delivery.Channel.EMAIL:
        ok, status, error, retry = _email(delivery)
    else:
        ok, status, error, retry = _webhook(delivery)
    now = timezone.now()
    delivery.attempts += 1
    delivery.attempted_at = now
    delivery.response_status = status
    delivery.error = error[:500]
    if ok:
        delivery.status, delivery.sent_at = Delivery.Status.SENT, now
    else:
        delivery.status = Delivery.Status.RETRYING if retry else Delivery.Status.FAILED
    with transaction.atomic():
        delivery.save(update_fields=["attempts", "attempted_at", "response_status", "error", "status", "sent_at"])
        if delivery.channel == Delivery.Channel.WEBHOOK and ok:
            Watch.objects.filter(pk=delivery.crossing.watch_id).update(webhook_failures=0)
        if delivery.channel == Delivery.Channel.WEBHOOK and not ok and not retry:
            _webhook_failure_count(delivery.crossing.watch_id)
    if ok:
        return Outcome.SENT
    return Outcome.RETRY if retry else Outcome.FAILED


def delivery_give_up(*, delivery_id: int) -> None:
    """The retries are spent: the delivery failed, and counts towards disabling the webhook."""
    with transaction.atomic():
        delivery = Delivery.objects.select_for_update().filter(pk=delivery_id).select_related("crossing").first()
        if delivery is None or delivery.status in DONE:
            return
        delivery.status = Delivery.Status.FAILED
        delivery.save(update_fields=["status"])
        if delivery.channel == Delivery.Channel.WEBHOOK:
            _webhook_failure_count(delivery.crossing.watch_id)


def _webhook_failure_count(watch_id: int) -> None:
    Watch.objects.filter(pk=watch_id).update(webhook_failures=F("webhook_failures") + 1)
    Watch.objects.filter(
        pk=watch_id, webhook_failures__gte=settings.WATCH_WEBHOOK_DISABLE_AFTER, webhook_disabled_at__isnull=True
    ).update(webhook_disabled_at=timezone.now())


def _webhook(delivery: Delivery) -> tuple[bool, int | None, str, bool]:
    watch = delivery.crossing.watch
    if not watch.webhook_active:
        return False, None, "the webhook was removed or disabled", False
    try:
        # Checked again now: the name may resolve elsewhere than when the watch was created.
        target = webhook_target(watch.webhook_url)
    except WebhookRefused as refused:
        return False, None, str(refused), refused.transient
    answer = webhook_post(
        target=target,
        body=delivery.body.encode(),
        secret=watch.webhook_secret,
        delivery_id=delivery.pk,
        timeout_s=settings.WATCH_WEBHOOK_TIMEOUT_S,
    )
    # A 4xx other than 408/429 is the receiver saying no: asking again will not change it.
    retry = answer.status is None or answer.status >= 500 or answer.status in (408, 429)
    return answer.ok, answer.status, answer.error, retry and not answer.ok


def _email(delivery: Delivery) -> tuple[bool, int | None, str, bool]:
    watch = delivery.crossing.watch
    if not watch.email:
        return False, None, "the email address was removed", False
    with translation.override(settings.LANGUAGE_CODE):
        subject = _("GPU Atlas: %(what)s") % {"what": crossing_text(delivery.crossing)}
        lines = [
            crossing_text(delivery.crossing),
            "",
            _("Your watch: %(what)s, %(threshold)s.") % {"what": watch_text(watch), "threshold": threshold_text(watch)},
            _("It alerts again once the figure has gone back past the threshold."),
            "",
            _("All alerts of this watch (Atom feed): %(url)s")
            % {"url": settings.SITE_URL + reverse("watches:watch-feed", args=[watch.feed_token])},
            _("Your watches: %(url)s") % {"url": settings.SITE_URL + reverse("accounts:account")},
        ]
    try:
        send_mail(subject[:200], "\n".join(lines), None, [watch.email], fail_silently=False)
    except (smtplib.SMTPException, OSError) as exc:
        logger.warning("alert email for delivery %s failed: %s", delivery.pk, exc)
        permanent = isinstance(exc, smtplib.SMTPRecipientsRefused)
        return False, None, f"{type(exc).__name__}: {exc}"[:500], not permanent
    return True, None, "", False
