from __future__ import annotations

from django.urls import path

from . import views

app_name = "buffers"

urlpatterns = [
    path("", views.conversation_list, name="conversation_list"),
]
