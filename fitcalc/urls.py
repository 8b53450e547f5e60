from django.urls import path

from fitcalc import views

app_name = "fitcalc"

urlpatterns = [
    path("fit/", views.fit_view, name="fit"),
]
