"""One row per target: what every bench script hands `make bench` (bench/suite.py).

A bench script run with ``--json FILE`` writes, beside its own figures, a ``"summary"`` list
of rows made by `row`. Each row names a measurement, jsstore's figure, the baseline it is
judged against (measured in the same run) and the target ratio; the ratio and the verdict
are computed here, once, for every script.
"""

from __future__ import annotations

HIGHER = "higher"       # a rate: jsstore / baseline must reach the target
LOWER = "lower"         # a time or a size: jsstore / baseline must stay under the target


def row(bench: str, measurement: str, ours: float | None, baseline: str,
        theirs: float | None, target: float | None, unit: str = "msgs/s",
        better: str = HIGHER, absolute: bool = False) -> dict:
    """A summary row. With `absolute` (or `theirs` None) the target is a figure in `unit`
    (e.g. 50 ms, 32 B per subject) and the ratio to `theirs` is only shown; otherwise the
    target is the ratio. `target` None: shown, not judged."""
    absolute = absolute or theirs is None
    ratio = ours / theirs if ours is not None and theirs else None
    if ours is None:
        result = "MISSING"
    elif absolute:
        result = ("info" if target is None else
                  "PASS" if (ours >= target if better == HIGHER else ours <= target) else "FAIL")
    else:
        result = ("info" if target is None or ratio is None else
                  "PASS" if (ratio >= target if better == HIGHER else ratio <= target)
                  else "FAIL")
    return {"bench": bench, "measurement": measurement, "jsstore": ours, "baseline": baseline,
            "baseline_value": theirs, "unit": unit, "ratio": ratio, "target": target,
            "better": better, "absolute": absolute, "result": result}


def figure(value: float | None, unit: str) -> str:
    if value is None:
        return "n/a"
    if unit in ("msgs/s", "ops/s", "rows/s", "B/s"):
        scaled = (f"{value / 1e6:.2f}M" if value >= 1e6 else
                  f"{value / 1e3:.1f}k" if value >= 1e3 else f"{value:.1f}")
        return f"{scaled} {unit}"
    return f"{value:,.1f} {unit}" if value < 1000 else f"{value:,.0f} {unit}"


def render(rows: list[dict]) -> list[str]:
    """The markdown table of `rows`."""
    lines = ["| bench | measurement | jsstore | baseline | ratio | target | result |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        against = (r["baseline"] or "-" if r["baseline_value"] is None else
                   f"{r['baseline']} {figure(r['baseline_value'], r['unit'])}")
        if r.get("absolute", r["baseline_value"] is None):
            target = ("" if r["target"] is None else
                      f"{'>=' if r['better'] == HIGHER else '<='} "
                      f"{figure(r['target'], r['unit'])}")
        else:
            target = ("" if r["target"] is None else
                      f"{'>=' if r['better'] == HIGHER else '<='} {r['target']:.3g}x")
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.2f}x"
        lines.append(f"| {r['bench']} | {r['measurement']} | {figure(r['jsstore'], r['unit'])} "
                     f"| {against} | {ratio} | {target} | {r['result']} |")
    return lines
