#!/usr/bin/env python3
"""Renders a Chrome trace written by mstream (MSTREAM_TRACE or
MS_SessionWriteTrace) as a static HTML page with an SVG timeline: one row
per stream, grouped by stream group, one box per kernel or copy, and an
arrow per cross-stream event wait. Headless Chromium can screenshot it
(docs/trace.sh); chrome://tracing and Perfetto open the JSON itself.

usage: trace_html.py TRACE.json OUT.html [LAST_RUNS]
LAST_RUNS (default 6) keeps the slices of the last runs only."""
import html
import json
import sys

src, out = sys.argv[1], sys.argv[2]
last = int(sys.argv[3]) if len(sys.argv) > 3 else 6
doc = json.load(open(src))
evs = doc["traceEvents"]
procs, threads = {}, {}
for e in evs:
    if e["ph"] == "M" and e["name"] == "process_name":
        procs[e["pid"]] = e["args"]["name"]
    if e["ph"] == "M" and e["name"] == "thread_name":
        threads[(e["pid"], e["tid"])] = e["args"]["name"]
slices = [e for e in evs if e["ph"] == "X"]
runs = sorted({e["args"]["run"] for e in slices})
keep = set(runs[-last:])
slices = [e for e in slices if e["args"]["run"] in keep]
if not slices:
    sys.exit("no slices in %s" % src)
t0 = min(e["ts"] for e in slices)
t1 = max(e["ts"] + e["dur"] for e in slices)
rows = sorted({(e["pid"], e["tid"]) for e in slices})
# Flows whose both ends fall on kept slices.
starts = {e["id"]: e for e in evs if e["ph"] == "s"}
ends = {e["id"]: e for e in evs if e["ph"] == "f"}
flows = [(starts[i], ends[i]) for i in starts if i in ends
         and t0 <= starts[i]["ts"] <= t1 and t0 <= ends[i]["ts"] <= t1
         and (starts[i]["pid"], starts[i]["tid"]) in rows and (ends[i]["pid"], ends[i]["tid"]) in rows]

W, LABEL, ROW, TOP = 1500, 230, 34, 70
H = TOP + ROW * len(rows) + 40
scale = (W - LABEL - 20) / max(t1 - t0, 1e-9)
x = lambda ts: LABEL + (ts - t0) * scale
y = {r: TOP + i * ROW for i, r in enumerate(rows)}
colors = {"kernel": "#4e79a7", "h2d": "#59a14f", "d2h": "#e15759"}
run_shade = ["#4e79a7", "#76b7b2", "#f28e2b", "#b07aa1", "#9c755f", "#edc948"]
svg = []
svg.append('<text x="10" y="24" font-size="18" font-weight="bold">%s</text>' % html.escape(
    "mstream Chrome trace: %d runs, %d slices, %d cross-stream waits (%.0f us)" % (
        len(keep), len(slices), len(flows), t1 - t0)))
svg.append('<text x="10" y="46" font-size="13" fill="#555">kernels coloured by run; '
           '<tspan fill="#59a14f">green: host-to-device copy</tspan>, '
           '<tspan fill="#e15759">red: device-to-host copy</tspan>; arrows: event waits</text>')
last_pid = None
for r in rows:
    pid, _ = r
    if pid != last_pid:
        svg.append('<line x1="0" x2="%d" y1="%d" y2="%d" stroke="#999"/>' % (W, y[r] - 2, y[r] - 2))
        svg.append('<text x="6" y="%d" font-size="12" font-weight="bold">%s</text>' % (
            y[r] + 12, html.escape(procs.get(pid, str(pid)).split(" (")[0])))
        last_pid = pid
    svg.append('<text x="80" y="%d" font-size="12">%s</text>' % (
        y[r] + 20, html.escape(threads.get(r, "").split("/", 1)[-1])))
    svg.append('<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4"/>' % (LABEL, y[r] + 4, W - LABEL - 20, ROW - 8))
order = {run: i for i, run in enumerate(sorted(keep))}
for e in slices:
    r = (e["pid"], e["tid"])
    c = colors.get(e.get("cat"), "#888")
    if e.get("cat") == "kernel":
        c = run_shade[order[e["args"]["run"]] % len(run_shade)]
    w = max(e["dur"] * scale, 1.5)
    svg.append('<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" stroke="#222" stroke-width="0.3">'
               '<title>%s</title></rect>' % (x(e["ts"]), y[r] + 6, w, ROW - 12, c,
                                              html.escape("%s %s run %s" % (e["name"], e["args"].get("op", ""), e["args"]["run"]))))
for s, f in flows:
    x1, y1 = x(s["ts"]), y[(s["pid"], s["tid"])] + ROW / 2
    x2, y2 = x(f["ts"]), y[(f["pid"], f["tid"])] + ROW / 2
    svg.append('<line x1="%.2f" y1="%.1f" x2="%.2f" y2="%.1f" stroke="#333" stroke-width="0.8" '
               'marker-end="url(#arrow)" opacity="0.7"/>' % (x1, y1, x2, y2))
# A time axis.
step = 10 ** max(0, len(str(int((t1 - t0) / 5))) - 1)
ticks = int((t1 - t0) // step)
if ticks > 12:
    step *= 5 if ticks <= 60 else 10
t = 0.0
while t <= t1 - t0:
    svg.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ccc"/>' % (x(t0 + t), x(t0 + t), TOP - 6, H - 30))
    svg.append('<text x="%.1f" y="%d" font-size="11" fill="#555">%g us</text>' % (x(t0 + t) + 2, H - 16, t))
    t += step
page = """<!doctype html><html><head><meta charset="utf-8"><title>mstream trace</title></head>
<body style="margin:0;background:#fff;font-family:sans-serif">
<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d">
<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
<path d="M0,0 L10,5 L0,10 z" fill="#333"/></marker></defs>
%s
</svg></body></html>
""" % (W, H, "\n".join(svg))
open(out, "w").write(page)
print("%s: %d rows, %d slices, %d flows, %dx%d" % (out, len(rows), len(slices), len(flows), W, H))
