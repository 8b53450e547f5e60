from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("", views.account_view, name="account"),
    path("signup/", views.signup_view, name="signup"),
    path("tokens/<int:token_id>/revoke/", views.token_revoke_view, name="token-revoke"),
]
