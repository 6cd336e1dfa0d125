"""The Try page's questions (elicitation) without a browser: the form a requested schema becomes,
the answer's content, the cache between the waiting call and the operator (fake clock), the
admin's question and answer views, and a Try with no script to answer (``needs_input``).
The browser's whole round: tests/e2e/test_try_elicitation_browser.py."""

from __future__ import annotations

import datetime
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache
from django.urls import reverse

from nr_llm.catalogue import import_catalogue
from nr_llm.catalogue.elicit_form import answer_form, content_of
from nr_llm.catalogue.trial_questions import (
    MARGIN_SECONDS,
    TrialResponder,
    answer,
    new_trial,
    question,
)
from nr_llm.mcp import ElicitationAnswer, ElicitationRequest
from nr_llm.models import McpTool
from tests.factories import McpServerFactory, McpToolFactory
from tests.peers import running

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "date": {"type": "string", "title": "Date", "description": "Which day"},
        "guests": {"type": "integer", "default": 2, "minimum": 1, "maximum": 10},
        "price": {"type": "number"},
        "confirm": {"type": "boolean", "default": True},
        "size": {"type": "string", "enum": ["s", "m"], "enumNames": ["Small", "Medium"]},
        "tier": {"type": "string", "oneOf": [{"const": "gold", "title": "Gold"}]},
        "email": {"type": "string", "format": "email"},
        "day": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "nested": {"type": "object", "properties": {}},
    },
    "required": ["date", "size"],
}


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def test_each_primitive_property_is_a_field_with_its_default() -> None:
    form = answer_form(SCHEMA)
    assert list(form.fields) == ["date", "guests", "price", "confirm", "size", "tier", "email", "day", "tags"]
    assert form.skipped == ("nested",)
    fields = form.fields
    assert (fields["date"].label, fields["date"].help_text, fields["date"].required) == (
        "Date",
        "Which day",
        True,
    )
    assert (fields["guests"].initial, fields["confirm"].initial) == (2, True)
    assert fields["size"].choices == [("s", "Small"), ("m", "Medium")]  # type: ignore[attr-defined]
    assert fields["tier"].choices == [("", "---------"), ("gold", "Gold")]  # type: ignore[attr-defined]
    assert not fields["confirm"].required  # unticked is the answer false


def test_the_content_keeps_json_types_and_leaves_empty_optional_fields_to_their_defaults() -> None:
    data = {"answer-date": "Friday", "answer-guests": "3", "answer-size": "m", "answer-day": "2026-12-24"}
    form = answer_form(SCHEMA, data)
    assert form.is_valid(), form.errors
    assert content_of(form) == {
        "date": "Friday",
        "guests": 3,
        "confirm": False,
        "size": "m",
        "day": datetime.date(2026, 12, 24).isoformat(),
    }
    over = answer_form(SCHEMA, {**data, "answer-guests": "11", "answer-size": "xl"})
    assert not over.is_valid() and set(over.errors) == {"guests", "size"}


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


REQUEST = ElicitationRequest(server="feat", message="When?", schema=SCHEMA)


def test_the_operators_answer_reaches_the_waiting_call_once() -> None:
    """The call publishes its question; the operator's first answer is the one given; another
    user never sees nor answers it; once answered the question is gone."""
    clock = FakeClock()
    trial = new_trial()
    given: list[ElicitationAnswer | None] = []

    def operator_answers(seconds: float) -> None:
        clock.sleep(seconds)
        if clock.now >= 101.0 and not given:
            waiting = question(trial, 1)
            assert waiting is not None and waiting.message == "When?" and waiting.number == 1
            assert question(trial, 2) is None and not answer(trial, 2, 1, "accept", {})
            assert answer(trial, 1, 1, "accept", {"date": "Friday"})
            assert not answer(trial, 1, 1, "decline")  # a second click does not change it

    responder = TrialResponder(trial, 1, 20.0, clock=clock, sleep=operator_answers)
    given.append(responder(REQUEST))
    assert given == [ElicitationAnswer("accept", {"date": "Friday"})]
    assert question(trial, 1) is None and not answer(trial, 1, 1, "cancel")


def test_no_answer_within_the_budget_is_not_now() -> None:
    """The wait ends a margin before the budget: None (the call's needs_input), question gone."""
    clock = FakeClock()
    trial = new_trial()
    responder = TrialResponder(trial, 1, 10.0, clock=clock, sleep=clock.sleep)
    assert responder(REQUEST) is None
    assert 100.0 + 10.0 - MARGIN_SECONDS <= clock.now < 100.0 + 10.0 - MARGIN_SECONDS + 0.5
    assert question(trial, 1) is None


@pytest.mark.django_db
def test_the_admin_views_show_the_question_and_take_the_answer(admin_client: Any, admin_user: User) -> None:
    """204 while nothing waits; the question as a form; an invalid answer refused (400) with the
    form again; a valid one handed to the call (on a thread: the Try request's own wait)."""
    tool = McpToolFactory.create(enabled=True)
    ask = reverse("admin:nr_llm_mcptool_try_question", args=[tool.pk])
    reply = reverse("admin:nr_llm_mcptool_try_answer", args=[tool.pk])
    trial = new_trial()
    assert admin_client.get(ask, {"trial": trial}).status_code == 204
    got: list[ElicitationAnswer | None] = []
    waiting = threading.Thread(target=lambda: got.append(TrialResponder(trial, admin_user.pk, 30.0)(REQUEST)))
    waiting.start()
    try:
        for _ in range(100):
            shown = admin_client.get(ask, {"trial": trial})
            if shown.status_code == 200:
                break
            threading.Event().wait(0.05)
        page = shown.content.decode()
        assert 'name="answer-date"' in page and 'value="2"' in page and "When?" in page
        posted = {"trial": trial, "number": "1", "action": "accept"}
        refused = admin_client.post(reply, posted)
        assert refused.status_code == 400 and "This field is required." in refused.content.decode()
        sent = admin_client.post(reply, {**posted, "answer-date": "Friday", "answer-size": "s"})
        assert sent.status_code == 200 and "Answer sent (accept)" in sent.content.decode()
    finally:
        waiting.join(30)
    # guests was left empty: the Elicitor fills the schema's default (SEP-1034); an unticked box
    # (a browser ticks it first, from its default) is the answer false.
    assert got == [ElicitationAnswer("accept", {"date": "Friday", "confirm": False, "size": "s"})]
    assert admin_client.post(reply, {**posted, "action": "decline"}).status_code == 410


@pytest.mark.django_db(transaction=True)
def test_a_try_with_no_script_to_answer_says_the_server_asked(admin_client: Any, settings: Any) -> None:
    """Without the page's script (no ``answering``), no responder is given: nothing is declared,
    the server cannot ask, and the page says the call needs input."""
    settings.NR_LLM_MCP_ALLOW_PRIVATE_NETWORKS = True
    with running([sys.executable, "-m", "tests.peers.features_server", "--no-discover"]) as port:
        server = McpServerFactory.create(identifier="feat", url=f"http://127.0.0.1:{port}/mcp")
        assert import_catalogue(server).ok
        tool = McpTool.objects.get(remote_name="reserve")
        McpTool.objects.filter(pk=tool.pk).update(enabled=True)
        url = reverse("admin:nr_llm_mcptool_try", args=[tool.pk])
        page = admin_client.post(url, {"arguments": "{}", "trial": new_trial()}).content.decode()
    assert "The server asked for input" in page
    assert 'name="trial" value="' in page
