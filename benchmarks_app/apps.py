from django.apps import AppConfig
from django.db.models.signals import m2m_changed, post_delete, post_save
from django.utils.translation import gettext_lazy as _


class BenchmarksAppConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "benchmarks_app"
    verbose_name = _("Benchmarks")

    def ready(self) -> None:
        # Cache invalidation only (no business logic): the ingest's per-process catalogue
        # snapshot must not outlive a curator's change made in this process.
        from benchmarks_app.models import Workload
        from benchmarks_app.services.snapshot import catalog_snapshot_clear
        from catalog.models import Gpu, GpuAlias, GpuNameRule, TensorPeak

        m2m_changed.connect(
            catalog_snapshot_clear, sender=GpuNameRule.gpus.through, dispatch_uid="snapshot-clear-name-rule-gpus"
        )
        for model in (Gpu, GpuAlias, GpuNameRule, TensorPeak, Workload):
            post_save.connect(
                catalog_snapshot_clear, sender=model, dispatch_uid=f"snapshot-clear-save-{model.__name__}"
            )
            post_delete.connect(
                catalog_snapshot_clear, sender=model, dispatch_uid=f"snapshot-clear-delete-{model.__name__}"
            )
