"""The picture of bench/README.md: each measured ratio beside its target.

``plot_ratios(points, path, title)`` draws one horizontal bar per point (label, measured
ratio to its baseline, target ratio) on a logarithmic axis, the target as a tick on the bar,
green where the target is met and red where it is not.  bench/report.py calls it with
``--plot FILE.png``.  matplotlib is imported only here, and only when a picture is asked for."""

from __future__ import annotations


def plot_ratios(points: list[tuple[str, float, float]], path: str, title: str) -> None:
    import matplotlib
    matplotlib.use("Agg")               # files only, no display
    import matplotlib.pyplot as plt

    labels = [label for label, _, _ in points]
    measured = [ratio for _, ratio, _ in points]
    targets = [target for _, _, target in points]
    colours = ["#2e7d32" if ratio >= target else "#c62828" for _, ratio, target in points]
    fig, ax = plt.subplots(figsize=(8, 0.6 * len(points) + 1.4))
    rows = range(len(points))
    ax.barh(rows, measured, color=colours, height=0.55, label="measured")
    ax.scatter(targets, rows, marker="|", s=900, color="black", zorder=3, label="target")
    for row, ratio in zip(rows, measured):
        ax.annotate(f"{ratio:.2f}x", (ratio, row), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize=9)
    ax.set_xscale("log")
    ax.axvline(1.0, color="grey", linewidth=0.8, linestyle=":")
    ax.set_yticks(list(rows), labels)
    ax.invert_yaxis()
    ax.set_xlabel("jsstore rate / baseline rate (log scale; 1 = as fast as the baseline)")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
