"""Cuts every inline <svg> chart out of the report.html files under a pfsqos output folder.

usage: extract-svg.py RUN_DIR OUT_DIR
Each chart is saved as OUT_DIR/<comparison>--<chart title>.svg, the title taken from the
chart's aria-label and made file-name safe.
"""
import pathlib
import re
import sys

run_dir, out_dir = map(pathlib.Path, sys.argv[1:3])
out_dir.mkdir(parents=True, exist_ok=True)
for report in sorted(run_dir.glob("*/report.html")):
    html = report.read_text(encoding="utf-8")
    for svg in re.findall(r"<svg\b.*?</svg>", html, flags=re.S):
        label = re.search(r'aria-label="([^"]*)"', svg)
        title = label.group(1) if label else "chart"
        safe = re.sub(r"[^A-Za-z0-9]+", "-", title).strip("-").lower()
        if 'xmlns="http://www.w3.org/2000/svg"' not in svg:
            svg = svg.replace("<svg", '<svg xmlns="http://www.w3.org/2000/svg"', 1)
        (out_dir / f"{report.parent.name}--{safe}.svg").write_text(svg, encoding="utf-8")
