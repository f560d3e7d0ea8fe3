"""The insight pages: review analytics, and the simulation of a candidate review policy
against recorded tool calls. Both only read; both are for reviewers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django import forms
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.utils.safestring import SafeString
from django.views.decorators.http import require_GET, require_http_methods

from reviews import analytics, charts, simulation
from reviews.decorators import reviewer_required
from reviews.models import ReviewItem


def _days(request: HttpRequest) -> int:
    try:
        days = int(request.GET.get("days", 30))
    except ValueError:
        days = 30
    return days if days in analytics.WINDOWS else 30


def _times_to_decision(by: str, times: Sequence[analytics.Timing]) -> SafeString:
    """A grouped bar chart of the median and 90th percentile time to decision by `by`."""
    dur = analytics.duration
    return charts.grouped_bars(
        f"Time to decision by {by} (median, 90th percentile)",
        [t.name for t in times],
        [
            b
            for t in times
            for b in (
                charts.Bar("median", t.median, f"median {dur(t.median)}"),
                charts.Bar("p90", t.p90, f"p90 {dur(t.p90)}", "bar-3"),
            )
        ],
    )


def _analytics_charts(report: analytics.Report) -> dict[str, Any]:
    mix_css = {
        "approve": "bar-2",
        "edit": "bar",
        "reject": "bar-4",
        "respond": "bar-5",
        "answer": "bar",
        "continue": "bar-2",
        "expired": "bar-3",
    }
    return {
        "ages": charts.bars(
            "Pending items by age",
            [charts.Bar(label, n, str(n)) for label, n in report.age_buckets],
        ),
        "reviewers": _times_to_decision("reviewer", report.by_reviewer),
        "tools": _times_to_decision("tool", report.by_tool),
        "mix": charts.stacked(
            "Decision mix",
            [charts.Bar(name, n, str(n), mix_css[name]) for name, n in report.mix],
        ),
        "mix_legend": charts.legend([(mix_css[name], f"{name} ({n})") for name, n in report.mix]),
        "timing_legend": charts.legend([("bar", "median"), ("bar-3", "90th percentile")]),
        "per_day": charts.columns(
            "Decisions and expiries per day",
            [day[5:] for day, _, _ in report.per_day],
            [
                [
                    charts.Bar("decided", decided, str(decided), "bar-2"),
                    charts.Bar("expired", expired, str(expired), "bar-3"),
                ]
                for _, decided, expired in report.per_day
            ],
        ),
        "per_day_legend": charts.legend([("bar-2", "decided"), ("bar-3", "expired")]),
    }


@require_GET
@reviewer_required
def analytics_view(request: HttpRequest) -> HttpResponse:
    """Pending count and age, time to decision by reviewer and tool, decision mix,
    expiries: over the items the user may see, in the last 7, 30 or 90 days."""
    days = _days(request)
    report = analytics.report(ReviewItem.objects.visible_to(request.user), days)
    context = {
        "report": report,
        "charts": _analytics_charts(report),
        "windows": analytics.WINDOWS,
        "nav": "analytics",
    }
    return render(request, "reviews/analytics.html", context)


class SimulationForm(forms.Form):
    """A candidate `interrupt_on` policy and the window to replay."""

    days = forms.IntegerField(label="Replay the last … days", min_value=1, max_value=90, initial=7)
    graph = forms.CharField(label="Graph (empty: all)", required=False, max_length=200)
    policy = forms.CharField(
        label="Candidate interrupt_on (JSON)",
        widget=forms.Textarea(attrs={"rows": 10, "spellcheck": "false", "class": "json"}),
        max_length=64 * 1024,
    )


@require_http_methods(["GET", "POST"])
@reviewer_required
def simulate_view(request: HttpRequest) -> HttpResponse:
    """Replay recorded tool calls against a candidate policy typed into the form."""
    result = None
    problems: list[str] = []
    status = 200
    if request.method == "POST":
        form = SimulationForm(request.POST)
        if form.is_valid():
            candidates, problems = simulation.parse_policy(form.cleaned_data["policy"])
            if not problems:
                since = timezone.now() - timedelta(days=form.cleaned_data["days"])
                calls, truncated = simulation.recorded_calls(
                    request.user, since, form.cleaned_data["graph"]
                )
                result = simulation.simulate(candidates, calls)
                result.truncated = truncated
        if problems or not form.is_valid():
            status = 422
    else:
        since = timezone.now() - timedelta(days=7)
        calls, _ = simulation.recorded_calls(request.user, since)
        form = SimulationForm(initial={"policy": simulation.current_policy_example(calls)})
    chart = None
    if result is not None and result.tools:
        chart = charts.grouped_bars(
            "Reviews per tool: now and with the candidate",
            [t.tool for t in result.tools],
            [
                b
                for t in result.tools
                for b in (
                    charts.Bar("now", t.reviewed_now, f"now {t.reviewed_now}", "bar-3"),
                    charts.Bar("candidate", t.would_review, f"candidate {t.would_review}"),
                )
            ],
        )
    context = {
        "form": form,
        "problems": problems,
        "result": result,
        "chart": chart,
        "legend": charts.legend([("bar-3", "reviews now"), ("bar", "with the candidate")]),
        "operators": simulation.OPERATORS,
        "nav": "simulate",
    }
    return render(request, "reviews/simulate.html", context, status=status)


__all__ = ["SimulationForm", "analytics_view", "simulate_view"]
