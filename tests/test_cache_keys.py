"""Nobody can flood the cache: 1,000 distinct URLs add a bounded number of keys, and each address
may have only so many pages computed a minute.

Before: each distinct query string was a key kept a day; 200 page URLs differing only in
``gpu_price`` added 25.6 MB (about 128 KB each), 200 rankings URLs 13 MB, and pages had no limit.
Now page bodies are keyed by their parsed parameters (unknown ones, their order and spelling
make no new key), API lists by their sorted query (unknown parameters are refused), and at most
DATA_VERSION_CACHE_VARIANTS parameter sets of each are stored per data version
(gpuatlas/data_version.py); computed pages count against THROTTLE_PAGE_RENDER per address.
"""

from __future__ import annotations

import pytest
from django.core.cache import cache
from django.urls import URLPattern, URLResolver, get_resolver

from gpuatlas.render_limits import page_renders_limited_is
from tests.world import DASHBOARD_WORLD

pytestmark = pytest.mark.django_db
WORLD = DASHBOARD_WORLD
H100 = "h100-sxm5-80-gb"
VARIANTS = 5


def key_count() -> int:
    store = getattr(cache, "_cache", None)
    if isinstance(store, dict):  # the local-memory cache
        return len(store)
    return int(cache._cache.get_client().dbsize())  # type: ignore[attr-defined]  # Redis (CACHE_URL)


def flood_urls() -> list[str]:
    """1,000 distinct URLs, as a flood would send them: noise parameters, user prices, memory
    floors, reordered and repeated parameters, API orderings and page sizes."""
    urls = [f"/?utm_source=x{i}&use_case=training" for i in range(350)]  # unknown parameters
    urls += [f"/tiers/?zz={i}&currency=USD" for i in range(250)]
    urls += [f"/?gpu_price[{H100}]={1 + i / 100:.2f}" for i in range(20)]  # user prices
    urls += [f"/tiers/?min_vram={i}" for i in range(10)]
    urls += [f"/gpus/no-such-gpu-{i}/" for i in range(20)]  # 404
    urls += [f"/api/v1/rankings/?nonsense{i}=1" for i in range(100)]  # refused: 400
    urls += [f"/api/v1/gpus/?limit={1 + i}" for i in range(150)]
    urls += [f"/api/v1/rankings/?gpu_price[{H100}]={2 + i / 100:.2f}" for i in range(30)]
    urls += [f"/api/v1/gpus/?ordering=name&limit=3&offset={i}&limit=3" for i in range(70)]
    assert len(set(urls)) == 1000
    return urls


def test_a_flood_of_1000_distinct_urls_adds_a_bounded_number_of_keys(client, world, versioned_cache, settings):  # type: ignore[no-untyped-def]
    settings.DATA_VERSION_CACHE_VARIANTS = VARIANTS
    client.get("/")  # the data version and the throttles' first keys
    before = key_count()
    statuses = [client.get(url).status_code for url in flood_urls()]
    added = key_count() - before
    print(f"\ncache flood: 1,000 distinct URLs added {added} keys")
    assert statuses.count(500) == 0 and statuses.count(400) == 100 and statuses.count(404) == 20
    # Per kind (the rankings and tier pages and the rankings behind them, the GPU lookup, the
    # GPU list and the rankings API): at most VARIANTS entries and one counter of them; a
    # handful of throttle counters.
    assert added <= 6 * (VARIANTS + 1) + 6, added


def test_the_same_page_in_other_spellings_is_one_cached_body(client, world, versioned_cache):  # type: ignore[no-untyped-def]
    client.get("/?use_case=training")
    before = key_count()
    for url in ("/", "/?currency=usd", "/?utm=1&use_case=training", "/?currency=USD&use_case=training&a=b"):
        assert client.get(url).status_code == 200
    assert key_count() == before


def test_an_address_has_only_so_many_pages_computed_a_minute(client, world, versioned_cache, settings):  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "page_render": "3/min"},
    }
    computed = [client.get("/", {f"gpu_price[{H100}]": f"{1 + i}"}).status_code for i in range(3)]
    refused = client.get("/tiers/")
    assert computed == [200, 200, 200]
    assert refused.status_code == 429 and "Too many pages were computed" in refused.content.decode()
    assert int(refused["Retry-After"]) > 0
    other = client.get("/tiers/", REMOTE_ADDR="198.51.100.20")  # another address has its own allowance
    assert other.status_code == 200
    assert client.get("/tiers/").status_code == 200  # cached now: a hit computes nothing


