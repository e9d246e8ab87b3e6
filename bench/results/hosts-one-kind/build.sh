#!/usr/bin/env bash
# Builds hosts_fairness against the knit sources of a tree: build.sh TREE OUT
# (TREE: a checkout, or `git archive COMMIT src include` unpacked). -O3 -DNDEBUG, as the
# Release build.
set -euo pipefail
tree=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
g++ -std=c++20 -O3 -DNDEBUG -pthread -I"$tree/include" -I"$tree/src" \
  "$tree"/src/*.cpp "$here/hosts_fairness.cpp" -o "$out"
