#!/usr/bin/env bash
# tests/run_dist_settings.sh MPIEXEC CAPGNN
# Ranks given different settings (an MPMD line `mpiexec -n 1 capgnn A : -n 1 capgnn B`, a
# settings file that differs between machines) must be refused at start, every rank with
# exit code 2 and rank 0's one line naming the first rank and setting that differ. Before,
# --hidden 32 on one rank overflowed the other's halo buffer (a heap overflow inside Open
# MPI, then "double free or corruption"), --epochs 7 against 5 hung until the stall
# watchdog, and --lr 0.05 against 0.01 trained other weights on each rank, silently.
# What a rank may set for itself (--threads, --quiet, --device, --metrics, the graph's
# path, the paths of --checkpoint, --save-best, --resume, --norm-degrees) still runs. `capgnn profile` compares what shapes its measurements the same way, and
# `--resume` what the ranks read from the checkpoint.
set -u
mpiexec=$1 capgnn=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1
fail=0
common=(--graph synth:small --epochs 5 --device cpu --threads 1 --no-part-cache)

# run NAME EXPECTED_RC EXPECTED_TEXT -- RANK0_ARGS... -- RANK1_ARGS...
run() {
  local name=$1 want_rc=$2 want_text=$3
  shift 3
  [ "$1" = -- ] && shift
  local a0=() a1=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do a0+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  a1=("$@")
  local start rc elapsed_ms
  start=$(date +%s%N)
  timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 "$capgnn" "${common[@]}" "${a0[@]}" \
    : -n 1 "$capgnn" "${common[@]}" "${a1[@]}" >"$name.out" 2>&1
  rc=$?
  elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
  echo "== $name: exit code $rc after ${elapsed_ms} ms"
  if [ "$rc" -ne "$want_rc" ]; then
    cat "$name.out"; echo "FAIL: $name: exit code $rc, expected $want_rc"; fail=1
  fi
  if [ "$elapsed_ms" -ge 30000 ]; then echo "FAIL: $name took ${elapsed_ms} ms (limit 30000)"; fail=1; fi
  if [ -n "$want_text" ] && ! grep -qF -- "$want_text" "$name.out"; then
    cat "$name.out"; echo "FAIL: $name: the output does not contain: $want_text"; fail=1
  fi
  if grep -qE 'double free|AddressSanitizer|Signal: |MPI_ERR_TRUNCATE' "$name.out"; then
    cat "$name.out"; echo "FAIL: $name crashed"; fail=1
  fi
  if [ "$want_rc" -eq 2 ] && [ "$(grep -c 'were not given the same settings' "$name.out")" -ne 1 ]; then
    echo "FAIL: $name: the error must be printed once (by rank 0)"; fail=1
  fi
}

run hidden 2 "rank 1 has 'hidden = 32' where rank 0 has 'hidden = 16' (1 of 2 ranks differ from rank 0)" \
  -- -- --hidden 32
run epochs 2 "rank 1 has 'epochs = 7' where rank 0 has 'epochs = 5'" -- -- --epochs 7
printf '[training]\nlr = 0.01\n' >a.ini
printf '[training]\nlr = 0.05\n' >b.ini
run lr_config 2 "rank 1 has 'lr = 0.05' where rank 0 has 'lr = 0.01'" -- --config a.ini -- --config b.ini
run checkpoint 2 "rank 1 has 'checkpoint-every = 2'" -- --checkpoint c.ckpt -- --checkpoint c.ckpt --checkpoint-every 2
# another graph on one rank: the graph line is not compared as text (another path to the
# same file is fine) but by checksum once opened; the error names the rank
run graph 1 "the ranks opened different graphs: rank 1's has checksum" -- -- --graph synth:tiny
if [ "$(grep -c 'opened different graphs' graph.out)" -ne 1 ]; then
  cat graph.out; echo "FAIL: graph: the error must be printed once"; fail=1
fi
# what a rank may set for itself
run per_rank 0 "" -- --metrics m.jsonl -- --quiet --threads 2 --log-every 3 --stall-timeout 60
# paths spelt differently (or each machine's own) for the same files: only whether they are
# given is compared; an explicit default is the default (--input-dropout as --dropout)
run paths 0 "" -- --checkpoint p.ckpt --save-best b.ckpt --norm-degrees synth:small \
  -- --checkpoint "$dir/p.ckpt" --save-best ./b.ckpt --norm-degrees "synth:small" --input-dropout 0.5
