"""Numbers in query strings are refused outside their range, on pages and in the API alike.

``/?gpu_price[h100-sxm5-80-gb]=1e-300`` was a 500 for anyone (the chart took the logarithm of an
underflowed value) while the API answered the same value with 200. Every extreme a query can
carry is now a 400 that names the parameter: JSON with ``errors[<parameter>]`` in the API, the
page's form with the reason on the page.
"""

from __future__ import annotations

import pytest

from dashboard.selectors.ranking_params import RankingParamError, ranking_params_from_query
from gpuatlas.query_numbers import (
    GPU_PRICE_PER_HOUR,
    SEQUENCE_TOKENS,
    TOKENS_PER_S_PER_USER,
    QueryNumberError,
    number_parse,
    query_number,
)
from tests.world import DASHBOARD_WORLD

WORLD = DASHBOARD_WORLD
H100 = "h100-sxm5-80-gb"
PRICE = f"gpu_price[{H100}]"
# What a query string can carry that float() reads, and a person would not call a price.
EXTREME_TEXTS = (
    "1e-300", "5e-324", "0", "-1", "-0", "1e308", "inf", "-Infinity", "nan", "NaN", "1_000", "0x10", "1e400",
    "", "   ", "2,5", "1" * 60, "٣",  # an Arabic-Indic digit: float() reads it, a person may not
)  # fmt: skip


@pytest.mark.parametrize("text", [t for t in EXTREME_TEXTS if t.strip()])
def test_a_price_outside_its_range_is_refused_naming_the_parameter(text: str) -> None:
    with pytest.raises(RankingParamError) as error:
        ranking_params_from_query({PRICE: text})
    assert error.value.field == PRICE


@pytest.mark.parametrize("text", ["0.001", "0.35", "2", "2.10", "1e3", "+4.5", " 12 "])
def test_prices_people_pay_are_read(text: str) -> None:
    assert ranking_params_from_query({PRICE: text}).gpu_price_map == {H100: float(text)}


@pytest.mark.parametrize("text", ["nan", "inf", "-8", "1e300", "5e-324x"])
def test_min_vram_outside_its_range_is_refused(text: str) -> None:
    with pytest.raises(RankingParamError) as error:
        ranking_params_from_query({"min_vram": text})
    assert error.value.field == "min_vram"


def test_each_range_is_stated_once_and_says_itself() -> None:
    assert GPU_PRICE_PER_HOUR.holds(0.001) and not GPU_PRICE_PER_HOUR.holds(1e-300)
    assert not GPU_PRICE_PER_HOUR.holds(1000.01) and GPU_PRICE_PER_HOUR.holds(1000)
    assert TOKENS_PER_S_PER_USER.holds(20) and not TOKENS_PER_S_PER_USER.holds(0.0)
    assert SEQUENCE_TOKENS.holds(4096) and not SEQUENCE_TOKENS.holds(2.5) and not SEQUENCE_TOKENS.holds(0)
    with pytest.raises(QueryNumberError) as error:
        number_parse("1e-300", field="gpu_price[x]", bounds=GPU_PRICE_PER_HOUR)
    assert error.value.field == "gpu_price[x]" and "0.001" in error.value.message and "1000" in error.value.message
    assert query_number({"output_tokens": " "}, "output_tokens", bounds=SEQUENCE_TOKENS) is None
    assert query_number({"output_tokens": "512"}, "output_tokens", bounds=SEQUENCE_TOKENS) == 512


@pytest.mark.django_db
@pytest.mark.parametrize("text", ["1e-300", "5e-324", "1e308", "inf", "nan", "-1"])
def test_the_page_answers_a_clear_400_and_the_api_names_the_field(client, world, text: str) -> None:
    for path in ("/", "/tiers/"):
        page = client.get(path, {PRICE: text})
        assert page.status_code == 400, (path, text)
        assert "out of range" in page.content.decode() or "not a number" in page.content.decode()
    for path in ("/api/v1/rankings/", "/api/v1/tiers/"):
        answer = client.get(path, {PRICE: text})
        assert answer.status_code == 400, (path, text)
        assert list(answer.json()["errors"]) == [PRICE]


@pytest.mark.django_db
def test_a_price_in_range_still_ranks_the_gpu_at_that_price(client, world) -> None:
    rows = client.get("/api/v1/rankings/", {PRICE: "0.001"}).json()["results"]
    h100 = next(row for row in rows if row["gpu"] == H100)
    assert h100["price"] == 0.001
    assert client.get("/", {PRICE: "0.001"}).status_code == 200
