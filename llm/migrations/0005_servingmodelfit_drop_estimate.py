"""The stored fits no longer hold the one-stream estimate's constants and report: the serving model
(and its single-stream efficiencies) is the only LLM model. Stored rows lose those keys; the next
refit writes the single-stream constants."""

from __future__ import annotations

from typing import Any

from django.db import migrations


def drop_estimate(apps: Any, schema_editor: Any) -> None:
    fits = apps.get_model("llm", "ServingModelFit")
    for fit in fits.objects.all().only("id", "constants", "errors"):
        changed = False
        for name in ("constants", "errors"):
            value = getattr(fit, name)
            if isinstance(value, dict) and "estimate" in value:
                value.pop("estimate")
                changed = True
        if changed:
            fit.save(update_fields=["constants", "errors"])


class Migration(migrations.Migration):
    dependencies = [("llm", "0004_servingpoint_energy")]

    operations = [migrations.RunPython(drop_estimate, migrations.RunPython.noop)]
