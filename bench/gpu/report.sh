#!/bin/bash
# The GPU benchmark's report in one command, on this machine (no GPU):
#
#   bash bench/gpu/report.sh RESULTS_DIR [README]
#
# RESULTS_DIR is a bench_all.sh output folder ($OUT from the device, or a
# copy under bench/gpu/results/). Writes RESULTS_DIR/table.md (every point,
# and the best QPS at p99 <= 2 ms with a column per configuration, GPU
# utilisation and peak device memory per cell) and
# RESULTS_DIR/dlrm_small_b16.png (QPS against p99, DLRM-small at B=16, ours
# and the PyTorch peer's), and splices the headline table and the plot into
# README (default: the repository's README.md) between its report.sh
# markers. matplotlib goes into a venv of its own, build/plot-venv (made
# once, from PyPI), so neither the system Python nor build/venv changes.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dir=${1:?usage: report.sh RESULTS_DIR [README]}
readme=${2:-$root/README.md}
venv=$root/build/plot-venv
if ! "$venv/bin/python" -c 'import matplotlib' 2>/dev/null; then
  echo "report.sh: installing matplotlib into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check --progress-bar off -q matplotlib
fi
# bench_all.sh packs the nvidia-smi samples into smi.tar.gz too, for when
# the CSVs do not come back from the device.
if [ -f "$dir/smi.tar.gz" ] && ! ls "$dir"/smi_*.csv >/dev/null 2>&1; then
  tar xzf "$dir/smi.tar.gz" -C "$dir"
fi
"$venv/bin/python" "$here/report.py" "$dir" --plot "$dir/dlrm_small_b16.png" >"$dir/table.md.new"
mv "$dir/table.md.new" "$dir/table.md"
"$venv/bin/python" "$here/report.py" "$dir" --plot "$dir/dlrm_small_b16.png" --readme "$readme" >/dev/null
echo "report.sh: $dir/table.md, $dir/dlrm_small_b16.png, table in $readme" >&2
