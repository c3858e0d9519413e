"""Tests of the metric line protocol: emitting native lines and parsing every accepted form."""

from __future__ import annotations

import json

import pytest

from benchlab.protocol.lines import (
    PREFIX,
    ReportedSummary,
    format_detail,
    format_info,
    format_metric,
    format_summary,
    parse_output,
)
from benchlab.schema.result import Sample


def _observer(payload: dict[str, object], prefix: str = "PyTorchObserver ") -> str:
    return prefix + json.dumps(payload)


def test_format_metric_is_one_compact_line_that_parses_back() -> None:
    line = format_metric("NET", "latency", 12.5, "ms", device="cpu")
    assert line.startswith(PREFIX)
    assert "\n" not in line and " " not in line[len(PREFIX) :]
    payload = json.loads(line[len(PREFIX) :])
    assert payload == {"type": "NET", "metric": "latency", "unit": "ms", "value": 12.5,
                       "device": "cpu"}  # fmt: skip
    parsed = parse_output(line)
    assert parsed.samples == (Sample("latency", 12.5, "ms", "NET", 0, 0),)
    assert parsed.metric_lines == 1 and parsed.malformed == ()


def test_format_metric_rejects_non_finite_values_and_clashing_extras() -> None:
    with pytest.raises(ValueError):
        format_metric("NET", "latency", float("nan"), "ms")
    with pytest.raises(ValueError):
        format_metric("NET", "latency", float("inf"), "ms")
    with pytest.raises(ValueError):
        format_metric("NET", "latency", 1.0, "ms", type="conv")


def test_detail_info_and_summary_round_trip() -> None:
    lines = [
        format_detail(runtime_version="2.3.0", stop_reason="target_ci_reached"),
        format_detail(stop_reason="time_budget_exhausted", processes=3),
        format_info("warming up\nsecond line"),
        format_summary("NET", "latency", "ms", 50, {"p50": 3.0, "mean": 3.25}),
    ]
    assert all("\n" not in line for line in lines)
    parsed = parse_output("\n".join(lines))
    # later detail lines override earlier facts of the same name
    assert parsed.details == {
        "runtime_version": "2.3.0",
        "stop_reason": "time_budget_exhausted",
        "processes": 3,
    }
    assert parsed.infos == ("warming up\nsecond line",)
    assert parsed.summaries == (ReportedSummary("NET", "latency", "ms", 50,
                                                {"p50": 3.0, "mean": 3.25}),)  # fmt: skip
    assert parsed.summaries[0].key == "NET latency"
    assert parsed.samples == () and parsed.metric_lines == 4


def test_every_sample_is_kept_with_per_op_lines_interleaved() -> None:
    # FAI-PEP kept only the last `iter` metric lines, so op lines crowded out NET samples.
    lines = []
    for i in range(7):
        lines.append(_observer({"type": "conv1", "metric": "latency", "unit": "us",
                                "value": 100 + i}))  # fmt: skip
        lines.append(_observer({"type": "relu", "metric": "latency", "unit": "us",
                                "value": 10 + i}))  # fmt: skip
        lines.append(_observer({"type": "NET", "metric": "latency", "unit": "us",
                                "value": str(1000.5 + i)}))  # fmt: skip
    parsed = parse_output("\n".join(lines))
    net = [s for s in parsed.samples if s.type == "NET"]
    assert [s.value for s in net] == [1000.5 + i for i in range(7)]
    assert [s.index for s in net] == list(range(7))
    assert [s.value for s in parsed.samples if s.type == "conv1"] == [100 + i for i in range(7)]
    assert [s.value for s in parsed.samples if s.type == "relu"] == [10 + i for i in range(7)]
    assert len(parsed.samples) == 21 and parsed.metric_lines == 21
    # order of appearance is preserved across types
    assert [s.type for s in parsed.samples[:3]] == ["conv1", "relu", "NET"]
    assert all(s.repetition == 0 for s in parsed.samples)


