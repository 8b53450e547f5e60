"""Atom feeds that need no account (Django's syndication framework).

* A watch's crossings, at an address only its owner knows (``/watches/feed/<token>/``: 256 random
  bits, shown on the account page).
* A GPU's price cuts (``/gpus/<slug>/feed/``): every offer of it listed cheaper than before.
"""

from __future__ import annotations

import datetime as dt

from django.contrib.syndication.views import Feed
from django.http import Http404, HttpRequest
from django.urls import reverse
from django.utils.feedgenerator import Atom1Feed
from django.utils.translation import gettext as _

from catalog.models import Gpu
from catalog.selectors.gpus import gpu_for_page
from gpuatlas.data_version import compute_spend
from watches.describe import crossing_text, threshold_text, watch_text
from watches.models import Crossing, Watch
from watches.selectors.lists import PriceCut, gpu_price_cuts, watch_by_feed_token, watch_crossings


class WatchFeed(Feed):
    feed_type = Atom1Feed

    def get_object(self, request: HttpRequest, token: str) -> Watch:  # type: ignore[override]
        watch = watch_by_feed_token(token=token)
        if watch is None:
            raise Http404("No such feed.")
        return watch

    def title(self, obj: Watch) -> str:
        return _("GPU Atlas watch: %(what)s") % {"what": watch_text(obj)}

    def subtitle(self, obj: Watch) -> str:
        return _("Each time the figure went %(threshold)s.") % {"threshold": threshold_text(obj)}

    def link(self, obj: Watch) -> str:
        if obj.gpu is not None:
            return reverse("dashboard:gpu-detail", args=[obj.gpu.slug])
        return reverse("dashboard:rankings")

    def items(self, obj: Watch) -> list[Crossing]:
        return watch_crossings(watch=obj)

    def item_title(self, item: Crossing) -> str:
        return crossing_text(item)

    def item_description(self, item: Crossing) -> str:
        return _("Threshold: %(threshold)s.") % {"threshold": threshold_text(item.watch)}

    def item_link(self, item: Crossing) -> str:
        slug = item.cause.get("gpu")
        base = reverse("dashboard:gpu-detail", args=[slug]) if slug else reverse("dashboard:rankings")
        return f"{base}#crossing-{item.pk}"

    def item_guid(self, item: Crossing) -> str:
        return f"urn:gpu-atlas:crossing:{item.pk}"

    item_guid_is_permalink = False

    def item_pubdate(self, item: Crossing) -> dt.datetime:
        return item.occurred_at

    def item_updateddate(self, item: Crossing) -> dt.datetime:
        return item.occurred_at


class GpuPriceFeed(Feed):
    feed_type = Atom1Feed

    def get_object(self, request: HttpRequest, slug: str) -> Gpu:  # type: ignore[override]
        gpu = gpu_for_page(slug=slug)
        if gpu is None:
            raise Http404(f"No GPU with the slug {slug!r}.")
        return gpu

    def title(self, obj: Gpu) -> str:
        return _("%(gpu)s: price cuts on GPU Atlas") % {"gpu": obj.name}

    def subtitle(self, obj: Gpu) -> str:
        return _("Each cloud offer of the %(gpu)s listed cheaper than before, per GPU-hour in USD.") % {"gpu": obj.name}

    def link(self, obj: Gpu) -> str:
        return reverse("dashboard:gpu-detail", args=[obj.slug])

    def items(self, obj: Gpu) -> list[PriceCut]:
        compute_spend()  # never cached: counted against the address's render allowance
        return gpu_price_cuts(gpu=obj)

    def item_title(self, item: PriceCut) -> str:
        return _("%(provider)s %(instance)s: %(before).4g → %(after).4g USD per GPU-hour%(spot)s") % {
            "provider": item.provider,
            "instance": item.instance_type,
            "before": item.before_usd,
            "after": item.after_usd,
            "spot": " (" + _("spot") + ")" if item.is_spot else "",
        }

    def item_description(self, item: PriceCut) -> str:
        return _("Region %(region)s, %(count)g GPUs per machine, listed at this price since %(date)s.") % {
            "region": item.region or "—",
            "count": item.gpu_count,
            "date": item.observed_at.date().isoformat(),
        }

    def item_link(self, item: PriceCut) -> str:
        return reverse("dashboard:gpu-detail", args=[item.gpu_slug]) + f"#price-cut-{item.observation_id}"

    def item_guid(self, item: PriceCut) -> str:
        return f"urn:gpu-atlas:price-cut:{item.observation_id}"

    item_guid_is_permalink = False

    def item_pubdate(self, item: PriceCut) -> dt.datetime:
        return item.observed_at

    def item_updateddate(self, item: PriceCut) -> dt.datetime:
        return item.observed_at
