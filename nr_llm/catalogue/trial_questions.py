"""A server's question during an operator's Try (elicitation), and the operator's answer.

Two requests meet here: the Try request, which holds the tool call open and waits in its
responder, and the operator's answer from the page (the page asks for the question while the
Try request runs). They meet in Django's default cache, keyed by a trial id the Try page
draws at random and bound to the operator who asked. With several processes (gunicorn
workers, several hosts) that cache must be one they share (Redis, Memcached, the database
cache): with a per-process cache (Django's default, local memory) the answer may reach a
process the waiting call never reads, and the call then ends ``needs_input``.

The wait is the call's own budget: the responder waits until a margin before the server's
budget ends (the call still has to send the answer and read the result), then answers "not
now" (None), so the call ends ``needs_input`` rather than ``deadline_exhausted``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from django.core.cache import cache

from ..mcp import ElicitationAnswer, ElicitationRequest

#: Seconds a question or an answer is kept: longer than any budget, so one never outlives a wait.
KEPT_SECONDS = 900
#: How often the waiting call looks for the answer.
POLL_SECONDS = 0.2
#: Left of the budget for sending the answer and reading the tool's result.
MARGIN_SECONDS = 2.0
_PREFIX = "nr_llm:trial:"
_ACTIONS = ("accept", "decline", "cancel")


def new_trial() -> str:
    """An unguessable trial id: knowing it is not enough to answer (the user is checked too)."""
    return secrets.token_urlsafe(18)


@dataclass(frozen=True)
class Question:
    """What the page shows: ``number`` counts the call's questions (a tool may ask twice)."""

    number: int
    user_id: int | None
    server: str
    message: str
    mode: Literal["form", "url"] = "form"
    schema: dict[str, Any] = field(default_factory=dict)
    url: str = ""


def question(trial: str, user_id: int | None) -> Question | None:
    """The question waiting in ``trial`` for ``user_id``, if any."""
    kept = cache.get(_key(trial, "question")) if trial else None
    if not isinstance(kept, dict) or kept.get("user_id") != user_id:
        return None
    return Question(**kept)


def answer(
    trial: str, user_id: int | None, number: int, action: str, content: dict[str, Any] | None = None
) -> bool:
    """Hand the operator's answer to the waiting call; False when that question no longer waits
    (answered, timed out) or is not this user's."""
    waiting = question(trial, user_id)
    if waiting is None or waiting.number != number or action not in _ACTIONS:
        return False
    # add(), not set(): the first answer to a question is the one given (a double click sends one).
    return bool(
        cache.add(_key(trial, f"answer:{number}"), {"action": action, "content": content}, KEPT_SECONDS)
    )


class TrialResponder:
    """``tools.execute``'s responder for one Try: publishes each request, waits for its answer."""

    def __init__(
        self,
        trial: str,
        user_id: int | None,
        budget_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.trial = trial
        self.user_id = user_id
        self.until = clock() + budget_seconds - MARGIN_SECONDS
        self.clock = clock
        self.sleep = sleep
        self.asked = 0

    def __call__(self, request: ElicitationRequest) -> ElicitationAnswer | None:
        self.asked += 1
        asked = Question(
            number=self.asked,
            user_id=self.user_id,
            server=request.server,
            message=request.message,
            mode=request.mode,
            schema=request.schema,
            url=request.url,
        )
        question_key, answer_key = _key(self.trial, "question"), _key(self.trial, f"answer:{self.asked}")
        cache.set(question_key, asdict(asked), KEPT_SECONDS)
        try:
            while self.clock() < self.until:
                given = cache.get(answer_key)
                if isinstance(given, dict):
                    content = given.get("content")
                    return ElicitationAnswer(given["action"], content if isinstance(content, dict) else None)
                self.sleep(POLL_SECONDS)
            return None
        finally:
            cache.delete_many([question_key, answer_key])


def _key(trial: str, what: str) -> str:
    return f"{_PREFIX}{trial[:64]}:{what}"
