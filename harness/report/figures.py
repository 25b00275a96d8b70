"""Figures of a results document (matplotlib, PNG and SVG): time and % of peak per bench case,
compile time per implementation, lines of code against % of peak, and the cross-check heatmap."""
from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

from harness.report.markdown import per_impl
from harness.report.style import family_colour, plt as _plt, save as _save
from harness.results.records import counts, flag, impl_label, loud


def _timed(doc: dict) -> dict[tuple[str, str], list[dict]]:
    cases = defaultdict(list)
    for r in doc["records"]:
        t = r.get("timing") or {}
        if r["status"] == "ok" and t.get("device_ms_cold"):
            cases[(r["problem"], r["case"])].append(r)
    return cases


def bench_case(problem: str, case: str, rows: list[dict], out: Path) -> list[Path]:
    """Cold device time (left) and % of peak in both timing modes (right), one bar per
    implementation, fastest on top; a flagged row says so in its label and is drawn in red."""
    plt = _plt()
    rows = sorted(rows, key=lambda r: -r["timing"]["device_ms_cold"])
    labels = [impl_label(r) + (f" ({loud(flag(r))})" if flag(r) else "") for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 0.35 * len(rows) + 1.2), sharey=True)
    left.barh(labels, [r["timing"]["device_ms_cold"] for r in rows],
              color=["#c0392b" if not counts(r) else family_colour(r["backend"]) for r in rows])
    left.set_xlabel("device time, cold: L2 flushed, gaps (ms)")
    if max(r["timing"]["device_ms_cold"] for r in rows) > 20 * min(r["timing"]["device_ms_cold"] for r in rows):
        from matplotlib.ticker import LogFormatter
        left.set_xscale("log")
        left.xaxis.set_major_formatter(LogFormatter(labelOnlyBase=True))
        left.xaxis.set_minor_formatter(LogFormatter(labelOnlyBase=True))
    for y, r in enumerate(rows):
        left.text(r["timing"]["device_ms_cold"], y, f" {r['timing']['device_ms_cold']:.3g}", va="center", fontsize=8)
    ys = range(len(rows))
    for mode, key, shift, color in (("cold", "pct_of_peak", -0.2, "#55a868"),
                                    ("sustained", "pct_of_peak_sustained", 0.2, "#8172b2")):
        pct = [r["timing"].get(key) or 0.0 for r in rows]
        right.barh([y + shift for y in ys], pct, height=0.4, color=color, label=mode)
        for y, v in zip(ys, pct, strict=True):
            right.text(v, y + shift, f" {v:.0f}", va="center", fontsize=7)
    right.axvline(100, color="grey", lw=0.8, ls="--")
    right.set_xlabel("% of peak (copy bandwidth, or cuBLAS for GEMM, same mode)")
    right.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"{problem} {case}")
    return _save(fig, out, f"{problem}-{case}")


OVERVIEW_COLUMNS = 3


def overview(doc: dict, out: Path) -> list[Path]:
    """The headline case of each problem, a panel each: every implementation's % of the ceiling (cold),
    or on a run without a GPU its host time; a flagged row drawn in red and named so."""
    from harness.report import verdict
    found = verdict.headline_rows(doc)
    if not found:
        return []
    plt = _plt()
    cols = min(OVERVIEW_COLUMNS, len(found))
    grid_rows = math.ceil(len(found) / cols)
    tallest = max(len(rows) for *_, rows in found)
    fig, axes = plt.subplots(grid_rows, cols, figsize=(6.2 * cols, grid_rows * (0.3 * tallest + 1.4)),
                             squeeze=False, layout="constrained")
    for ax, (problem, case, rows) in zip(axes.flat, found):
        rows = rows[::-1]                               # the best on top
        pct = any(r["timing"].get("pct_of_peak") is not None for r in rows)
        values = [(r["timing"].get("pct_of_peak") or 0.0) if pct else verdict.ms(r) for r in rows]
        ax.barh([impl_label(r) + (f" ({loud(flag(r))})" if flag(r) else "") for r in rows], values,
                color=["#c0392b" if not counts(r) else family_colour(r["backend"]) for r in rows])
        for y, v in enumerate(values):
            ax.text(v, y, f" {v:.3g}", va="center", fontsize=8)
        if pct:
            ax.axvline(100, color="grey", lw=0.8, ls="--")
            ax.axvline(verdict.VERDICT_PCT, color="grey", lw=0.6, ls=":")
        elif max(values) > 20 * min(values):
            ax.set_xscale("log")
        ax.set_xlabel("% of the ceiling, cold" if pct else "host time on the CPU, ms (no GPU)")
        ax.set_title(f"{problem} {case}", fontsize=10)
    for ax in list(axes.flat)[len(found):]:
        ax.set_visible(False)
    return _save(fig, out, "overview")


