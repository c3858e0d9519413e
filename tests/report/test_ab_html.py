"""Tests of the HTML comparison report: a well-formed, self-contained page whose plots carry one
mark per data point and whose user strings are escaped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest

from benchlab.report.ab_html import comparison_html
from benchlab.report.svg import ticks as _ticks
from benchlab.schema.comparison import Comparison, MetricComparison, OpDelta, Outcome, PairedEstimate

# Elements HTML never closes; everything else must be closed in order for the page to be sound.
_VOID = {"meta", "br", "hr", "img", "input", "link", "col", "area", "base", "wbr", "source"}
_EVIL = "<script>alert('x')</script> & co"


class _Checker(HTMLParser):
    """Records structural errors (unclosed or crossed tags) that the lenient parser tolerates."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tags: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag not in _VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)  # <circle .../>: opened and closed at once, inside SVG

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _estimate(change: float, low: float, high: float, outcome: Outcome,
              q: float | None = 0.01) -> PairedEstimate:
    return PairedEstimate(n_pairs=20, change=change, ci_low=low, ci_high=high,
                          ci_level=1 - 0.05 / 3, p_value=0.004, q_value=q, outcome=outcome)


def _metric(job: str, control: tuple[float, ...], treatment: tuple[float, ...],
            estimate: PairedEstimate, **kw: object) -> MetricComparison:
    return MetricComparison(job=job, model="mlp", test="cpu", metric="NET latency", unit="ms",
                            control=control, treatment=treatment, estimate=estimate, **kw)


def _comparison(control_label: str = "main") -> Comparison:
    ops = (
        OpDelta("aten::addmm", 1.20, 1.45, "ms"),
        OpDelta("aten::relu", 0.30, 0.28, "ms"),
        OpDelta("aten::softmax & <fused>", 0.10, 0.16, "ms"),
        OpDelta("aten::new_op", 0.0, 0.05, "ms"),  # control 0: change is infinite
    )
    return Comparison(
        control=control_label,
        treatment="feature/faster-gemm",
        metrics=(
            _metric("mlp cpu", tuple(10 + 0.1 * i for i in range(20)),
                    tuple(10.8 + 0.1 * i for i in range(20)),
                    _estimate(0.081, 0.06, 0.10, Outcome.REGRESSION), verified=True,
                    op_deltas=ops),
            _metric("resnet <b>big</b>", (5.0, 5.1, 4.9, 5.05, 5.02),
                    (5.01, 5.08, 4.93, 5.04, 5.0),
                    _estimate(0.001, -0.004, 0.005, Outcome.NO_CHANGE, q=0.8)),
            _metric("bert", (100.0, 120.0, 90.0), (130.0, 95.0, 110.0),
                    _estimate(0.03, -0.2, float("inf"), Outcome.UNDECIDED, q=None)),
        ),
        min_effect=0.01,
        alpha=0.05,
        looks=(20, 40, 80),
        notes=("look 2 of 3 & stopped <early>",),
        failed=("vit: treatment run failed <exit 1>",),
    )


def _parse(page: str) -> _Checker:
    checker = _Checker()
    checker.feed(page)
    checker.close()
    return checker


