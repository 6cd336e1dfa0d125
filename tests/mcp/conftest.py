from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses

from .scripted import FakeClock


@pytest.fixture
def mock() -> Iterator[responses.RequestsMock]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mocked:
        yield mocked


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