run resume_paths 0 "" -- --epochs 7 --resume p.ckpt -- --epochs 7 --resume "$dir/p.ckpt"
run checkpoint_one 2 "rank 1 has (nothing) where rank 0 has 'checkpoint = (given)'" -- --checkpoint q.ckpt --
# a line on one rank only is reported as such, not against the next unrelated line
run attn 2 "rank 1 has 'attn-dropout (resolved) = 0.300000012' where rank 0 has 'attn-dropout (resolved) = 0.5'" \
  -- --model gat --hidden 4 -- --model gat --hidden 4 --attn-dropout 0.3
# a --threads list of the wrong length on one rank only: refused by that rank, promptly
# (the rank left alone and rank 0 waited in the comparison for ever)
: >threads.out
start=$(date +%s%N)
timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 "$capgnn" "${common[@]}" \
  : -n 1 "$capgnn" "${common[@]}" --threads 1,1,1 >threads.out 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "== threads_one: exit code $rc after ${elapsed_ms} ms"
if [ "$rc" -ne 2 ] || [ "$elapsed_ms" -ge 30000 ] ||
   [ "$(grep -c "on rank 1, --threads 1,1,1 has 3 values but the job has 2 ranks" threads.out)" -ne 1 ]; then
  cat threads.out; echo "FAIL: threads_one: expected one line from rank 1 and exit code 2"; fail=1
fi
# a value holding ' ;' (which --print-config warns about) says nothing while compared
run semicolon 0 "" -- --metrics "s ;x.jsonl" -- --metrics "s ;x.jsonl"
if grep -q -- '--print-config' semicolon.out; then
  cat semicolon.out; echo "FAIL: semicolon: the comparison printed --print-config's warning"; fail=1
fi
if [ ! -s m.jsonl ] || ! tail -1 m.jsonl | grep -q '"outcome":"completed"'; then
  echo "FAIL: per_rank: rank 0's metrics file is missing or incomplete"; fail=1
fi
# a bad CAPGNN_EMULATE_NODES is the same on every rank: one line and exit status 2, as a
# bad option (it was printed by every rank from inside comm_init, then MPI_Abort)
for sub in "" doctor; do
  CAPGNN_EMULATE_NODES=abc timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -x CAPGNN_EMULATE_NODES \
    -n 2 "$capgnn" $sub $([ -z "$sub" ] && echo "${common[@]}") >emulate.out 2>&1
  rc=$?
  echo "== emulate_bad ${sub:-train}: exit code $rc"
  if [ "$rc" -ne 2 ] || [ "$(grep -c "CAPGNN_EMULATE_NODES='abc' is not valid" emulate.out)" -ne 1 ] ||
     grep -q MPI_ABORT emulate.out; then
    cat emulate.out; echo "FAIL: emulate_bad ${sub:-train}: expected one line and exit code 2"; fail=1
  fi
done
# CAPGNN_EMULATE_NODES set on some ranks only: each rank split its host by its own value
# (rank 0 alone with 2: one node, logged as emulated; rank 1 alone: two nodes, reported as
# real), and a value invalid on rank 1 only ended rank 1 before MPI started without a word.
# Now every rank refuses it together: rank 0's one line naming the ranks, exit status 2.
for spec in "0 2 rank 0 reads 2, but rank 1 reads 1 (or unset)" "1 2 rank 0 reads 1 (or unset), but rank 1 reads 2" \
            "1 abc rank 0 reads 1 (or unset), but rank 1 reads a value that is not a positive integer"; do
  read -r on value want <<<"$spec"
  for sub in "" doctor; do
    e0=() e1=()
    if [ "$on" = 0 ]; then e0=(env CAPGNN_EMULATE_NODES="$value"); else e1=(env CAPGNN_EMULATE_NODES="$value"); fi
    args=()
    [ -z "$sub" ] && args=("${common[@]}")
    timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 "${e0[@]}" "$capgnn" $sub "${args[@]}" \
      : -n 1 "${e1[@]}" "$capgnn" $sub "${args[@]}" >emulate_one.out 2>&1
    rc=$?
    echo "== emulate_one rank $on=$value ${sub:-train}: exit code $rc"
    if [ "$rc" -ne 2 ] || [ "$(grep -cF "CAPGNN_EMULATE_NODES differs across the ranks: $want" emulate_one.out)" -ne 1 ] ||
       grep -q MPI_ABORT emulate_one.out; then
      cat emulate_one.out; echo "FAIL: emulate_one rank $on=$value ${sub:-train}: expected one line, exit code 2"; fail=1
    fi
  done