def test_string_values_are_converted_and_indices_count_per_type_and_metric() -> None:
    lines = [
        _observer({"type": "NET", "metric": "latency", "unit": "us", "value": "1234.5"}),
        _observer({"type": "NET", "metric": "memory", "unit": "MB", "value": 7}),
        _observer({"type": "NET", "metric": "latency", "unit": "us", "value": "1300"}),
    ]
    samples = parse_output(lines).samples
    assert [(s.metric, s.value, s.index) for s in samples] == [
        ("latency", 1234.5, 0),
        ("memory", 7.0, 0),
        ("latency", 1300.0, 1),
    ]


def test_prefix_inside_a_logcat_line_and_text_around_the_json() -> None:
    text = "\r\n".join(
        [
            "--------- beginning of main",
            'I/PyTorch( 1234): PyTorchObserver {"type":"NET","metric":"latency",'
            '"unit":"ms","value":5.5} trailing words',
            '01-01 10:00:00.000 I/C2( 99): Caffe2Observer {"type":"NET","metric":"latency",'
            '"unit":"ms","value":6.5}',
            "some unrelated log line {not json}",
        ]
    )
    parsed = parse_output(text)
    assert [s.value for s in parsed.samples] == [5.5, 6.5]
    assert parsed.malformed == ()


def test_crlf_and_iterables_of_lines_are_accepted() -> None:
    line = format_metric("NET", "latency", 1.0, "ms")
    assert parse_output(line + "\r\n" + line + "\r\n").samples[1].value == 1.0
    assert len(parse_output(iter([line + "\r\n", line + "\n"])).samples) == 2


def test_info_string_form_is_kept_once_as_info() -> None:
    lines = [
        _observer({"type": "conv1", "metric": "latency", "unit": "us",
                   "info_string": "3x3 stride 1"})  # fmt: skip
        for _ in range(3)
    ]
    lines.append(_observer({"type": "NET", "info_string": "model v2"}))
    lines.append(format_info("plain note"))
    lines.append(_observer({"type": "conv2", "info": "fused"}))
    lines.append(
        _observer({"type": "NET", "metric": "flops", "unit": "", "value": 5, "info_string": "x"})
    )
    parsed = parse_output(lines)
    assert parsed.infos == (
        "conv1 latency: 3x3 stride 1",
        "NET: model v2",
        "plain note",
        "conv2: fused",
        "NET flops: x",
    )
    assert [s.value for s in parsed.samples] == [5.0]
    assert parsed.malformed == ()


def test_fai_pep_summary_form_becomes_a_reported_summary() -> None:
    summary = {"p0": 1, "p10": 1.5, "p50": "2.0", "p90": 3, "p100": 4, "mean": 2.2,
               "stdev": 0.5, "MAD": 0.3}  # fmt: skip
    line = _observer({"type": "NET", "metric": "latency", "unit": "ms", "num_runs": 40,
                      "summary": summary})  # fmt: skip
    parsed = parse_output(line)
    assert parsed.samples == ()
    (reported,) = parsed.summaries
    assert reported.num_runs == 40 and reported.unit == "ms"
    assert reported.values["p50"] == 2.0 and reported.values["MAD"] == 0.3


def test_custom_output_is_kept_as_detail_per_table() -> None:
    lines = [
        _observer({"custom_output": "row 1", "table_name": "accuracy"}),
        _observer({"custom_output": "row 2", "table_name": "accuracy"}),
        _observer({"custom_output": {"a": 1}}),
    ]
    parsed = parse_output(lines)
    assert parsed.details["custom_output"] == {
        "accuracy": ["row 1", "row 2"],
        "Custom Output": [{"a": 1}],
    }
    assert parsed.metric_lines == 3 and parsed.samples == ()


