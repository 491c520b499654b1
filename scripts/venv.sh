# Sourced by the test and bench scripts: the project's Python environment.
#   MS_PY      build/venv's python (NumPy always; TensorFlow 2.15.1 when it installed)
#   ms_have_tf true when TensorFlow imports there; otherwise it prints
#              "skipped: no TensorFlow" once per process and is false.
# scripts/setup.sh makes the environment; nothing here installs anything.
# The caller sets ms_root to the repository's top before sourcing this file.
: "${ms_root:?set ms_root to the repository before sourcing scripts/venv.sh}"
MS_PY="$ms_root/build/venv/bin/python"
[ -x "$MS_PY" ] || MS_PY=/usr/bin/python3
ms_have_tf() {
  if [ -z "${MS_TF_CHECKED:-}" ]; then
    if [ -f "$ms_root/build/venv/.tf-ok" ]; then MS_TF_OK=1; else MS_TF_OK=0; fi
    MS_TF_CHECKED=1
    [ "$MS_TF_OK" = 1 ] || echo "skipped: no TensorFlow (scripts/setup.sh could not install tensorflow-cpu==2.15.1)" >&2
  fi
  [ "$MS_TF_OK" = 1 ]
}
# MSTREAM_BLAS: the CPU GEMMs' library. The scipy-openblas32 wheel that
# scripts/setup.sh puts in build/venv carries a current OpenBLAS (0.3.34, which
# knows recent CPUs); without it mstream takes the system's libopenblas.so.0.
if [ -z "${MSTREAM_BLAS:-}" ]; then
  for ms_blas in "$ms_root"/build/venv/lib/python3*/site-packages/scipy_openblas32/lib/libscipy_openblas.so; do
    [ -f "$ms_blas" ] && export MSTREAM_BLAS="$ms_blas"
  done
  unset ms_blas
fi
# MSTREAM_DNNL: oneDNN 3.2 for the CPU convolutions, from the onednn-cpu-gomp
# wheel that scripts/setup.sh puts in build/venv/lib.
if [ -z "${MSTREAM_DNNL:-}" ] && [ -f "$ms_root/build/venv/lib/libdnnl.so.3" ]; then
  export MSTREAM_DNNL="$ms_root/build/venv/lib/libdnnl.so.3"
fi
# TF as the tests' reference runs its stock kernels: on CPUs with AVX-512 VNNI
# or BF16 TF 2.15 turns its oneDNN rewrites on by itself, and those answer some
# cases otherwise (ABORTED where the stock kernel says INVALID_ARGUMENT, a
# Softmax row of -inf giving 0 where it gives NaN), so the oracle would depend
# on the machine. scripts/test_all.sh sets the same for every test; the
# benchmarks (MS_TF_DEFAULTS=1, bench/cpu) leave TF its own default.
if [ -z "${MS_TF_DEFAULTS:-}" ]; then
  export TF_ENABLE_ONEDNN_OPTS="${TF_ENABLE_ONEDNN_OPTS:-0}"
fi
