from __future__ import annotations

from collections.abc import Iterator

import pytest
import responses

from nr_llm.mcp.wire.deadline import OperationDeadline

from ..scripted import FakeClock
from .world import FakeWall, World


@pytest.fixture
def world() -> Iterator[World]:
    with responses.RequestsMock(assert_all_requests_are_fired=False) as mocked:
        yield World(mocked, FakeClock())


@pytest.fixture
def wall() -> FakeWall:
    return FakeWall()


@pytest.fixture
def deadline(world: World) -> OperationDeadline:
    return OperationDeadline(20, world.clock, "demo")
