"""The one unit table: conversions within a dimension, refusals across them."""

from __future__ import annotations

import pytest

from benchlab.harness.jobrun import summarize_samples
from benchlab.schema.result import Sample
from benchlab.schema.units import Dimension, convert, dimension_of, same_dimension


@pytest.mark.parametrize(("value", "source", "target", "expected"), [
    (1500.0, "us", "ms", 1.5), (2_500_000.0, "ns", "ms", 2.5), (0.25, "s", "ms", 250.0),
    (1.0, "KB", "B", 1000.0), (1.0, "KiB", "bytes", 1024.0), (3.0, "MB", "MiB", 3e6 / 2**20),
    (1.0, "GiB", "MiB", 1024.0), (4.0, "mJ", "J", 0.004), (1.0, "Wh", "J", 3600.0),
    (2500.0, "mW", "W", 2.5), (1.0, " ms ", "ms", 1.0),
])
def test_values_convert_within_a_dimension(value: float, source: str, target: str,
                                           expected: float) -> None:
    assert convert(value, source, target) == pytest.approx(expected)


@pytest.mark.parametrize(("source", "target"), [
    ("bytes", "ms"), ("mJ", "W"), ("furlongs", "MiB"), ("ms", "furlongs"),
])
def test_values_do_not_convert_across_dimensions_or_from_unknown_units(source: str,
                                                                       target: str) -> None:
    assert convert(1.0, source, target) is None
    assert not same_dimension(source, target)


def test_an_unknown_unit_converts_only_to_itself() -> None:
    assert convert(7.0, "dB", "dB") == 7.0
    assert dimension_of("dB") is None and dimension_of("KiB") is Dimension.SIZE


def test_samples_of_one_metric_in_several_units_are_summarised_in_the_first() -> None:
    samples = [Sample("latency", 2.0, "ms", index=0), Sample("latency", 3000.0, "us", index=1),
               Sample("latency", 0.004, "s", index=2)]
    summary = summarize_samples(samples)["NET latency"]
    assert summary.unit == "ms" and summary.count == 3
    assert (summary.min, summary.p50, summary.max) == pytest.approx((2.0, 3.0, 4.0))


def test_a_sample_that_does_not_convert_is_left_out_with_a_warning() -> None:
    samples = [Sample("latency", 2.0, "ms", index=0), Sample("latency", 5.0, "bytes", index=1)]
    summary = summarize_samples(samples)["NET latency"]
    assert summary.count == 1 and summary.p50 == 2.0
    assert "1 sample(s) in 'bytes' do not convert to 'ms' and are left out of this summary " \
           "(they are stored as reported)" in summary.warnings
