"""Template tags of the watches, for pages of the apps below it: the account page's list (the
account view cannot import this app, which sits above accounts) and the words of a watch."""

from __future__ import annotations

from typing import Any

from django import template

from watches.describe import metric_unit, threshold_text, watch_text
from watches.models import Delivery, Watch
from watches.selectors.lists import watches_of_user

register = template.Library()


@register.simple_tag
def user_watches(user: Any) -> list[Watch]:
    """The signed-in user's own watches with their delivery state; none for anyone else."""
    if user is None or not user.is_authenticated:
        return []
    return list(watches_of_user(user=user))


@register.filter
def watch_words(watch: Watch) -> str:
    return watch_text(watch)


@register.filter
def watch_threshold(watch: Watch) -> str:
    return threshold_text(watch)


@register.filter
def watch_unit(watch: Watch) -> str:
    return metric_unit(watch)


@register.filter
def delivery_status(value: str) -> str:
    """A delivery's status in the page's language."""
    return str(Delivery.Status(value).label) if value in Delivery.Status.values else value
