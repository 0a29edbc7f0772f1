"""A shareable, self-contained HTML report of one quantization job.

:mod:`.collect` gathers the figures (one analysis pass, a short evaluation, the histograms of the
worst units, the layered layout of the graph), :mod:`.figures` and :mod:`.graph_figure` draw them
with matplotlib (Agg backend, SVG), :mod:`.html` lays them out in one HTML file whose images are
``data:`` URIs, so the file makes no network request when opened.
"""
