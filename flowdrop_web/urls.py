from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, re_path

from buffers import receiver
from buffers.api import api, not_found
from buffers.views import sign_in_link

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/first-run/<str:token>/", sign_in_link, name="sign_in_link"),
    path("api/otel/v1/traces", receiver.traces, name="otlp_traces"),
    path("api/", not_found),
    path("api/", api.urls),
    re_path(r"^api/", not_found),
    path("", include("buffers.urls")),
]

handler400 = "buffers.api.handler400"
handler500 = "buffers.api.handler500"
