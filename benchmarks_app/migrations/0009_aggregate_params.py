from django.db import migrations, models


def aggregate_params_fill(apps, schema_editor):
    """Each stored aggregate gets the parameters of its comparison key, from one of its results
    (found by GPU and key, the results' index)."""
    aggregate = apps.get_model("benchmarks_app", "ResultAggregate")
    result = apps.get_model("benchmarks_app", "BenchmarkResult")
    found: dict[str, dict] = {}
    for gpu_id, key in aggregate.objects.order_by().values_list("gpu_id", "comparison_key"):
        if key in found:
            continue
        params = result.objects.filter(gpu_id=gpu_id, comparison_key=key).values_list("params", flat=True).first()
        found[key] = params if isinstance(params, dict) else {}
    for key, params in found.items():
        if params:
            aggregate.objects.filter(comparison_key=key).update(params=params)


class Migration(migrations.Migration):
    dependencies = [
        ("benchmarks_app", "0008_llm_labimportrow"),
    ]

    operations = [
        migrations.AddField(
            model_name="resultaggregate",
            name="params",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.RunPython(aggregate_params_fill, migrations.RunPython.noop),
    ]
