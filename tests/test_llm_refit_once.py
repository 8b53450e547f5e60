"""A run of writes that each ask for a refit of the LLM models (the demo's load) fits once, at the end."""

from __future__ import annotations

import pytest

from llm.models import ServingModelFit
from llm.services import serving_fit
from llm.services.serving_fit import serving_model_refit, serving_model_refit_after_write, serving_refit_once


@pytest.fixture
def fits(monkeypatch):  # type: ignore[no-untyped-def]
    """Each fit actually run, counted (and forced: the empty test database's inputs never change)."""
    runs: list[int] = []
    real = serving_fit.serving_fit_checked

    def counted(points, **kwargs):  # type: ignore[no-untyped-def]
        runs.append(len(points))
        return real(points, **kwargs)

    monkeypatch.setattr(serving_fit, "serving_fit_checked", counted)
    monkeypatch.setattr(serving_fit, "_digest", lambda *inputs: f"inputs {len(runs)}")
    return runs


@pytest.mark.django_db
def test_writes_inside_refit_once_fit_once_at_the_end(fits):
    with serving_refit_once():
        for _ in range(3):
            serving_model_refit_after_write()
        assert fits == [] and ServingModelFit.objects.count() == 0
    assert len(fits) == 1 and ServingModelFit.objects.count() == 1


@pytest.mark.django_db
def test_a_fit_inside_covers_the_writes_before_it_and_outside_each_write_fits(fits):
    with serving_refit_once():
        serving_model_refit_after_write()
        serving_model_refit()
    assert len(fits) == 1
    serving_model_refit_after_write()
    serving_model_refit_after_write()
    assert len(fits) == 3
    with serving_refit_once():
        pass
    assert len(fits) == 3
