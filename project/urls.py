from django.contrib import admin
from django.contrib.staticfiles.urls import staticfiles_urlpatterns
from django.urls import include, path

from . import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("nr-llm/", include("nr_llm.authorization.urls")),
    path("demo/slow/", views.slow, name="demo-slow"),
    path("demo/echo/", views.echo, name="demo-echo"),
    # Browsers ask for it on every page; a 404 for it was noise in the console.
    path("favicon.ico", views.favicon, name="demo-favicon"),
]

# The demo is served by gunicorn (to show real disconnect handling), not runserver, so
# serve the admin's static files here; this adds nothing unless DEBUG is on.
urlpatterns += staticfiles_urlpatterns()
