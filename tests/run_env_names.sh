#!/usr/bin/env bash
# tests/run_env_names.sh SOURCE_ROOT CAPGNN [MPIEXEC]
# A misspelt CAPGNN_* environment variable is not ignored silently (new-user finding):
#  1. apps/env.c's list equals the names the C sources read with getenv("CAPGNN_..."),
#     so a new variable without an entry (or a stale entry) fails here;
#  2. CAPGNN_EMULATE_NODE=2 gets one warning naming CAPGNN_EMULATE_NODES; a name far from
#     every known one gets a warning without a suggestion; a known name with a word added
#     (CAPGNN_DATA_DIR) gets the known one; known names and the scripts'
#     own (CAPGNN_TEST_LABELS) none; the command still runs (exit 0);
#  3. under mpiexec -n 2 the warning is printed once (rank 0);
#  4. a control byte in a variable's name (or CAPGNN_LOG_LEVEL's value) is shown as \xNN.
set -u
src=$1 capgnn=$2 mpiexec=${3:-}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail=0
say() { echo "FAIL: $*"; fail=1; }

grep -rhoE 'getenv\("CAPGNN_[A-Z0-9_]+' --include=*.c --exclude-dir='build*' --exclude-dir=.git "$src" |
  sed 's/^getenv("//' | sort -u >"$dir/sources"
sed -n '/BEGIN getenv names/,/END getenv names/p' "$src/apps/env.c" | grep -oE '"CAPGNN_[A-Z0-9_]+"' |
  tr -d '"' | sort -u >"$dir/list"
[ -s "$dir/sources" ] || say "no getenv(\"CAPGNN_...\") found under $src"
diff "$dir/sources" "$dir/list" >"$dir/diff" ||
  { say "apps/env.c's list differs from the sources' getenv names (< sources, > list):"; cat "$dir/diff"; }

env CAPGNN_EMULATE_NODE=2 "$capgnn" --version >"$dir/out1" 2>"$dir/err1" || say "--version failed with a misspelt name"
[ "$(grep -c 'capgnn: warning: environment variable CAPGNN_EMULATE_NODE is not one capgnn reads' "$dir/err1")" = 1 ] ||
  say "no single warning for CAPGNN_EMULATE_NODE"
grep -q "did you mean CAPGNN_EMULATE_NODES?" "$dir/err1" || say "CAPGNN_EMULATE_NODES not suggested"
env CAPGNN_DATA_DIR=/tmp "$capgnn" --version >/dev/null 2>"$dir/err5"
grep -q "CAPGNN_DATA_DIR is not one capgnn reads: it is ignored (did you mean CAPGNN_DATA?)" "$dir/err5" ||
  say "CAPGNN_DATA not suggested for CAPGNN_DATA_DIR"
env CAPGNN_XYZZY_PLUGH=1 "$capgnn" --version >/dev/null 2>"$dir/err2"
grep -q "CAPGNN_XYZZY_PLUGH is not one capgnn reads: it is ignored$" "$dir/err2" ||
  say "no warning (or a suggestion) for a name far from every known one"
# a control byte in a name warned about, or in a value warned about, is shown escaped (\xNN),
# never raw on the terminal (core/log.h, cg_text_escape)
env "CAPGNN_X"$'\x1b'"[31mY=1" CAPGNN_LOG_LEVEL=$'lo\x07ud' "$capgnn" info synth:tiny >/dev/null 2>"$dir/err6"
grep -qF 'environment variable CAPGNN_X\x1b[31mY is not one capgnn reads' "$dir/err6" ||
  say "a control byte in an unknown variable's name not shown escaped"
grep -qF "CAPGNN_LOG_LEVEL='lo\x07ud' is not error" "$dir/err6" ||
  say "a control byte in CAPGNN_LOG_LEVEL's value not shown escaped"
! grep -q $'[\x07\x1b]' "$dir/err6" || { say "a raw control byte reached stderr:"; cat -v "$dir/err6"; }
env CAPGNN_LOG_LEVEL=warn CAPGNN_TEST_LABELS=unit "$capgnn" --version >/dev/null 2>"$dir/err3"
[ ! -s "$dir/err3" ] || { say "known names warned:"; cat "$dir/err3"; }

if [ -n "$mpiexec" ]; then
  CAPGNN_EMULATE_NODE=2 "$mpiexec" -n 2 --oversubscribe --allow-run-as-root -x CAPGNN_EMULATE_NODE "$capgnn" \
    --version >"$dir/out4" 2>"$dir/err4" || say "mpiexec -n 2 --version failed"
  n=$(grep -c "CAPGNN_EMULATE_NODE is not one capgnn reads" "$dir/out4" "$dir/err4" | awk -F: '{s += $2} END {print s}')
  [ "$n" = 1 ] || say "under mpiexec -n 2 the warning came $n times, expected once"
fi
[ $fail -eq 0 ] || exit 1
echo "ok: CAPGNN_* names"
