"""One number format on every page, in English and Chinese: grouped by thousands, significant
figures by unit (gpuatlas/numbers.py), through one filter in templates."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.template import Context, Template
from django.utils import translation

from gpuatlas.numbers import number_text
from tests.factories import GpuFactory

LANGUAGES = ["en", "zh-hans"]


@pytest.mark.parametrize("language", LANGUAGES)
@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (8406.2, "", "8,406"),  # a throughput: grouped, the whole number kept
        (1719.114, "", "1,719"),  # a figure per price: no thousandths on a four-digit figure
        (42.46, "", "42.5"),
        (1.5, "", "1.50"),  # three significant figures, the zero too
        (0.012345, "", "0.0123"),
        (Decimal("33600.00"), "money", "33,600"),  # a launch price: whole dollars
        (2.4, "USD", "2.40"),  # a price per GPU-hour: cents
        (0.03456, "money", "0.0346"),  # the cost of a million tokens: three significant figures
        (22.4, "%", "22"),
        (8.46, "%", "8.5"),
        (8030261248, "int", "8,030,261,248"),
        (None, "", "—"),
        (float("nan"), "", "—"),
        (-0.0001, "int", "0"),
    ],
)
def test_numbers_read_the_same_in_both_languages(language, value, unit, text):
    with translation.override(language):
        assert number_text(value, unit) == text


@pytest.mark.parametrize("language", LANGUAGES)
def test_the_template_filter_and_plain_numbers_are_grouped(language):
    template = Template('{% load numbers %}{{ perf|num }} · {{ price|num:"money" }} · {{ count }}')
    with translation.override(language):
        assert template.render(Context({"perf": 1719.114, "price": 33600, "count": 12345})) == "1,719 · 33,600 · 12,345"


@pytest.mark.django_db
@pytest.mark.parametrize("language", LANGUAGES)
def test_a_launch_price_reads_as_whole_dollars_on_the_gpu_page(client, language):
    # The Chinese phone page printed "33600.00 USD".
    gpu = GpuFactory(name="Launch Test GPU", launch_price_usd=Decimal("33600.00"))
    client.cookies["django_language"] = language
    html = client.get(f"/gpus/{gpu.slug}/").content.decode()
    assert "33,600 USD" in html and "33600" not in html
