"""The OpenTelemetry SDK's in-memory exporter and metric reader, installed for one test.

The API's global providers can be set once per process; a test must not leave its SDK behind
for the next (every later request would carry a traceparent). ``otel`` puts an SDK tracer and
meter provider in the API's globals for the test and puts back what was there after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_globals
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@dataclass(frozen=True)
class Point:
    """One histogram data point: its attributes, count, sum and bucket bounds."""

    attributes: dict[str, Any]
    count: int
    sum: float
    bounds: tuple[float, ...]


@dataclass
class Otel:
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    provider: TracerProvider

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def points(self, metric: str) -> list[Point]:
        """The histogram data points of ``metric`` collected so far."""
        data = self.reader.get_metrics_data()
        found: list[Point] = []
        for resource in data.resource_metrics if data is not None else ():
            for scope in resource.scope_metrics:
                for item in scope.metrics:
                    if item.name != metric:
                        continue
                    for point in item.data.data_points:
                        found.append(
                            Point(
                                dict(point.attributes or {}),
                                point.count,  # type: ignore[union-attr]
                                point.sum,  # type: ignore[union-attr]
                                tuple(point.explicit_bounds),  # type: ignore[union-attr]
                            )
                        )
        return found


def attributes_of(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Otel]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", provider)
    monkeypatch.setattr(metrics_globals, "_METER_PROVIDER", meters)
    yield Otel(exporter, reader, provider)
    provider.shutdown()
    meters.shutdown()
