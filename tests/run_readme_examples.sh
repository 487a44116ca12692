#!/usr/bin/env bash
# tests/run_readme_examples.sh README BUILD_BIN_DIR DATASETS_DIR
# The README's examples run as written (issue #18, item 9): every ```sh block that is
# not marked with a "<!-- readme-examples: skip (why) -->" line just before it runs,
# top to bottom, in one shell (an `export` carries on, as for a reader), from the
# repository's layout rebuilt in a scratch folder: REPO/build/bin is BUILD_BIN_DIR,
# REPO/configs, scripts and benchmarks are the real ones, and ../shared/datasets is
# DATASETS_DIR, so the files the examples write land in the scratch folder. The first
# failing command fails the test, named with its README line. Exit 77 (skipped) when
# DATASETS_DIR has no cora.cgr.
set -u
readme=$1 bin=$2 data=$3
[ -f "$data/cora.cgr" ] || { echo "skipped: $data/cora.cgr is absent"; exit 77; }
src=$(cd "$(dirname "$readme")" && pwd)
readme=$src/$(basename "$readme")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/build" "$work/shared"
ln -s "$(realpath "$bin")" "$work/repo/build/bin"
for d in configs scripts benchmarks; do ln -s "$src/$d" "$work/repo/$d"; done
ln -s "$(realpath "$data")" "$work/shared/datasets"
# the runnable blocks as one script: each command preceded by its README line
awk '
  BEGIN { print "trap '"'"'echo \"FAIL: the command at README line $README_LINE exited $?\"'"'"' ERR" }
  /^```sh/ { inb = 1; run = (prev !~ /readme-examples: skip/); nblocks++; if (run) nrun++; next }
  /^```/   { inb = 0; next }
  inb && run && $0 != "" {
    printf "README_LINE=%d; echo \"+ [README:%d] $(sed -n %dp \"$README\")\"\n%s\n", NR, NR, NR, $0
  }
  { if ($0 != "") prev = $0 }
  END { printf "# %d blocks, %d run\n", nblocks, nrun > "/dev/stderr" }
' "$readme" >"$work/examples.sh"
n=$(grep -c "^README_LINE=" "$work/examples.sh")
echo "$n commands"
[ "$n" -gt 0 ] || { echo "FAIL: no example found in $readme"; exit 1; }
cd "$work/repo"
unset CAPGNN_DATA
export CAPGNN_LOG_LEVEL=${CAPGNN_LOG_LEVEL:-warn} README=$readme
start=$(date +%s)
bash -e -o pipefail "$work/examples.sh"
rc=$?
echo "run_readme_examples.sh: exit $rc after $(( $(date +%s) - start )) s; files written: $(ls "$work/repo" | grep -v -e '^build$' -e '^configs$' -e '^scripts$' -e '^benchmarks$' | tr '\n' ' ')"
exit $rc
