import django_stubs_ext
from django.apps import AppConfig

# Before admin.py and forms.py are imported: they subscript ModelAdmin/ModelForm for mypy.
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