def _svgs(page: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", page, flags=re.DOTALL)


def test_page_is_well_formed_and_self_contained() -> None:
    page = comparison_html(_comparison())
    checker = _parse(page)
    assert checker.errors == [] and checker.stack == []
    assert page.count("<svg") == page.count("</svg>")
    assert "http://" not in page and "https://" not in page
    assert "<script" not in page.lower()
    assert "<link" not in page and " src=" not in page  # nothing loaded from elsewhere
    for svg in _svgs(page):
        ET.fromstring(svg)  # each plot is also well-formed XML, as standalone SVG must be


def test_one_plot_per_expectation() -> None:
    page = comparison_html(_comparison())
    kinds = [re.search(r'class="plot (\w+)"', svg).group(1) for svg in _svgs(page)]
    # One forest plot overall, one strip plot per metric, bars only where operators moved.
    assert kinds.count("forest") == 1
    assert kinds.count("strip") == 3
    assert kinds.count("ops") == 1
    assert len(kinds) == 5


def test_marks_match_the_data() -> None:
    comparison = _comparison()
    svgs = _svgs(comparison_html(comparison))
    strips = [s for s in svgs if 'class="plot strip"' in s]
    for metric, svg in zip(comparison.metrics, strips, strict=True):
        root = ET.fromstring(svg)
        assert len(root.findall(".//circle")) == len(metric.control) + len(metric.treatment)
        assert len(root.findall(".//circle[@class='pt control']")) == len(metric.control)
    forest = ET.fromstring(next(s for s in svgs if 'class="plot forest"' in s))
    assert len(forest.findall(".//polygon[@class='est']")) == len(comparison.metrics)
    ops = ET.fromstring(next(s for s in svgs if 'class="plot ops"' in s))
    bars = ops.findall(".//rect[@class='bar']")
    assert len(bars) == len(comparison.metrics[0].op_deltas)
    # Sorted by delta, largest slowdown first; the only speed-up (relu) comes last.
    assert [b.find("title").text.rsplit(": ", 1)[0] for b in bars] == [
        "aten::addmm", "aten::softmax & <fused>", "aten::new_op", "aten::relu"]


def test_user_strings_are_escaped() -> None:
    page = comparison_html(_comparison(control_label=_EVIL))
    assert "<script" not in page.lower()
    assert "&lt;script&gt;" in page
    assert "<b>big</b>" not in page and "resnet &lt;b&gt;big&lt;/b&gt;" in page
    assert "&lt;fused&gt;" in page and "&lt;exit 1&gt;" in page and "&lt;early&gt;" in page
    checker = _parse(page)
    assert checker.errors == []
    assert _EVIL in "".join(checker.text)  # the label still reads as written


def test_summary_and_table() -> None:
    page = comparison_html(_comparison())
    assert "1 regression</h1>" in page
    assert "δ = 1%" in page and "α (false discovery rate) = 0.05" in page
    assert "20 → 40 → 80" in page
    assert "98.3% CI" in page  # the interval's real level, not a hard-coded 95%
    assert "regression (verified)" in page and "no change" in page and "undecided" in page
    assert page.count("<tr>") == 1 + 3
    assert "+8.10%" in page and "n/a" in page  # an infinite bound prints as n/a, not inf%


def test_unconfirmed_and_empty() -> None:
    base = _comparison()
    unconfirmed = Comparison(
        control="a", treatment="b", min_effect=0.0, alpha=0.05, looks=(20,),
        metrics=(_metric("j", (1.0, 1.0), (2.0, float("nan")),
                         _estimate(0.5, 0.2, 0.9, Outcome.REGRESSION), verified=False),))
    page = comparison_html(unconfirmed)
    assert "no regression</h1>" in page and "not confirmed by the verify re-run" in page
    strip = ET.fromstring(next(s for s in _svgs(page) if "plot strip" in s))
    assert len(strip.findall(".//circle")) == 3  # the NaN is left out, not drawn at an edge
    empty = comparison_html(Comparison(control="a", treatment="b", metrics=(), min_effect=0.01,
                                       alpha=0.05, looks=(20,), failed=base.failed))
    assert _svgs(empty) == [] and "Could not be compared" in empty
    assert _parse(empty).errors == []


@pytest.mark.parametrize(("lo", "hi"), [(0.0, 1.0), (845.0, 1525.0), (-0.013, 0.094),
                                        (1e-6, 3e-6), (5.0, 5.0001)])
def test_ticks_are_round_and_inside(lo: float, hi: float) -> None:
    ticks = _ticks(lo, hi)
    assert 3 <= len(ticks) <= 7
    assert all(lo - 1e-12 <= t <= hi + 1e-12 for t in ticks)
    assert all(len(f"{t:.4g}") <= 8 for t in ticks)


def test_writes_a_viewable_page(tmp_path: Path) -> None:
    path = tmp_path / "ab-report.html"
    path.write_text(comparison_html(_comparison()), encoding="utf-8")
    assert path.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
