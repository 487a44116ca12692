#!/usr/bin/env bash
# One-call verification on the GPU test host (../shared/GPU_HOST.md), designed for a
# short device lease: runs prebuilt binaries from BUILD (a Release build made with
# -DCAPGNN_WITH_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90, e.g. .gpu-carry as made by
# scripts/gpu-carry.sh) and writes logs/JSON to OUT.
#   scripts/gpu-verify.sh BUILD OUT [PARTS]
# PARTS: a comma list of perf, tiled, correct, tests, rapa (default: perf, tiled, correct;
# "quick" = correct; "all" = every part).
#  perf:    synth:reddit, GCN 3x256: capgnn epoch benchmark, then capgnn and PyTorch
#           training on the same .cgr file (median epoch, peak memory, accuracy); GraphSAGE
#           3x256 against PyTorch's tuned peer (issue #14 item 5)
#  tiled:   the tiled SpMM on that graph: kernel lab (validated against the CPU,
#           then timed against warp at widths 41 and 256), the epoch benchmark and
#           a training run with CAPGNN_SPMM=tiled (needs /tmp/reddit.cgr from perf)
#  correct: every CUDA op vs the CPU backend (tiled included); a whole CUDA training
#           run vs the CPU run; the GPU communication paths (staged, NCCL at np 1);
#           mpirun -np 1|2|4 on the one GPU (per-epoch losses, compared afterwards);
#           compute-sanitizer memcheck on a short run (and on the tiled kernel)
#  tests:   every CTest test labelled gpu, run as CTest runs it (rank counts, emulated
#           nodes), from the carried binaries (scripts/gpu-carry.sh carries them all)
#  rapa:    benchmarks/bench_rapa.sh -d cuda (issue #16): equal METIS, weighted METIS and
#           pruning on 2 and 4 ranks sharing the GPU under MPS (shares 100/33 and
#           100/50/25/25), full synth:reddit, against the measured ideal; needs the MPS
#           control binary (the script starts and stops the daemon)
# A device command may run 10 minutes: all three parts may not fit one call; run
# "perf,tiled" and "correct" as two. Each step has a time limit so that one hang
# cannot eat the lease.
# Exit status: the number of steps that failed (rc other than 0 and 77, a test's
# "skipped"); steps.txt has every step's.
set -u
B=$(cd "$1" && pwd) || { echo "gpu-verify: no build folder '$1'" >&2; exit 2; }
O=$(mkdir -p "$2" && cd "$2" && pwd) || { echo "gpu-verify: cannot make '$2'" >&2; exit 2; }
cd "$(dirname "$0")/.."
source scripts/gpu-host-setup.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 CAPGNN_LOG_LEVEL=${CAPGNN_LOG_LEVEL:-warn}
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee "$O/gpu.txt"
# the commit the carried binaries were built from (scripts/gpu-carry.sh writes it)
[ -f "$B/COMMIT" ] && echo "binaries built from $(cat "$B/COMMIT")" | tee -a "$O/gpu.txt"
failed=0
step() { # step NAME SECONDS CMD... (CMD: a program, not a shell function: timeout runs it)
  local name=$1 secs=$2; shift 2
  local t0=$(date +%s.%N)
  timeout -k 5 "$secs" "$@" > "$O/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || failed=$((failed + 1))
  printf '%-22s rc=%-3s %6.1f s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{print b-a}')" | tee -a "$O/steps.txt"
}
finish() { echo "gpu-verify: $failed step(s) failed (steps.txt)" | tee -a "$O/steps.txt"; exit "$failed"; }
parts=${3:-perf,tiled,correct}
[ "$parts" = quick ] && parts=correct
[ "$parts" = all ] && parts=perf,tiled,correct,tests,rapa
has() { case ",$parts," in *",$1,"*) return 0;; esac; return 1; }
# Performance first (the lease may end early), then correctness.
if has perf; then
  step bench_gpu 90 "$B/bin/bench_epoch" --graph synth:reddit --device cuda --epochs 20 --warmup 3 \
       --profile-epochs 2 --save-graph /tmp/reddit.cgr --json "$O/bench_gpu.json"
  step capgnn_reddit 60 "$B/bin/capgnn" --graph /tmp/reddit.cgr --layers 3 --hidden 256 --dropout 0.5 \
       --lr 0.01 --weight-decay 0 --epochs 30 --device cuda --metrics "$O/capgnn_reddit.jsonl" --quiet
  step torch_reddit 90 env PYTHONUNBUFFERED=1 python3 benchmarks/torch_gcn.py --graph /tmp/reddit.cgr \
       --epochs 30 --json "$O/torch_reddit.json"
  # the fair peer: the transpose built once (issue #14), gradients checked against plain
  step torch_reddit_tuned 90 env PYTHONUNBUFFERED=1 python3 benchmarks/torch_gcn.py --graph /tmp/reddit.cgr \
       --epochs 30 --peer tuned --check-grads --json "$O/torch_reddit_tuned.json"
  step capgnn_reddit_sage 60 "$B/bin/capgnn" --graph /tmp/reddit.cgr --model sage --layers 3 --hidden 256 \
       --dropout 0.5 --lr 0.01 --weight-decay 0 --epochs 30 --device cuda \
       --metrics "$O/capgnn_reddit_sage.jsonl" --quiet
  step torch_reddit_sage_tuned 90 env PYTHONUNBUFFERED=1 python3 benchmarks/torch_gcn.py --graph /tmp/reddit.cgr \
       --model sage --epochs 30 --peer tuned --check-grads --json "$O/torch_reddit_sage_tuned.json"
