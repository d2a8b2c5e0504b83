"""PNG charts of the analytics for people (matplotlib, Agg backend: no display needed): a line chart of sent,
replied, positive and bounced by day, and the reply heatmap of the overview. Pure: an answer in, PNG out."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.figure import Figure

WIDTH, HEIGHT, DPI = 8.0, 4.0, 100
"""Every chart is 800 x 400 pixels (the overview: 800 x 800, the line chart above the heatmap)."""
LINES = (("sent", "Sent"), ("replied", "Replied"), ("positive", "Positive"), ("bounced", "Bounced"))
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _figure(width: float, height: float) -> Figure:
    """A new figure of `width` x `height` inches. matplotlib is imported on the first chart drawn, not when
    the service starts: its import was 0.4 s of CPU of every `outreach` process (server, workers, every
    command), most of which never draw a chart."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _png(fig: Figure) -> bytes:
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=DPI)
    return out.getvalue()


def _lines(ax: Any, series: Sequence[Any], title: str) -> None:
    dates = [d.date[5:] for d in series]
    xs = list(range(len(dates)))
    for name, label in LINES:
        ax.plot(xs, [getattr(d, name) for d in series], label=label, linewidth=1.6)
    step = max(1, len(xs) // 10)
    ax.set_xticks(xs[::step], dates[::step])
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(loc="upper left", fontsize="small")


def series_chart(answer: Any) -> bytes:
    """Sent, replied, positive and bounced by day (campaign stats, or any answer with `series`, `days`)."""
    fig = _figure(WIDTH, HEIGHT)
    _lines(fig.add_subplot(), answer.series, f"Last {answer.days} days ({answer.timezone})")
    return _png(fig)


def overview_chart(answer: Any) -> bytes:
    """The overview: the line chart of its days above the reply heatmap (weekday x hour, leads' zones)."""
    fig = _figure(WIDTH, HEIGHT * 2)
    top, bottom = fig.subplots(2, 1)
    _lines(top, answer.series, f"Last {answer.days} days ({answer.timezone})")
    image = bottom.imshow(answer.heatmap, aspect="auto", cmap="Blues")
    bottom.set_yticks(range(7), WEEKDAYS)
    bottom.set_xticks(range(0, 24, 2), [f"{h:02d}" for h in range(0, 24, 2)])
    bottom.set_title("Replies by weekday and hour (each lead's time zone)")
    fig.colorbar(image, ax=bottom)
    return _png(fig)


def analytics_chart(answer: Any) -> bytes:
    """Campaign analytics: sent and replied per campaign (the ten that sent most), as bars."""
    rows = answer.by_campaign[:10]
    fig = _figure(WIDTH, HEIGHT)
    ax = fig.add_subplot()
    ys = list(range(len(rows)))
    ax.barh([y + 0.2 for y in ys], [r.sent for r in rows], height=0.4, label="Sent")
    ax.barh([y - 0.2 for y in ys], [r.replied for r in rows], height=0.4, label="Replied")
    ax.set_yticks(ys, [r.name[:30] for r in rows])
    ax.invert_yaxis()
    ax.set_title(f"Campaigns, last {answer.days} days")
    ax.legend(fontsize="small")
    return _png(fig)


def breakdown_chart(answer: Any) -> bytes:
    """A campaign's breakdown: reply rate per step and variant, as bars."""
    labels, rates = [], []
    for step in answer.steps:
        for v in step.variants:
            labels.append(f"Email {step.step + 1} {v.name}")
            rates.append(v.reply_rate * 100)
    fig = _figure(WIDTH, HEIGHT)
    ax = fig.add_subplot()
    ax.bar(range(len(labels)), rates)
    ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right", fontsize="small")
    ax.set_ylabel("Reply rate (%)")
    ax.set_title("Reply rate by step and variant, since launch")
    return _png(fig)
