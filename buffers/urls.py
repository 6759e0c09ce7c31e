from __future__ import annotations

from django.urls import path

from . import views

app_name = "buffers"

urlpatterns = [
    path("", views.conversation_list, name="conversation_list"),
    path("import", views.transcript_upload, name="upload"),
    path("c/<int:pk>/", views.conversation_detail, name="conversation"),
    path("c/<int:pk>/export/<str:format>", views.conversation_export, name="export"),
    path("c/<int:pk>/sendability", views.conversation_sendability, name="sendability"),
    path("c/<int:pk>/next", views.conversation_next_problem, name="next_problem"),
    path("c/<int:pk>/messages", views.conversation_messages, name="conversation_messages"),
    path("c/<int:pk>/m/<int:index>/json", views.message_json, name="message_json"),
    path("c/<int:pk>/search", views.conversation_search, name="conversation_search"),
    path("c/<int:pk>/append", views.conversation_append, name="conversation_append"),
    path("c/<int:pk>/history", views.conversation_history, name="conversation_history"),
    path("c/<int:pk>/preview", views.conversation_preview, name="conversation_preview"),
    path("c/<int:pk>/share", views.conversation_share, name="conversation_share"),
    path("c/<int:pk>/unshare", views.conversation_unshare, name="conversation_unshare"),
]