fi
if has tests; then # as CTest runs them (ctest -L gpu -N -V lists the commands)
  step t_cuda_ops 60 "$B/bin/test_cuda_ops"
  step t_cuda_attn 60 "$B/bin/test_cuda_attn"
  step t_gpu_train 120 "$B/bin/test_gpu_train"
  step t_rapa_gpu_bench 120 "$B/bin/test_rapa_gpu_bench"
  for np in 1 2 3; do step "t_gpu_comm_np$np" 60 mpirun --oversubscribe -np "$np" "$B/bin/test_gpu_comm"; done
  step t_gpu_comm_emu2_np2 60 env CAPGNN_EMULATE_NODES=2 mpirun --oversubscribe -x CAPGNN_EMULATE_NODES -np 2 "$B/bin/test_gpu_comm"
  for np in 2 3; do step "t_jaca_gpu_np$np" 150 mpirun --oversubscribe -np "$np" "$B/bin/test_jaca_gpu"; done
  step t_jaca_gpu_emu2_np4 120 env CAPGNN_EMULATE_NODES=2 mpirun --oversubscribe -x CAPGNN_EMULATE_NODES -np 4 "$B/bin/test_jaca_gpu"
  for np in 1 2; do step "t_gpu_overlap_np$np" 150 mpirun --oversubscribe -np "$np" "$B/bin/test_gpu_overlap"; done
fi
if has rapa; then
  g=(); [ -f /tmp/reddit.cgr ] && g=(-g /tmp/reddit.cgr) # the perf part's file loads faster than synth:reddit builds
  step bench_rapa_cuda 420 bash benchmarks/bench_rapa.sh -d cuda -c "$B/bin/capgnn" -r 1 -w 0 -q 1000 \
       -o "$O/bench_rapa" "${g[@]}"
fi
if has tiled; then
  [ -f /tmp/reddit.cgr ] || step save_reddit 120 "$B/bin/capgnn" gen synth:reddit --output /tmp/reddit.cgr --quiet
  step lab_reddit 150 "$B/bin/kernel_lab" --graph /tmp/reddit.cgr --widths 41,256 \
       --variants warp,tiled --tile-layouts 2,8,4h --runs 10 --json "$O/lab_reddit.json"
  step bench_gpu_tiled 90 env CAPGNN_SPMM=tiled "$B/bin/bench_epoch" --graph /tmp/reddit.cgr \
       --device cuda --epochs 20 --warmup 3 --profile-epochs 2 --json "$O/bench_gpu_tiled.json"
  step capgnn_reddit_tiled 60 env CAPGNN_SPMM=tiled "$B/bin/capgnn" --graph /tmp/reddit.cgr --layers 3 \
       --hidden 256 --dropout 0.5 --lr 0.01 --weight-decay 0 --epochs 30 --device cuda \
       --metrics "$O/capgnn_reddit_tiled.jsonl" --quiet
fi
has correct || finish
for np in 1 2 4; do
  step "mpirun_np$np" 40 mpirun --oversubscribe -np "$np" "$B/bin/capgnn" --graph synth:small \
       --model gcn --layers 3 --hidden 64 --dropout 0.5 --epochs 20 --device cuda \
       --metrics "$O/np$np.jsonl" --quiet
done
if ! has tests; then # (the tests part ran these already)
  step test_gpu_train 120 "$B/bin/test_gpu_train"
  step test_cuda_ops 60 "$B/bin/test_cuda_ops"
  step test_gpu_comm_np2 60 mpirun --oversubscribe -np 2 "$B/bin/test_gpu_comm"
fi
step sanitizer 60 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
     "$B/bin/capgnn" --graph synth:tiny --epochs 3 --device cuda --quiet
# the whole training path with the tiled SpMM (auto builds tiles only from 2^20 nonzeros)
step sanitizer_train_tiled 120 env CAPGNN_SPMM=tiled compute-sanitizer --tool memcheck \
     --report-api-errors no --error-exitcode 9 "$B/bin/capgnn" --graph synth:small --epochs 3 \
     --device cuda --quiet
# synth:small's operator is factored; the lab's own clustered matrix has values
step sanitizer_tiled 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
     "$B/bin/kernel_lab" --graph synth:small --widths 41,130,256 --variants tiled --runs 1 --warmup 0
step sanitizer_tiled_vals 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
     "$B/bin/kernel_lab" --order clustered --rows 20000 --deg 64 --widths 41,130,256 --variants tiled \
     --runs 1 --warmup 0
step racecheck_tiled 120 compute-sanitizer --tool racecheck --error-exitcode 9 \
     "$B/bin/kernel_lab" --graph synth:small --widths 256 --variants tiled --runs 1 --warmup 0
finish