def compile_times(doc: dict, out: Path) -> list[Path]:
    """Cold and warm compile time per implementation and problem, log scale. Where a run skipped
    the compile processes (--no-compile), the longest build in the run stands in for cold, marked."""
    plt = _plt()
    rows = []
    for key, s in sorted(per_impl(doc["records"]).items()):
        cold, warm = s["compile"].get("cold_s"), s["compile"].get("warm_s")
        if cold:
            rows.append((f"{key[0]}: {key[1]}", cold, warm or 0))
        elif s["first_build_s"]:
            rows.append((f"{key[0]}: {key[1]} (first build in the run)", s["first_build_s"], 0))
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(8, 0.3 * len(rows) + 1.2))
    ys = range(len(rows))
    ax.barh([y - 0.2 for y in ys], [cold for _, cold, _ in rows], height=0.4, label="cold", color="#c44e52")
    if any(warm for *_, warm in rows):          # a legend names only the bars drawn
        ax.barh([y + 0.2 for y in ys], [warm for *_, warm in rows], height=0.4, label="warm", color="#8172b2")
    ax.set_yticks(list(ys), [name for name, *_ in rows])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("compile time (s, log scale): fresh process, empty (cold) or filled (warm) caches")
    ax.legend(loc="lower right")
    return _save(fig, out, "compile-times")


def _label_points(ax, points: list[tuple[float, float, str]]) -> None:
    """Names each point: beside it where there is room, else moved up or down to the nearest free
    place inside the axes, with a leader line."""
    from matplotlib.text import Text
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    dots = [ax.transData.transform((x, y)) for x, y, _ in points]
    placed = []
    spots = [(5, 0), (-5, 0)] + [(dx, sign * dy) for dy in range(9, 120, 9) for sign in (-1, 1) for dx in (5, -5)]
    for x, y, label in sorted(points, key=lambda p: -p[1]):
        for dx, dy in spots:
            text = ax.annotate(label, (x, y), xytext=(dx, dy), textcoords="offset points", fontsize=7, va="center",
                               ha="left" if dx > 0 else "right",
                               arrowprops={"arrowstyle": "-", "lw": 0.4, "color": "grey"} if dy else None)
            text.update_positions(renderer)
            box = Text.get_window_extent(text, renderer).expanded(1.05, 1.1)  # the text alone, not its leader
            free = (frame.containsx(box.x0) and frame.containsx(box.x1) and frame.containsy(box.y0)
                    and frame.containsy(box.y1) and not any(box.overlaps(other) for other in placed)
                    and not any(box.contains(*dot) for dot in dots))
            if free or (dx, dy) == spots[-1]:
                break
            text.remove()
        placed.append(box)


def loc_vs_peak(doc: dict, out: Path) -> list[Path]:
    """Lines of code against the best % of peak over the implementation's bench cases, one panel
    per problem."""
    plt = _plt()
    best = {key: (s["loc"]["total"], s["best_pct"]) for key, s in per_impl(doc["records"]).items()
            if s["best_pct"] is not None and s["loc"].get("total")}
    if not best:
        return []
    problems = sorted({p for p, _ in best})
    fig, axes = plt.subplots(1, len(problems), figsize=(5.5 * len(problems), 6), sharey=True, squeeze=False)
    for ax, problem in zip(axes[0], problems, strict=True):
        pts = [(loc, pct, label) for (p, label), (loc, pct) in best.items() if p == problem]
        ax.scatter([x for x, _, _ in pts], [y for _, y, _ in pts], s=30, zorder=3)
        ax.set_xscale("log")
        ax.set_xlim(min(x for x, _, _ in pts) / 1.5, max(x for x, _, _ in pts) * 4)  # room for the names
        ax.set_ylim(0, max(112, max(y for _, y, _ in pts) + 5))
        ax.axhline(100, color="grey", lw=0.8, ls="--")
        ax.set_title(problem)
        ax.set_xlabel("logical lines of the implementation file (log scale)")
        _label_points(ax, pts)
    axes[0][0].set_ylabel("best % of peak over its bench cases (cold; flagged rows left out)")
    return _save(fig, out, "loc-vs-peak")


