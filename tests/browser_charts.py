"""What a chart looks like once Plotly has drawn it, measured in the browser, and the rule it must keep:
the plot area (the axes' box, all subplots side by side counted as their widest) at least half the
width the chart has to give, and the title inside the chart's box (Plotly clips what passes it)."""

from __future__ import annotations

from typing import Any

# Below this viewport width charts stack in one column and span the page: the plot is held to half
# the viewport there, to half its own chart's box above it (two charts may share a row).
ONE_COLUMN_PX = 700

CHART_BOXES = """() => Array.from(document.querySelectorAll('[data-figure]')).map(el => {
  const box = el.getBoundingClientRect();
  const plots = Array.from(el.querySelectorAll('.nsewdrag')).map(r => r.getBoundingClientRect().width);
  const title = el.querySelector('.gtitle');
  const titleBox = title ? title.getBoundingClientRect() : null;
  return {id: el.id, left: box.left, right: box.right, width: box.width,
          plot: plots.length ? Math.max(...plots) : null,
          title_left: titleBox ? titleBox.left : null, title_right: titleBox ? titleBox.right : null};
})"""


def chart_faults(charts: list[dict[str, Any]], *, viewport: int) -> list[str]:
    faults = []
    for chart in charts:
        if chart["plot"] is None:  # no cartesian axes (none of ours today): nothing to measure
            continue
        room = viewport if viewport < ONE_COLUMN_PX else chart["width"]
        if chart["plot"] < room / 2:
            faults.append(f"{chart['id']}: plot {chart['plot']:.0f} px of {room:.0f}")
        if chart["title_right"] is not None and (
            chart["title_right"] > chart["right"] + 1 or chart["title_left"] < chart["left"] - 1
        ):
            faults.append(f"{chart['id']}: title runs {chart['title_right'] - chart['right']:.0f} px past the chart")
    return faults
