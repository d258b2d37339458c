"""The benchmark's figure (matplotlib, written without a display): span F1 and response F1 of each detector with
their bootstrap intervals, and the response-level precision-recall curves of the detectors that give scores."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def _bars(ax: Any, entries: list[Mapping[str, Any]], level: str, title: str) -> None:
    labels = [e["label"] for e in entries]
    values = [e["report"]["overall"][level]["f1"] for e in entries]
    lows, highs = [], []
    for entry, value in zip(entries, values):
        interval = ((entry["report"].get("ci") or {}).get("overall", {}).get(level, {}) or {}).get("f1")
        lows.append(value - interval[0] if interval else 0.0)
        highs.append(interval[1] - value if interval else 0.0)
    positions = list(range(len(entries)))
    ax.barh(positions, values, xerr=[lows, highs], color="#4c72b0", ecolor="#333333", capsize=3)
    ax.set_yticks(positions, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("F1 (95 % bootstrap interval)")
    ax.set_title(title, fontsize=10)


def _pr_curves(ax: Any, entries: list[Mapping[str, Any]]) -> None:
    drawn = 0
    for entry in entries:
        curve = entry.get("pr_curve")
        if not curve or len(curve["recall"]) < 4:  # yes/no scores (rules) make no curve worth drawing
            continue
        ax.plot(curve["recall"], curve["precision"], linewidth=1.2,
                label=f"{entry['label']} (AP {curve['average_precision']:.2f})")
        drawn += 1
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("recall (responses)")
    ax.set_ylabel("precision (responses)")
    ax.set_title("Response-level precision-recall", fontsize=10)
    if drawn:
        ax.legend(fontsize=7, loc="lower left")
    else:
        ax.text(0.5, 0.5, "no detector gives graded scores", ha="center", va="center")


def plot_leaderboard(payload: Mapping[str, Any], path: str | Path) -> Path:
    """Write the figure to ``path`` (its suffix picks the format: .svg, .png, .pdf)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    entries = list(payload["detectors"])
    height = max(3.0, 0.35 * len(entries) + 1.5)
    fig, axes = plt.subplots(1, 3, figsize=(15, height), constrained_layout=True)
    _bars(axes[0], entries, "span", "Span F1 (characters)")
    _bars(axes[1], entries, "response", "Response F1 (has a hallucination)")
    _pr_curves(axes[2], entries)
    fig.suptitle(f"{payload['responses']} responses of {Path(payload['data']).name}", fontsize=11)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    svg_metadata = {"Date": None} if path.suffix == ".svg" else None  # reproducible SVG bytes
    from ragtruth_spans.core.files import atomic_writer

    with atomic_writer(path, "wb") as fh:
        fig.savefig(fh, format=path.suffix.lstrip(".") or "svg", metadata=svg_metadata)
    plt.close(fig)
    return path
