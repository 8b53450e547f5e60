from django.contrib import admin
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin

from accounts.forms import AdminUserChangeForm, AdminUserCreationForm
from accounts.models import ApiToken


class SameNameUserAdmin(UserAdmin):  # type: ignore[type-arg]
    """Django's user admin, refusing a name another account has in another case or width."""

    add_form = AdminUserCreationForm
    form = AdminUserChangeForm


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), SameNameUserAdmin)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "user", "prefix", "created_at", "last_used_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "user__username", "prefix")
    readonly_fields = ("prefix", "key_sha256", "created_at", "last_used_at")