done
# CAPGNN_EMULATE_SPEED is read by each rank: a list on rank 0 only slowed no rank while the
# summary (rank 0's) named it; a speed on rank 1 only was missing from the summary
for on in 0 1; do
  e0=() e1=()
  if [ "$on" = 0 ]; then e0=(env CAPGNN_EMULATE_SPEED=1,0.5); else e1=(env CAPGNN_EMULATE_SPEED=1,0.5); fi
  timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 "${e0[@]}" "$capgnn" "${common[@]}" \
    : -n 1 "${e1[@]}" "$capgnn" "${common[@]}" >speed_one.out 2>&1
  rc=$?
  echo "== speed_one rank $on: exit code $rc"
  if [ "$on" = 0 ]; then want="rank 1 has 'CAPGNN_EMULATE_SPEED = (unset)' where rank 0 has 'CAPGNN_EMULATE_SPEED = 1,0.5'"
  else want="rank 1 has 'CAPGNN_EMULATE_SPEED = 1,0.5' where rank 0 has 'CAPGNN_EMULATE_SPEED = (unset)'"; fi
  if [ "$rc" -ne 2 ] || [ "$(grep -cF "$want" speed_one.out)" -ne 1 ]; then
    cat speed_one.out; echo "FAIL: speed_one rank $on: expected one line, exit code 2"; fail=1
  fi
done
# The same bad value on every rank, under a launcher that does not end the job when one
# process exits (Open MPI: orte_abort_on_non_zero_status 0; srun without
# --kill-on-bad-exit): rank 0 refused it before MPI started and left, and rank 1 waited in
# MPI's start-up for ever. Now every rank refuses it together (Open MPI 4's setting; other
# launchers ignore the variable, and the case then runs as above).
for e in CAPGNN_EMULATE_NODES=abc CAPGNN_EMULATE_SPEED=abc; do
  OMPI_MCA_orte_abort_on_non_zero_status=0 timeout -k 5 30 "$mpiexec" --oversubscribe --allow-run-as-root -n 2 \
    env "$e" "$capgnn" "${common[@]}" >bad_all.out 2>&1
  rc=$?
  echo "== bad_all $e: exit code $rc"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] || [ "$(grep -c "capgnn: error: ${e%%=*}='abc'" bad_all.out)" -ne 1 ]; then
    cat bad_all.out; echo "FAIL: bad_all $e: expected one line, and no wait without end"; fail=1
  fi
done
# A value that is not a speed, on rank 1 only: the start-up check of its syntax ended
# rank 1 before MPI started, without a word (rank 0 speaks); now the settings comparison
# names it
timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 "$capgnn" "${common[@]}" \
  : -n 1 env CAPGNN_EMULATE_SPEED=abc "$capgnn" "${common[@]}" >speed_bad1.out 2>&1
rc=$?
echo "== speed_bad1: exit code $rc"
if [ "$rc" -ne 2 ] ||
   [ "$(grep -cF "rank 1 has 'CAPGNN_EMULATE_SPEED = abc' where rank 0 has 'CAPGNN_EMULATE_SPEED = (unset)'" speed_bad1.out)" -ne 1 ]; then
  cat speed_bad1.out; echo "FAIL: speed_bad1: expected one line naming rank 1's value, exit code 2"; fail=1
fi

# A usage error found while parsing is the same on every rank and said by rank 0 alone:
# rank 1 exited 2 at once and mpirun ended the job, killing rank 0 before it had said it
# when rank 0 was slower (here: started 3 s late), so the job ended with no message.
# Now every rank waits for the others in MPI before it leaves: one line, exit code 2.
bad=(--cache-policy jaca --grad-staleness adaptive:0.1:3 --halo-bits 8)
timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 sh -c 'sleep 3; exec "$@"' sh "$capgnn" \
  "${common[@]}" "${bad[@]}" : -n 1 "$capgnn" "${common[@]}" "${bad[@]}" >usage_late.out 2>&1
rc=$?
echo "== usage_late: exit code $rc"
if [ "$rc" -ne 2 ] || [ "$(grep -c "grad-staleness adaptive sends full-precision gradients" usage_late.out)" -ne 1 ] ||
   [ "$(grep -c "error:" usage_late.out)" -ne 1 ]; then
  cat usage_late.out; echo "FAIL: usage_late: expected rank 0's one line and exit code 2"; fail=1
fi
# ... and refused on rank 1 only (its settings differ): rank 0, gone on into MPI, was
# killed there without a word; now it names the rank that stopped
timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -n 1 "$capgnn" "${common[@]}" \
  : -n 1 "$capgnn" "${common[@]}" "${bad[@]}" >usage_one.out 2>&1
