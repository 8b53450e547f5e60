"""The provider catalogue (catalog/data/curated/providers.toml): slugs, display names, kinds.

Sources spell one company several ways (SkyPilot "lambda", FSDL "Lambda", the tracker
"lambdalabs"); ``provider_slug`` gives them one slug, the key offers are stored under. Pages show
the catalogue's curated name, never the slug: new providers are created with it and
``providers_catalogue_sync`` brings stored providers in line with the file at every import.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from django.utils.text import slugify

from catalog.models import Provider

CATALOGUE_PATH = Path(__file__).resolve().parents[2] / "data" / "curated" / "providers.toml"


@dataclass(frozen=True)
class ProviderEntry:
    slug: str
    name: str
    kind: str
    url: str
    name_source: str


@cache
def provider_catalogue() -> tuple[dict[str, ProviderEntry], dict[str, str]]:
    """(slug -> entry, alias -> slug), read once per process from the curated file."""
    with CATALOGUE_PATH.open("rb") as handle:
        table = tomllib.load(handle)["providers"]
    entries: dict[str, ProviderEntry] = {}
    aliases: dict[str, str] = {}
    for slug, entry in table.items():
        if entry["kind"] not in Provider.Kind.values:
            raise ValueError(f"{CATALOGUE_PATH.name}: provider {slug!r} has unknown kind {entry['kind']!r}")
        entries[slug] = ProviderEntry(slug, entry["name"], entry["kind"], entry.get("url", ""), entry["name_source"])
        for alias in entry.get("aliases", ()):
            aliases[alias] = slug
    return entries, aliases


def provider_slug(name: str) -> str:
    """The slug of a provider as a source writes it: ``lambdalabs`` -> ``lambda``, ``dc_roan`` -> ``dc-roan``."""
    slug = slugify(name.replace("_", "-").replace(".", "-"))
    return provider_catalogue()[1].get(slug, slug) or "unknown"


def provider_is_marketplace(slug: str) -> bool:
    """Whether the provider's offers are individual hosts' listings (vast), each its own offer."""
    entry = provider_catalogue()[0].get(slug)
    return entry is not None and entry.kind == Provider.Kind.MARKETPLACE


def providers_get_or_create(*, slugs: dict[str, str], currency_by_slug: dict[str, str]) -> dict[str, Provider]:
    """Provider rows for ``slugs`` (slug -> name as the source wrote it), creating missing ones
    under the catalogue's name (the source's spelling only where the catalogue has none)."""
    found = {p.slug: p for p in Provider.objects.filter(slug__in=list(slugs))}
    entries = provider_catalogue()[0]
    for slug, seen_name in slugs.items():
        if slug in found:
            continue
        entry = entries.get(slug)
        defaults = {
            "name": (entry.name if entry else seen_name)[:120],
            "kind": entry.kind if entry else Provider.Kind.CLOUD,
            "url": entry.url if entry else "",
            "name_source": entry.name_source if entry else "",
            "default_currency": currency_by_slug.get(slug, "USD"),
        }
        # get_or_create: two import tasks may meet the same new provider at once.
        found[slug], _ = Provider.objects.get_or_create(slug=slug, defaults=defaults)
    return found


def providers_catalogue_sync() -> int:
    """Stored providers whose name, kind, URL or name source differ from the catalogue take its
    values (one save each, so the admin history shows the change); returns how many changed."""
    entries = provider_catalogue()[0]
    changed = 0
    for provider in Provider.objects.filter(slug__in=list(entries)):
        entry = entries[provider.slug]
        wanted = {"name": entry.name[:120], "kind": entry.kind, "url": entry.url, "name_source": entry.name_source}
        if any(getattr(provider, field) != value for field, value in wanted.items()):
            for field, value in wanted.items():
                setattr(provider, field, value)
            provider.save(update_fields=list(wanted))
            changed += 1
    return changed