CROSSCHECK_COLUMNS = 2


def crosscheck(doc: dict, out: Path) -> list[Path]:
    """Largest relative difference between each pair of implementations on the same inputs."""
    plt = _plt()
    by_problem: dict[str, dict[tuple[str, str], float]] = defaultdict(dict)
    for x in doc.get("crosscheck") or []:
        pair = by_problem[x["problem"]]
        key = tuple(sorted((x["a"], x["b"])))
        pair[key] = max(pair.get(key, 0.0), x["max_rel_diff"])
    if not by_problem:
        return []
    cols = min(CROSSCHECK_COLUMNS, len(by_problem))      # panels a page shows at a readable size
    fig, axes = plt.subplots(math.ceil(len(by_problem) / cols), cols, squeeze=False, layout="constrained",
                             figsize=(7.5 * cols, 7 * math.ceil(len(by_problem) / cols)))
    for ax in list(axes.flat)[len(by_problem):]:
        ax.set_visible(False)
    for ax, (problem, pairs) in zip(axes.flat, sorted(by_problem.items())):
        names = sorted({n for pair in pairs for n in pair})
        grid = [[math.nan] * len(names) for _ in names]
        for (a, b), v in pairs.items():
            i, j = names.index(a), names.index(b)
            grid[i][j] = grid[j][i] = math.log10(max(v, 1e-12))
        image = ax.imshow(grid, cmap="viridis", vmin=-12, vmax=0)
        ax.set_xticks(range(len(names)), names, rotation=60, ha="right", fontsize=10)
        ax.set_yticks(range(len(names)), names, fontsize=10)
        ax.set_title(problem)
    fig.suptitle("log10 of the largest relative difference between two implementations' outputs on the same "
                 "inputs (blank: not run together)")
    fig.colorbar(image, ax=axes.ravel().tolist(), shrink=0.8)
    return _save(fig, out, "crosscheck")


def scorecard(doc: dict, out: Path) -> list[Path]:
    """Implementations x criteria, each column scaled from 0 (worst) to 1 (best): % of peak as a
    fraction of the highest; seconds, microseconds and lines on a log scale between the fewest and
    the most (they span orders of magnitude); the measured value written in each cell."""
    from harness.report import scorecard as card
    rows = [r for r in card.rows(doc) if r["per problem"] or r["compile cold s"] is not None]
    problems_seen = sorted({p for r in rows for p in r["per problem"]})
    columns = [(f"% peak {p}", lambda r, p=p: r["per problem"].get(p), True) for p in problems_seen] + \
        [(name, lambda r, n=name: r[n], False) for name in ("install MB", "installed MB", "import s",
                                                               "compile cold s", "compile warm s", "first call s",
                                                               "launch µs", "LOC")]
    if not rows:
        return []
    plt = _plt()
    grid = [[math.nan] * len(columns) for _ in rows]
    fig, ax = plt.subplots(figsize=(13.33, 0.32 * len(rows) + 1.8), layout="constrained")     # 16:9 width
    for j, (_, get, higher) in enumerate(columns):
        values = [get(r) for r in rows]
        known = [v for v in values if v is not None and v > 0]
        for i, v in enumerate(values):
            if v is None or not known or v <= 0:
                continue
            low, high = min(known), max(known)
            grid[i][j] = v / high if higher else \
                1.0 if high == low else 1 - math.log(v / low) / math.log(high / low)
            ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=7,
                    color="white" if grid[i][j] < 0.5 else "black")
    ax.imshow(grid, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(columns)), [c[0] for c in columns], rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), [r["implementation"] for r in rows])
    ax.set_title("scorecard: 1 = best in its column (% of peak: share of the highest; seconds, µs, lines: "
                 "log scale from the most to the fewest)")
    return _save(fig, out, "scorecard")


def write_all(doc: dict, out: Path) -> list[Path]:
    """Every figure of the document into `out` (created); the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for (problem, case), rows in sorted(_timed(doc).items()):
        if any(r["kind"] == "bench" for r in rows):
            paths += bench_case(problem, case, rows, out)
    return paths + overview(doc, out) + compile_times(doc, out) + loc_vs_peak(doc, out) + crosscheck(doc, out) \
        + scorecard(doc, out)
