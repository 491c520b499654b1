#!/bin/sh
# Regenerates docs/trace.png: the bundled example on 2 stream groups with 2
# threads writes a Chrome trace (MSTREAM_TRACE), docs/trace_html.py renders
# its last 6 runs as an SVG timeline, headless Chromium screenshots it.
#   sh docs/trace.sh            (needs chromium: apt-get install -y chromium)
# The JSON itself opens in chrome://tracing or https://ui.perfetto.dev.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -e build/libmstream.so ] || make lib
MSTREAM_TRACE="$tmp/trace.json" TF_GPU_STREAM_GROUP_COUNT=2 sh examples/run.sh 16 4 2 >"$tmp/run.out"
python3 docs/trace_html.py "$tmp/trace.json" "$tmp/trace.html" 6
height=$(sed -n 's/.*<svg[^>]*height="\([0-9]*\)".*/\1/p' "$tmp/trace.html" | head -1)
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --window-size=1500,"$height" --screenshot="$tmp/trace.png" "file://$tmp/trace.html" 2>/dev/null
cp "$tmp/trace.png" docs/trace.png
echo "wrote docs/trace.png"