@pytest.mark.parametrize(
    "path",
    [
        f"/gpus/{H100}/results/",  # one page of a long list, never cached
        "/open-data/",  # a whole table as CSV, never cached
        f"/gpus/{H100}/feed/",  # the GPU's price cuts, a window over its observations
        "/architectures/?format=csv",  # a download
    ],
)
def test_pages_never_cached_spend_the_render_allowance(client, world, versioned_cache, settings, path: str):  # type: ignore[no-untyped-def]
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "page_render": "2/min"},
    }
    client.get("/")  # the GPU lookup and the footer's reads cached: only the page itself computes
    query = {"table": "gpus"} if path == "/open-data/" else {}
    second = client.get(path, query)
    refused = client.get(path, query)
    assert second.status_code == 200
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0


@pytest.mark.parametrize(
    ("path", "other_spelling", "other_question"),
    [
        ("/architectures/", "/architectures/?utm_source=x", None),
        ("/llm-model/", "/llm-model/?ref=1", None),
        ("/gpus/?sort=bf16", "/gpus/?utm_source=x&sort=bf16", "/gpus/?sort=-bf16"),
        ("/providers/", "/providers/?ref=1", None),
    ],
)
def test_read_only_pages_are_computed_once_per_data_version(  # type: ignore[no-untyped-def]
    client, world, versioned_cache, settings, path: str, other_spelling: str, other_question: str | None
):
    """The catalogue, the providers, the architectures and the LLM model page are read from the
    cache after their first request: a repeat, or another spelling of the same question (an
    unread parameter), computes nothing and spends no render allowance; another question, or the
    same one after a data change, computes again."""
    from gpuatlas.data_version import data_version_renew

    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "page_render": "1/min"},
    }
    client.get("/", REMOTE_ADDR="198.51.100.30")  # the footer's reads, cached from another address
    first = client.get(path)
    assert first.status_code == 200
    assert _main(client.get(path)) == _main(first)
    assert _main(client.get(other_spelling)) == _main(first)
    if other_question is not None:
        assert client.get(other_question).status_code == 429  # a second computation this minute
    data_version_renew()  # what a writer's bump does once its transaction commits
    assert client.get(path).status_code == 429  # the data changed: computed again


def _main(response) -> str:  # type: ignore[no-untyped-def]
    """The page's content: what is cached (the header and footer hold the visitor's CSRF token)."""
    html = response.content.decode()
    return html[html.index("<main>") : html.index("</main>")]


def test_the_catalogue_links_carry_only_what_it_reads(client, world, versioned_cache):  # type: ignore[no-untyped-def]
    body = _main(client.get("/gpus/?sort=bf16&utm_source=tracker"))
    assert "utm_source" not in body and "tracker" not in body
    assert "sort=bf16" in body


# Pages outside the per-address render limit, each with its reason; every other page of the site
# (not the admin, the API or static files) must be under it.
NOT_RENDER_LIMITED = {
    "healthz": "a probe",
    "readyz": "a probe",
    "i18n/setlang/": "sets the language cookie",
    "accounts/login/": "its POSTs are throttled per address and per account",
    "accounts/logout/": "the visitor's own session",
    "accounts/": "the signed-in user's own account",
    "accounts/signup/": "its POSTs are throttled per address",
    "accounts/tokens/<int:token_id>/revoke/": "the signed-in user's own token",
    "watches/new/": "signed in; creations are throttled",
    "watches/<int:watch_id>/delete/": "the signed-in user's own watch",
    "watches/feed/<str:token>/": "one watch's crossings, behind its secret token",
    "submit/": "a form; uploads need an account",
    "submit/gpuatlas-bench.tar.gz": "built once per process",
    "submissions/<uuid:run_uuid>/": "one submission's status",
    "fit/models/import/": "signed in; imports are throttled",
    "providers/health/": "staff only",
}


def _site_pages(patterns: list, prefix: str = "") -> list[tuple[str, object]]:  # type: ignore[type-arg]
    pages = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if route.startswith(("admin/", "api/", "^static")):
            continue
        if isinstance(pattern, URLResolver):
            pages += _site_pages(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            pages.append((route, pattern.callback))
    return pages


def test_every_page_is_under_the_render_limit_or_says_why_not() -> None:
    pages = _site_pages(get_resolver().url_patterns)
    unlimited = {route for route, view in pages if not page_renders_limited_is(view)}
    assert unlimited == set(NOT_RENDER_LIMITED)