def test_legacy_nested_form_gives_one_sample_per_inner_entry() -> None:
    line = _observer(
        {
            "NET": {"latency": {"value": "10.5", "unit": "ms"}},
            "conv1": {"latency": {"value": 2, "unit": "ms"}, "flops": {"value": 9, "unit": ""}},
            "note": "not an object, skipped",
        },
        prefix="Caffe2Observer ",
    )
    parsed = parse_output([line, line])
    assert [(s.key, s.value, s.index) for s in parsed.samples] == [
        ("NET latency", 10.5, 0),
        ("conv1 latency", 2.0, 0),
        ("conv1 flops", 9.0, 0),
        ("NET latency", 10.5, 1),
        ("conv1 latency", 2.0, 1),
        ("conv1 flops", 9.0, 1),
    ]


def test_identifier_filters_lines_and_can_serve_as_the_prefix() -> None:
    lines = [
        'PyTorchObserver {"type":"NET","metric":"latency","unit":"ms","value":1,"id":"run_a"}',
        'PyTorchObserver {"type":"NET","metric":"latency","unit":"ms","value":2,"id":"run_b"}',
        'MyObserver {"type":"NET","metric":"latency","unit":"ms","value":3}',
    ]
    assert [s.value for s in parse_output(lines, identifier="run_a").samples] == [1.0]
    assert [s.value for s in parse_output(lines, identifier="MyObserver ").samples] == [3.0]
    assert [s.value for s in parse_output(lines).samples] == [1.0, 2.0]


@pytest.mark.parametrize(
    "payload",
    [
        '{"type":"NET","metric":"latency","unit":"ms","value":',  # truncated JSON
        "no json here",
        '{"type":"NET","metric":"latency","unit":"ms"}',  # no value
        '{"type":"NET","unit":"ms","value":1}',  # no metric
        '{"type":"NET","metric":"latency","value":1}',  # no unit
        '{"type":"NET","metric":"latency","unit":"ms","value":"fast"}',
        '{"type":"NET","metric":"latency","unit":"ms","value":NaN}',
        '{"type":"NET","metric":"latency","unit":"ms","value":Infinity}',
        '{"type":"NET","metric":"latency","unit":"ms","value":"nan"}',
        '{"type":"NET","metric":"latency","unit":"ms","value":true}',
        '{"type":"NET","metric":"latency","unit":"ms","value":[1]}',
        '{"type":"NET","metric":"latency","unit":"ms","summary":{"p50":1}}',  # no num_runs
        '{"type":"NET","metric":"latency","unit":"ms","num_runs":3,"summary":{"p50":"x"}}',
        '{"NET":{"latency":{"unit":"ms"}}}',  # nested without value
        '{"something":"else"}',
        "[1, 2, 3]",
        '{"detail": "not an object"}',
    ],
)
def test_bad_payloads_behind_a_known_prefix_are_malformed(payload: str) -> None:
    good = format_metric("NET", "latency", 1.0, "ms")
    bad = PREFIX + payload
    parsed = parse_output([good, bad, "plain log line", good])
    assert parsed.malformed == (bad,)
    assert [s.value for s in parsed.samples] == [1.0, 1.0]
    assert [s.index for s in parsed.samples] == [0, 1]
    assert parsed.metric_lines == 2


def test_a_malformed_nested_line_contributes_nothing() -> None:
    line = _observer({"NET": {"latency": {"value": 1, "unit": "ms"},
                              "memory": {"value": "lots", "unit": "MB"}}})  # fmt: skip
    parsed = parse_output(line)
    assert parsed.samples == () and len(parsed.malformed) == 1


def test_malformed_lines_are_truncated_to_200_characters() -> None:
    bad = PREFIX + "{" + "x" * 500
    (kept,) = parse_output(bad).malformed
    assert len(kept) == 200 and kept.startswith(PREFIX)


def test_lines_without_a_known_prefix_are_ignored() -> None:
    text = 'hello\n{"type":"NET","metric":"latency","unit":"ms","value":1}\nERROR: crash\n'
    parsed = parse_output(text)
    assert parsed.samples == () and parsed.malformed == () and parsed.metric_lines == 0
