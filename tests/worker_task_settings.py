"""Settings of the ``db_worker`` processes that follow MCP tasks: short slices, so a test sees
a worker hand a task on (or die holding it) in seconds rather than the default 30 s."""

from tests.worker_settings import *  # noqa: F403

NR_LLM_QUEUED_TASK_SLICE = 3
