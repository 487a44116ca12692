#!/usr/bin/env bash
# tests/test_profile.sh CAPGNN MPIEXEC SCHEMA OUTDIR — `capgnn profile` end to end:
#  1. mpiexec -n 2 capgnn profile --device cpu --quick --json --html: exit 0, the text
#     table, the JSON valid against docs/profile.schema.json (the cache files against
#     its device definition);
#  2. a second run reuses the cached device profiles and links and says so; ranks alike
#     whose rates are more than 1.5x apart are warned about (not ranks of other thread
#     counts, 5b); --json and --html replace an earlier profile and report, another file
#     only with --force;
#  3. --refresh measures again;
#  4. a corrupt (truncated) cache file, one of another version (both with a warning), GEMM library or shapes are re-measured,
#     and the cache file is valid again afterwards;
#  5. capgnn train --profile FILE|auto logs the ranks' capabilities and trains as
#     without it (same losses); a tampered or missing profile is a set-up error, and so
#     is (before the log) a profile of fewer ranks with --partition rapa;
#  5b. without --threads, profile and train key a device by the same default thread count;
#  6. usage errors: --gpu-share with --device cpu, a --threads list that does not fit
#     the rank count; --gpu-share without an MPS daemon (no GPU needed: the check comes
#     before any CUDA call); a cache folder that cannot be made, on every rank or on one;
#  7. a control byte in the command's arguments is shown escaped in the text table.
# OUTDIR keeps p.json and r.html for the browser check (test_profile_report).
set -u
capgnn=$1 mpiexec=$2 schema=$3 out=$4
rm -rf "$out" && mkdir -p "$out" && cd "$out" || exit 1
export CAPGNN_CACHE=$out/cache OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
fail=0
bad() { echo "FAIL: $*"; fail=1; }
has() { grep -q -- "$2" "$1" || { bad "$1 lacks '$2'"; sed 's/^/    /' "$1"; }; }
hasnt() { ! grep -q -- "$2" "$1" || { bad "$1 has '$2'"; sed 's/^/    /' "$1"; }; }
np() { local n=$1; shift; "$mpiexec" -n "$n" --allow-run-as-root "$@"; }
validate() { # FILE [DEFINITION]: JSON Schema validation (python3-jsonschema, a test dependency)
  python3 - "$schema" "$1" "${2:-}" <<'PY' || bad "$1 does not validate against the schema"
import json, sys, jsonschema
schema, doc, part = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
if part:
    schema = dict(schema["definitions"][part], definitions=schema["definitions"])
jsonschema.Draft7Validator.check_schema(schema)
jsonschema.validate(doc, schema)
PY
}
field() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

