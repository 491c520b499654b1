#!/bin/sh
# Writes tf_cc_gradients.txt: the ops TF 2.15's C++ gradient registry
# (tensorflow/cc/gradients/*.cc, REGISTER_GRADIENT_OP and
# REGISTER_NO_GRADIENT_OP), one "G op" or "N op" a line, from TF's source in
# the Go module cache. TestRegistryCoversTF reads it.
# Usage: sh grad/testdata/tfccgrads.sh   (from the repository root)
set -eu
src=$(go env GOMODCACHE)/github.com/tensorflow/tensorflow@v2.15.0+incompatible/tensorflow/cc/gradients
[ -d "$src" ] || go mod download github.com/tensorflow/tensorflow@v2.15.0+incompatible
grep -ho 'REGISTER_GRADIENT_OP("[A-Za-z0-9_]*"\|REGISTER_NO_GRADIENT_OP("[A-Za-z0-9_]*"' "$src"/*.cc |
  sed 's/REGISTER_GRADIENT_OP("/G /;s/REGISTER_NO_GRADIENT_OP("/N /;s/"//' | sort -k2 -u >"$(dirname "$0")/tf_cc_gradients.txt"
