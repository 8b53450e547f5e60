from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DashboardConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "dashboard"
    verbose_name = _("Rankings and dashboard")

    def ready(self) -> None:
        # Connects the warm-up of the busiest pages to data-version bumps.
        import dashboard.tasks  # noqa: F401
