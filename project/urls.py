from django.contrib import admin
from django.urls import path

from . import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("demo/slow/", views.slow, name="demo-slow"),
    path("demo/echo/", views.echo, name="demo-echo"),
]