# 1. first run: measures
np 2 "$capgnn" profile --device cpu --quick --json p.json --html r.html >run1.out 2>run1.err || bad "run 1 exited $?"
has run1.out "# capgnn profile: 2 ranks (--quick)"
has run1.out "# MM (GEMM, fp32): GFLOP/s"
has run1.out "# Links"
has run1.err "measuring cpu-t"
has run1.err "links: measuring 1 pair"
has run1.err "profile\] CPU threads:" # its lines under its own subsystem (the threads line said "train")
hasnt run1.err " train\]"
validate p.json
for f in cache/profile/*-cpu-t*.json; do validate "$f" device; done
[ "$(field p.json 'd["ranks"][0]["reused"] or d["ranks"][1]["reused"]')" = False ] || bad "run 1 says reused"
[ -s r.html ] || bad "no report"

# 2. second run: reuses, says so, measures nothing
np 2 "$capgnn" profile --device cpu --quick --json p2.json >run2.out 2>run2.err || bad "run 2 exited $?"
has run2.err "rank 0 (.*): reused .*cache/profile/"
has run2.err "rank 1 (.*): reused"
has run2.err "links: reused"
hasnt run2.err "measuring"
[ "$(field p2.json 'd["ranks"][0]["reused"] and d["ranks"][1]["reused"]')" = True ] || bad "run 2: reused is not true"
validate p2.json
# the all-reduce by size (for capgnn plan): the gradient's and 4, 64, 256 KiB, in order,
# with the algorithm this layout uses (2 ranks on one node: MPI_Allreduce)
[ "$(field p.json '[x["floats"] for x in d["links"]["allreduce"]["curve"]] == sorted([1024, 16384, 65536, d["links"]["allreduce"]["floats"]])')" = True ] ||
  bad "the all-reduce's curve is not the four sizes in order"
[ "$(field p.json 'd["links"]["allreduce"]["algorithm"] + "," + str(d["links"]["allreduce"]["nodes"])')" = "mpi,1" ] ||
  bad "the all-reduce's algorithm or nodes"
# 2. (continued) links cached before the curve existed (2026-11-29) are measured again, and said so
for f in cache/profile/links-p2-*.json; do
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); del d['links']['allreduce']['curve']; json.dump(d, open(sys.argv[1], 'w'))" "$f" ||
    bad "could not edit $f"
done
np 2 "$capgnn" profile --device cpu --quick --json pcurve.json >curve.out 2>curve.err || bad "the run after the edited cache exited $?"
has curve.err "links: .* was measured without the all-reduce's curve by size: re-measuring"
has curve.err "links: measuring 1 pair"
[ "$(field pcurve.json 'len(d["links"]["allreduce"]["curve"])')" = 4 ] || bad "no curve after the edited cache"
# 2a. ranks alike (one host, one device key) whose rates are more than 1.5x apart: one of
# them measured while the host was busy, said as the start-up calibration of --partition
# rapa says it (rank 1's rates cut to 0.3 by the test hook CAPGNN_TEST_RATE_SCALE, as a
# busy host would measure them; the cache serves both here, so no noise of this host)
CAPGNN_TEST_RATE_SCALE=1,0.3 np 2 -x CAPGNN_TEST_RATE_SCALE "$capgnn" profile --device cpu --quick >alike.out 2>alike.err ||
  bad "the alike run exited $?"
has alike.err "WARN ranks alike (host .*, device cpu-t[0-9]*) measured rates 3.3x apart (.*: rank 1 .*, rank 0 .*): something else ran"
hasnt run2.err "ranks alike"
# a full run does not take the quick profile
# (not run here: it takes minutes; rapa_cache_read's need_full covers it, see profile.c)

# 2b. the output rule: --json and --html replace an earlier profile and report (run 2 wrote
# p2.json over nothing; here p.json and r.html are replaced), any other existing file
# only with --force (both were replaced whatever they held)
echo "my notes" >notes.txt
np 2 "$capgnn" profile --device cpu --quick --json p.json --html r.html >run2b.out 2>run2b.err ||
  bad "replacing an earlier profile and report exited $?"
for opt in --json --html; do
  np 2 "$capgnn" profile --device cpu --quick $opt notes.txt >run2c.out 2>run2c.err && bad "$opt replaced another file"
  has run2c.err "capgnn: error: $opt notes.txt: the file exists and is not a capgnn"
  has notes.txt "my notes"
done
np 2 "$capgnn" profile --device cpu --quick --json notes.txt --force >run2d.out 2>run2d.err || bad "--force exited $?"
validate notes.txt

# 3. --refresh measures again
np 2 "$capgnn" profile --device cpu --quick --refresh >run3.out 2>run3.err || bad "run 3 exited $?"
has run3.err "measuring cpu-t.*(--refresh)"
has run3.err "links: measuring"
hasnt run3.err "reused"

# 4. a corrupt and an old cache file: re-measured with a warning (one rank is enough)
dev=$(ls cache/profile/*-cpu-t1.json | head -1)
[ -n "$dev" ] || bad "no cpu-t1 cache file"
head -c 200 "$dev" >"$dev.tmp" && mv "$dev.tmp" "$dev"
np 1 "$capgnn" profile --device cpu --quick --threads 1 >run4.out 2>run4.err || bad "run 4 exited $?"
has run4.err "WARN.*is corrupt (not valid JSON): re-measuring"
has run4.err "measuring cpu-t1 (corrupt cache file)"
validate "$dev" device
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['version']=0; json.dump(d, open(sys.argv[1],'w'))" "$dev"
np 1 "$capgnn" profile --device cpu --quick --threads 1 >run5.out 2>run5.err || bad "run 5 exited $?"
has run5.err "has version 0; this capgnn writes version 1: re-measuring"
has run5.err "measuring cpu-t1 (cache file of another version)"
validate "$dev" device
# measured with another GEMM library (e.g. OpenBLAS before oneDNN was installed): the key
# names the device and threads only, so the entry is re-measured, then reused
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['device']['blas']='OtherBLAS 1.0'; json.dump(d, open(sys.argv[1],'w'))" "$dev"
np 1 "$capgnn" profile --device cpu --quick --threads 1 >run5b.out 2>run5b.err || bad "run 5b exited $?"
has run5b.err "was measured with OtherBLAS 1.0, this run's GEMM is .*: re-measuring"
has run5b.err "measuring cpu-t1 (cache file of another GEMM library)"
np 1 "$capgnn" profile --device cpu --quick --threads 1 >run5c.out 2>run5c.err || bad "run 5c exited $?"
has run5c.err "reused"
# the cache is keyed by host and device: an entry measured at other shapes (--rows,
# --hidden, --spmm-graph) is measured again, not reused under the shapes asked for
np 1 "$capgnn" profile --device cpu --quick --threads 1 --rows 512 --hidden 32 --spmm-graph synth:tiny \
  --json shapes.json >run5d.out 2>run5d.err || bad "run 5d exited $?"
has run5d.err "was measured at other shapes (GEMMs of 4096 rows, 602 -> 256 -> 41 wide, SpMM on synth:reddit:scale=0.02)"
python3 -c "import json,sys; d=json.load(open(sys.argv[1]))['ranks'][0]; assert d['mm']['model'][1]['m']==512 and d['mm']['model'][1]['n']==32 and d['spmm']['graph']=='synth:tiny', d['mm']" shapes.json || bad "shapes.json: not measured at the shapes asked for"
np 1 "$capgnn" profile --device cpu --quick --threads 1 --rows 512 --hidden 32 --spmm-graph synth:tiny >run5e.out 2>run5e.err || bad "run 5e exited $?"
has run5e.err "reused"
np 1 "$capgnn" profile --device cpu --quick --threads 1 >run5f.out 2>run5f.err || bad "run 5f exited $?"
has run5f.err "was measured at other shapes (GEMMs of 512 rows, 602 -> 32 -> 41 wide, SpMM on synth:tiny)"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['summary']['layer_s']*=2; json.dump(d, open(sys.argv[1],'w'))" "$dev"
np 1 "$capgnn" profile --device cpu --quick --threads 1 >run6.out 2>run6.err || bad "run 6 exited $?"
has run6.err "does not validate (.*summary.layer_s .*): re-measuring"

# 5. train --profile: capabilities logged, training unchanged
train=(--graph synth:tiny --epochs 3 --device cpu --threads 1 --quiet --no-part-cache)
np 2 "$capgnn" "${train[@]}" --metrics plain.jsonl >train0.out 2>train0.err || bad "train without --profile exited $?"
np 2 "$capgnn" "${train[@]}" --metrics prof.jsonl --profile p.json >train1.out 2>train1.err || bad "train --profile FILE exited $?"
has train1.err "profile p.json: relative capability of the 2 ranks"
has train1.err "rank 0 0\.[0-9]* (cpu-t1"
np 2 "$capgnn" "${train[@]}" --profile auto >train2.out 2>train2.err || bad "train --profile auto exited $?"
has train2.err "profile auto (cache): relative capability of the 2 ranks"
python3 - plain.jsonl prof.jsonl <<'PY' || bad "--profile changed training"
import json, sys
a, b = ([json.loads(l) for l in open(f)] for f in sys.argv[1:])
assert [r.get("loss") for r in a if "epoch" in r] == [r.get("loss") for r in b if "epoch" in r]
PY
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); d['capability']['relative'][0]=0.9; json.dump(d, open('tampered.json','w'))" p.json
np 2 "$capgnn" "${train[@]}" --profile tampered.json >train3.out 2>train3.err && bad "a tampered profile was accepted"
has train3.err "capability.relative\[0\] is 0.9.* but the ranks' rates give"
np 2 "$capgnn" "${train[@]}" --profile missing.json >train4.out 2>train4.err && bad "a missing profile was accepted"
# --partition rapa sizes the parts by the file's rates: a profile of 2 ranks for a job of
# 3 is refused before the capabilities are logged (the line mapped 3 ranks onto 2 entries)
np 3 --oversubscribe "$capgnn" "${train[@]}" --partition rapa --profile p.json >train7.out 2>train7.err &&
  bad "a profile of 2 ranks sized the parts of 3"
has train7.err "the profile has 2 ranks, the job 3"
hasnt train7.err "relative capability"
has train4.err "cannot open 'missing.json'"
# rank 0 alone reads the file: one error line, its own, naming it (not rank 1's "rank 0
# failed during ..." besides), also for a file cut short inside a line (its newline had
# ended the line inside the message)
[ "$(grep -c "capgnn: error" train4.err)" = 1 ] || bad "not one error line for a missing profile"
printf '{"schema": "capgnn-profile",\n "vers' >cut.json
np 2 "$capgnn" "${train[@]}" --profile cut.json >train9.out 2>train9.err && bad "a profile cut short was accepted"
has train9.err "capgnn: error: rank 0: profile 'cut.json': not valid JSON (near 'vers'): was it cut short or edited?"
[ "$(grep -c "capgnn: error" train9.err)" = 1 ] || bad "not one error line for a profile cut short"
"$capgnn" "${train[@]}" --profile cache >train10.out 2>train10.err && bad "a folder was taken for a profile"
has train10.err "capgnn: error: cannot read 'cache': it is a folder, not a file" # (not "over 1 GiB")
"$capgnn" "${train[@]}" --threads 3 --profile auto >train5.out 2>train5.err && bad "--profile auto without a profile of cpu-t3"
has train5.err "no usable profile of device cpu-t3"
has train5.err "the cache's files for this host: .*cpu-t1"
# a corrupt cache file under --profile auto: refused, not used and not "re-measured" (a
# warning said so, then the run refused), one error line for the two ranks that read it
cp "$dev" dev.good && head -c 200 dev.good >"$dev"
np 2 "$capgnn" "${train[@]}" --profile auto >train8.out 2>train8.err && bad "--profile auto took a corrupt cache file"
has train8.err "profile/.*-cpu-t1.json (the file is corrupt (not valid JSON))"
hasnt train8.err "re-measuring"
[ "$(grep -c "capgnn: error" train8.err)" = 1 ] || { bad "not one error line for a corrupt cache file"; cat train8.err; }
mv dev.good "$dev"

# 5b. without --threads, unbound: profile and training key the device by the same
# default count, the host's CPUs divided by its ranks (the profile took OpenMP's, all
# the CPUs: `--profile auto` then found no profile of the training's cpu-t<N>)
t=$(( $(nproc) / 2 )); [ "$t" -ge 1 ] || t=1
np 2 --bind-to none "$capgnn" profile --device cpu --quick >run7.out 2>run7.err || bad "run 7 exited $?"
has run7.err "cpu-t$t"
np 2 --bind-to none "$capgnn" --graph synth:tiny --epochs 3 --device cpu --quiet --no-part-cache --profile auto \
  >train6.out 2>train6.err || { bad "train --profile auto without --threads exited $?"; sed 's/^/    /' train6.err; }
has train6.err "profile auto (cache): relative capability of the 2 ranks (logged only"
has train6.err "(cpu-t$t,"
# one rank bound to one core (Open MPI's default binding at -np 1 or 2): the profile
# widens the binding as training does, so its cpu-t<N> rates are N threads on N CPUs
if [ "$(nproc)" -ge 2 ]; then
  np 1 --bind-to core "$capgnn" profile --device cpu --quick >run8.out 2>run8.err || bad "run 8 exited $?"
  has run8.err "binding to one CPU widened to all"
  has run8.err "cpu-t$(nproc)"
  # ranks of other thread counts are not alike: their rates may differ without a warning
  CAPGNN_TEST_RATE_SCALE=1,0.3 np 2 --bind-to none -x CAPGNN_TEST_RATE_SCALE "$capgnn" profile --device cpu --quick \
    --threads "$(nproc)",1 >unlike.out 2>unlike.err || bad "the unlike run exited $?"
  hasnt unlike.err "ranks alike"
fi

# 6. usage errors and the MPS check
"$capgnn" profile --device cpu --gpu-share 50 >u1.out 2>u1.err; [ $? -eq 2 ] || bad "--gpu-share with --device cpu: not a usage error"
has u1.err "--gpu-share applies to GPU ranks"
np 2 "$capgnn" profile --device cpu --threads 2,1,1 >u2.out 2>u2.err; [ $? -ne 0 ] || bad "3 thread counts for 2 ranks accepted"
has u2.err "--threads has 3 values but the job has 2 ranks"
"$capgnn" profile --threads 2,x >u3.out 2>u3.err; [ $? -eq 2 ] || bad "--threads 2,x: not a usage error"
# a cache folder that cannot be made (the default one, in a read-only current folder):
# said before measuring, with the way to put it elsewhere
echo x >afile
CAPGNN_CACHE=afile/cache "$capgnn" profile --device cpu --quick >u5.out 2>u5.err; [ $? -eq 1 ] || bad "an uncreatable cache folder: exit status not 1"
has u5.err "cannot create folder 'afile/cache': .*--cache DIR or CAPGNN_CACHE puts it elsewhere"
hasnt u5.err "measuring"
# ... on rank 1 alone (--cache may differ between ranks): rank 1's own message, once (rank
# 0 printed only "rank 1 failed during ... (see that rank's log)", which rank 1 never logged)
np 1 "$capgnn" profile --device cpu --quick : -n 1 "$capgnn" profile --device cpu --quick --cache afile/cache \
  >u6.out 2>u6.err && bad "an uncreatable cache folder on rank 1 was accepted"
has u6.err "capgnn: error: rank 1: cannot create folder 'afile/cache'"
hasnt u6.err "failed during"
[ "$(grep -c "capgnn: error" u6.err)" = 1 ] || bad "not one error line when rank 1 cannot create its cache"
CUDA_MPS_PIPE_DIRECTORY=$out/no-mps "$capgnn" profile --device cuda --gpu-share 50 >u4.out 2>u4.err
[ $? -eq 1 ] || bad "--gpu-share without an MPS daemon: exit status not 1"
if [ -e /dev/nvidiactl ]; then # a GPU host: the daemon's absence is named
  has u4.err "needs the CUDA MPS control daemon, which is not running"
  has u4.err "nvidia-cuda-mps-control -d"
else
  has u4.err "has no NVIDIA GPU (no /dev/nvidiactl)"
fi

# 7. the text table shows the command's arguments with their control bytes escaped (\xNN),
# never raw on the terminal (a file name with an ESC in it)
"$capgnn" profile --device cpu --quick --json "e"$'\x1b'"[31m.json" >e1.out 2>e1.err || bad "a --json name with an ESC: exit $?"
grep -qF '# command: capgnn profile --device cpu --quick --json e\x1b[31m.json' e1.out ||
  { bad "the command line not shown escaped"; cat -v e1.out | sed 's/^/    /'; }
! grep -q $'\x1b' e1.out e1.err || bad "a raw ESC reached the terminal"

[ $fail -eq 0 ] && echo "test_profile: ok" || echo "test_profile: FAILED"
exit $fail