rc=$?
echo "== usage_one: exit code $rc"
if [ "$rc" -ne 2 ] || [ "$(grep -c "error:" usage_one.out)" -ne 1 ] ||
   ! grep -qF "rank 1 of 2 stopped before it started MPI (exit status 2), where rank 0 went on" usage_one.out; then
  cat usage_one.out; echo "FAIL: usage_one: expected one line naming rank 1 and exit code 2"; fail=1
fi

# --resume on machines that do not share the checkpoint's folder: each rank reads its own
# copy, and a stale one made the ranks start from different epochs (rank 0 trained on and
# wrote a checkpoint of mixed steps while rank 1 waited until the stall watchdog). Two
# working directories stand for two machines.
mkdir -p w0 w1
mpirun_q() { timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root "$@" >>resume.out 2>&1; }
mpirun_q -n 2 -wdir "$dir/w0" "$capgnn" "${common[@]}" --epochs 2 --checkpoint c.ckpt
cp w0/c.ckpt w1/c.ckpt
mpirun_q -n 2 -wdir "$dir/w0" "$capgnn" "${common[@]}" --epochs 4 --checkpoint c.ckpt --resume c.ckpt
: >resume.out
start=$(date +%s%N)
mpirun_q -n 1 -wdir "$dir/w0" "$capgnn" "${common[@]}" --epochs 6 --checkpoint c.ckpt --resume c.ckpt \
  : -n 1 -wdir "$dir/w1" "$capgnn" "${common[@]}" --epochs 6 --checkpoint c.ckpt --resume c.ckpt
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "== resume_stale: exit code $rc after ${elapsed_ms} ms"
if [ "$rc" -ne 1 ] || [ "$elapsed_ms" -ge 30000 ] ||
   ! grep -qF "the ranks read different checkpoints (1 of 2 differ from rank 0's; rank 1's is at epoch 2, where rank 0's is at epoch 4)" resume.out; then
  cat resume.out; echo "FAIL: resume_stale: ranks that read different checkpoints must be refused at start"; fail=1
fi
cp w0/c.ckpt w1/c.ckpt # the same file on both: resumes
: >resume.out
mpirun_q -n 1 -wdir "$dir/w0" "$capgnn" "${common[@]}" --epochs 6 --checkpoint c.ckpt --resume c.ckpt \
  : -n 1 -wdir "$dir/w1" "$capgnn" "${common[@]}" --epochs 6 --checkpoint c.ckpt --resume c.ckpt
rc=$?
echo "== resume_same: exit code $rc"
if [ "$rc" -ne 0 ]; then cat resume.out; echo "FAIL: resume_same: exit code $rc"; fail=1; fi

# capgnn profile: --quick on one rank only made the two ranks' link ping-pong overrun
# its buffers (a segfault in rapa_link_pair after the device measurements)
start=$(date +%s%N)
CAPGNN_CACHE=$dir/cache timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -x CAPGNN_CACHE \
  -n 1 "$capgnn" profile --device cpu --threads 1 --quick : -n 1 "$capgnn" profile --device cpu --threads 1 \
  >profile.out 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "== profile: exit code $rc after ${elapsed_ms} ms"
if [ "$rc" -ne 2 ] || ! grep -qF "rank 1 has 'quick = 0' where rank 0 has 'quick = 1'" profile.out ||
   [ "$elapsed_ms" -ge 30000 ]; then
  cat profile.out; echo "FAIL: profile: ranks with different --quick must be refused at start (exit code 2)"; fail=1
fi
# the same for capgnn profile's --threads list
start=$(date +%s%N)
CAPGNN_CACHE=$dir/cache timeout -k 5 60 "$mpiexec" --oversubscribe --allow-run-as-root -x CAPGNN_CACHE \
  -n 1 "$capgnn" profile --device cpu --threads 1 --quick : -n 1 "$capgnn" profile --device cpu --threads 1,1,1 \
  --quick >profile_threads.out 2>&1
rc=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
echo "== profile_threads: exit code $rc after ${elapsed_ms} ms"
if [ "$rc" -ne 2 ] || [ "$elapsed_ms" -ge 30000 ] ||
   [ "$(grep -c "on rank 1, --threads has 3 values but the job has 2 ranks" profile_threads.out)" -ne 1 ]; then
  cat profile_threads.out; echo "FAIL: profile_threads: expected one line from rank 1 and exit code 2"; fail=1
fi
[ "$fail" -eq 0 ] && echo "ok: ranks with different settings are refused at start; per-rank settings run"
exit $fail
