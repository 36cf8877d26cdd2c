"""The threshold curve as the maintainer asks it: "what will dedup do at t?". Per threshold, the
rows a dedup keeps and drops, the clusters and the largest, and the pairs, from
``auditor.clusters.dedup_curve`` (any threshold of the searched range, every CURVE_STEP here).
The x axis runs as the sliders do: looser (lower) on the left, stricter on the right."""
from __future__ import annotations

import plotly.graph_objects as go
from gradio.components.plot import PlotData

from . import state
from .views import h, pct

CURVE_STEP = 0.01              # thresholds drawn and hovered
TABLE_STEP = 0.05              # thresholds listed in the table (with the selected one)


def grid(min_threshold: float) -> list[float]:
    """Every CURVE_STEP from the lowest threshold searched up to 1."""
    start = int(round(min_threshold / CURVE_STEP))
    return [round(k * CURVE_STEP, 6) for k in range(start, int(round(1 / CURVE_STEP)) + 1)]


def at(points, threshold: float):
    """The point of ``points`` at ``threshold`` (the nearest one listed)."""
    return min(points, key=lambda p: abs(p.threshold - threshold))


def drawn(key, points, threshold: float, records: int) -> PlotData:
    """``figure`` as the page's Plot receives it (its JSON), drawn once per audit ``key`` and
    threshold: building a Plotly figure took 20-40 ms of the server's GIL, half of a threshold change,
    and every visitor moving between a few thresholds of one audit asked for the same charts."""
    plot = state.DRAWN.get((key, threshold))
    if plot is None:
        plot = PlotData(type="plotly", plot=figure(points, threshold, records).to_json())
        state.DRAWN.put((key, threshold), plot, nbytes=len(plot.plot))
    return plot


def figure(points, threshold: float, records: int) -> go.Figure:
    x = [p.threshold for p in points]
    hover = [[f"{p.rows_kept:,}", f"{p.rows_dropped:,}", pct(p.rows_dropped, records), f"{p.clusters:,}",
              f"{p.largest_cluster:,}", f"{p.pairs:,}"] for p in points]
    template = ("Jaccard ≥ %{x:.2f}<br>dedup keeps %{customdata[0]} rows, drops %{customdata[1]} "
                "(%{customdata[2]})<br>%{customdata[3]} clusters, the largest %{customdata[4]} records"
                "<br>%{customdata[5]} near-duplicate pairs<extra></extra>")
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=x, y=[p.rows_dropped for p in points], name="rows dedup drops",
                             mode="lines", line=dict(color="#b91c1c", width=3), customdata=hover,
                             hovertemplate=template, fill="tozeroy", fillcolor="rgba(185, 28, 28, 0.10)"))
    fig.add_trace(go.Scatter(x=x, y=[p.clusters for p in points], name="clusters", mode="lines",
                             line=dict(color="#3730a3", width=2), hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=x, y=[p.largest_cluster for p in points], name="largest cluster (records)",
                             mode="lines", line=dict(color="#374151", width=2, dash="dot"), hoverinfo="skip"))
    fig.add_vline(x=threshold, line=dict(color="#111827", dash="dash", width=1))
    chosen = at(points, threshold)
    fig.add_annotation(x=threshold, y=1, yref="paper", yanchor="bottom", showarrow=False,
                       text=h(f"selected {threshold:g}: dedup drops {chosen.rows_dropped:,}"), font=dict(color="#111827"))
    fig.update_xaxes(title_text="Jaccard threshold (looser ← → stricter)", range=[x[0] - 0.01, 1.01], dtick=0.1,
                     tickformat=".1f")
    fig.update_yaxes(title_text="rows / clusters", rangemode="tozero", tickformat=",d")
    fig.update_layout(template="plotly_white", height=380, margin=dict(l=70, r=20, t=40, b=60), separators=".,",
                      legend=dict(orientation="h", yanchor="bottom", y=1.08, x=0), hovermode="x unified",
                      font=dict(color="#111827"))
    return fig


def counts_markdown(near, point, records: int) -> str:
    """The line above the chart: the counts at the threshold (the headline's, the tabs')."""
    return (f"**At Jaccard ≥ {near.threshold:g}:** {near.pairs:,} near-duplicate pair{'s' if near.pairs != 1 else ''} · "
            f"{near.clusters:,} cluster{'s' if near.clusters != 1 else ''} ({near.identical_clusters:,} identical, "
            f"{near.variant_clusters:,} variant{'s' if near.variant_clusters != 1 else ''}) · "
            f"largest cluster {near.largest_cluster:,} records · **dedup keeps {point.rows_kept:,} of {records:,} "
            f"rows and drops {point.rows_dropped:,}** ({pct(point.rows_dropped, records)})")


def explanation(points, threshold: float, records: int) -> str:
    """What the chart shows, in words (it describes the data shown, nothing it does not show)."""
    low, high = points[0], points[-1]
    return (f"Each point is what keeping one record per near-duplicate cluster would do at that threshold: the red "
            f"area is the rows dropped, with the number of clusters and the largest cluster beside it. Loosening "
            f"the threshold (to the left) can only merge records: from Jaccard ≥ {high.threshold:g} to ≥ "
            f"{low.threshold:g} the rows dropped go from {high.rows_dropped:,} to {low.rows_dropped:,} of "
            f"{records:,}, and the largest cluster from {high.largest_cluster:,} to {low.largest_cluster:,} records. "
            "A largest cluster that grows fast as you move left is templates or shared stems chaining together: "
            "open it in the Clusters tab before trusting the rows dropped. Hover for any threshold; the slider "
            "sets every tab.")


def table_html(points, threshold: float, records: int) -> str:
    """The curve as a table: every TABLE_STEP and the selected threshold (marked)."""
    chosen = at(points, threshold)
    shown = [p for p in points if abs(p.threshold / TABLE_STEP - round(p.threshold / TABLE_STEP)) < 1e-6
             or p is chosen]
    head = "<tr>" + " ".join(f"<th scope='col'>{name}</th>" for name in
                             ("Jaccard ≥", "rows kept", "rows dropped", "clusters", "largest cluster", "pairs")) + "</tr>"
    marked = " class='chosen' aria-current='true'"
    body = "".join(
        f"<tr{marked if p is chosen else ''}><th scope='row'>{p.threshold:.2f}</th> "
        f"<td>{p.rows_kept:,}</td> <td>{p.rows_dropped:,} <span class='sub'>({h(pct(p.rows_dropped, records))})</span>"
        f"</td> <td>{p.clusters:,}</td> <td>{p.largest_cluster:,}</td> <td>{p.pairs:,}</td></tr>\n"
        for p in shown)
    return (f"<div class='table-scroll' tabindex='0' role='region' aria-label='What dedup does at each threshold'>"
            f"<table class='dt num'>"
            f"<thead>{head}</thead><tbody>{body}</tbody></table></div>")
