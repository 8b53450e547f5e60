"""The comparison page's chart."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import plotly.graph_objects as go
from django.utils.translation import gettext as _

from dashboard.figures.style import (
    LAYOUT_BASE,
    PALETTE,
    basis_label,
    esc,
    figure_dict,
    title_layout,
)


def compare_figure(
    gpu_names: Sequence[str],
    use_case_labels: Sequence[str],
    values: Sequence[Sequence[float | None]],
    bases: Sequence[Sequence[str]],
) -> dict[str, Any]:
    """Grouped bars: each GPU's performance per use case relative to the first GPU."""
    fig = go.Figure()
    for i, name in enumerate(gpu_names):
        fig.add_bar(
            name=esc(name),
            x=[esc(label) for label in use_case_labels],
            y=values[i],
            marker={
                "color": PALETTE[i % len(PALETTE)],
                "pattern": {"shape": ["/" if b == "estimated" else "" for b in bases[i]]},
            },
            customdata=[esc(basis_label(b)) if b else "—" for b in bases[i]],
            hovertemplate=esc(name) + "<br>%{x}: %{y:.3g} (%{customdata})<extra></extra>",
        )
    fig.update_layout(
        **LAYOUT_BASE,
        height=420,
        barmode="group",
        title=title_layout(_("Performance relative to %(name)s") % {"name": gpu_names[0] if gpu_names else ""}),
        yaxis={"title": {"text": esc(_("× %(name)s") % {"name": gpu_names[0] if gpu_names else ""})}},
    )
    return figure_dict(fig)
