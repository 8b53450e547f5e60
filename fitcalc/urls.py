from django.urls import path

from fitcalc import views

app_name = "fitcalc"

urlpatterns = [
    path("fit/", views.fit_view, name="fit"),
    path("fit/models/import/", views.hf_model_import_view, name="hf-model-import"),
]
