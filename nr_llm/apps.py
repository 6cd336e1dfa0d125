import django_stubs_ext
from django.apps import AppConfig, apps

# Before the admin modules and forms.py are imported: they subscript ModelAdmin/ModelForm for mypy.
django_stubs_ext.monkeypatch()


class NrLlmConfig(AppConfig):
    name = "nr_llm"
    verbose_name = "LLM tools (MCP)"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import checks
        from .governance import decisions
        from .observability import log_filters
        from .tools import queue

        checks.register()
        log_filters.install()
        # An approved call enqueued for a worker is enqueued by its approval (tools/queue.py).
        decisions.worker_call_approved.connect(queue.on_approved, dispatch_uid="nr_llm.queued_approval")
        # Each package keeps its own admin; Django's autodiscovery reads only an app's top-level
        # admin module, so they register here, and only where the site runs Django's admin.
        if apps.is_installed("django.contrib.admin"):
            from .authorization import admin as authorization_admin  # noqa: F401
            from .catalogue import admin as catalogue_admin  # noqa: F401
            from .governance import admin as governance_admin  # noqa: F401
            from .servers import admin as servers_admin  # noqa: F401
