#!/usr/bin/env bash
# fuzz/make_seeds.sh CAPGNN [OUT] — writes the seed corpus of every harness
# (default OUT: fuzz/corpus) from files the capgnn binary produces: tiny .cgr files
# (v1 dense, v2 sparse with 64-byte blocks, v2 multilabel), a checkpoint, a device
# profile, a partition cache, a settings file and .npy arrays. Seeds are a few KB;
# harnesses that take a mode byte get it prepended (00 and 01: CRCs as stored /
# recomputed by the harness). Crashers found by fuzzing are added beside them by hand
# (named crash-<target>-<what>) and are not produced here.
set -eu
bin=$(realpath "$1")
src=$(realpath "$(dirname "$0")/..")
out=$(realpath -m "${2:-$(dirname "$0")/corpus}")
tmp=$(mktemp -d /tmp/capgnn-seeds.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"/{cgr,checkpoint,profile,part_cache,config,npy,text,npz,saint}
export CAPGNN_LOG_LEVEL=error
cd "$tmp"

# mode byte, then the file
seed() { # seed OUTFILE MODE_HEX FILE
  { printf "\\x$2"; cat "$3"; } >"$1"
}

"$bin" gen synth:tiny:nodes=12,degree=3,feats=3,classes=3 -o v1-dense.cgr --quiet
"$bin" gen synth:tiny:nodes=12,degree=3,classes=3,identity=1 -o v2-sparse.cgr --block-shift 6 --quiet
"$bin" gen synth:tiny:nodes=10,degree=2,feats=2,classes=4,multilabel=1 -o v2-multi.cgr --block-shift 6 --quiet
for f in v1-dense v2-sparse v2-multi; do
  seed "$out/cgr/seed-$f-00" 00 $f.cgr
  seed "$out/cgr/seed-$f-01" 01 $f.cgr
  seed "$out/cgr/seed-$f-0e" 0e $f.cgr   # FEAT_SPARSE | ROWNORM, every second row
done

"$bin" train --graph synth:tiny:nodes=12,degree=3,feats=3,classes=3 --hidden 2 --epochs 2 \
  --checkpoint ck.bin --quiet >/dev/null
seed "$out/checkpoint/seed-00" 00 ck.bin
seed "$out/checkpoint/seed-01" 01 ck.bin
# mode 02: "HEADER\0PAYLOAD", framed by the harness
python3 - ck.bin "$out/checkpoint/seed-02" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
hl = struct.unpack_from("<Q", b, 16)[0]
open(sys.argv[2], "wb").write(b"\x02" + b[24:24 + hl] + b"\0" + b[24 + hl:-4])
PY



# a partition cache as fuzz_part_cache's mode 0xa7 expects (n = 8, 2 parts; the harness
# writes the key fields and the CRC itself)
python3 - "$out/part_cache" <<'PY'
import struct, sys, zlib
body = b"CGPART01" + struct.pack("<IIQIIQII", 1, 64, 8, 2, 1, 7, 0x12345678, 0) + bytes(16)
body += struct.pack("<8i", 0, 1, 0, 1, 1, 0, 0, 1)
f = body + struct.pack("<I", zlib.crc32(body))
open(sys.argv[1] + "/seed-a7", "wb").write(b"\xa7" + f)
open(sys.argv[1] + "/seed-27", "wb").write(b"\x27" + f)
PY

# .npy arrays: each dtype the importers read, v1 and v2 headers, a 0-d string
python3 - "$out/npy" <<'PY'
import struct, sys
def npy(descr, shape, data, ver=1):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    pre = 10 if ver == 1 else 12
    d += " " * ((64 - (pre + len(d) + 1) % 64) % 64) + "\n"
    h = b"\x93NUMPY" + bytes([ver, 0]) + (struct.pack("<H", len(d)) if ver == 1 else struct.pack("<I", len(d)))
    return h + d.encode() + data
seeds = {
    "f4-2x3": (0, npy("<f4", "(2, 3)", struct.pack("<6f", 1, 2, 3, 4, 5, 6))),
    "f8-3": (0, npy("<f8", "(3,)", struct.pack("<3d", 1.5, -2, 0))),
    "i8-4": (1, npy("<i8", "(4,)", struct.pack("<4q", 0, 3, -1, 2))),
    "i4-4-v2": (2, npy("<i4", "(4,)", struct.pack("<4i", 0, 3, -1, 2), ver=2)),
    "u1-5": (3, npy("|u1", "(5,)", bytes([0, 1, 2, 3, 1]))),
    "b1-2x2": (3, npy("|b1", "(2, 2)", bytes([0, 1, 1, 0]))),
    "i2-2": (2, npy("<i2", "(2,)", struct.pack("<2h", 7, -7))),
    "S3": (0, npy("|S3", "()", b"csr")),
    "U3": (0, npy("<U3", "()", "coo".encode("utf-32-le"))),
}
for name, (mode, b) in seeds.items():
    open("%s/seed-%s" % (sys.argv[1], name), "wb").write(bytes([mode]) + b)
PY

# settings files: the shipped ones, and one with every kind of line
cp "$src/configs/cora.ini" "$out/config/seed-cora.ini"
cat >"$out/config/seed-kinds.ini" <<'INI'
# every kind of line
[data]
graph = "synth:tiny"   ; a comment
[model]
layers=2
hidden = 16
layernorm = yes
quiet = false
no-part-cache = true
part_cache = /tmp/x # another
dropout = 0.5
seed = 18446744073709551615
INI

# a device profile (one rank, --quick: ~10 s) and its text compacted
"$bin" profile --quick --device cpu --json p.json --cache pcache >/dev/null 2>&1
cp p.json "$out/profile/seed-quick.json"
cp pcache/profile/links-*.json "$out/profile/seed-cache-links.json"   # the profile cache's files
for f in pcache/profile/*.json; do case $f in */links-*) ;; *) cp "$f" "$out/profile/seed-cache-device.json" ;; esac; done
python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1])), open(sys.argv[2], "w"), separators=(",", ":"))' \
  p.json "$out/profile/seed-quick-compact.json"
# .npz archives as scipy.sparse.save_npz writes them (csr deflated, coo stored)
python3 - "$out/npz" <<'PY'
import io, struct, sys, zipfile
def npy(descr, shape, data):
    d = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)
    d += " " * ((64 - (10 + len(d) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(d)) + d.encode() + data
def npz(name, members, method):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as z:
        for k, v in members.items():
            z.writestr(zipfile.ZipInfo(k + ".npy", (1980, 1, 1, 0, 0, 0)), v, compress_type=method)
    open("%s/seed-%s.npz" % (sys.argv[1], name), "wb").write(buf.getvalue())
# a triangle 0-1-2
npz("csr", {"format": npy("|S3", "()", b"csr"), "shape": npy("<i8", "(2,)", struct.pack("<2q", 3, 3)),
            "indptr": npy("<i4", "(4,)", struct.pack("<4i", 0, 2, 4, 6)),
            "indices": npy("<i4", "(6,)", struct.pack("<6i", 1, 2, 0, 2, 0, 1)),
            "data": npy("<f4", "(6,)", struct.pack("<6f", *[1.0] * 6))}, zipfile.ZIP_DEFLATED)
npz("coo", {"format": npy("|S3", "()", b"coo"), "shape": npy("<i8", "(2,)", struct.pack("<2q", 3, 3)),
            "row": npy("<i8", "(3,)", struct.pack("<3q", 0, 1, 2)),
            "col": npy("<i8", "(3,)", struct.pack("<3q", 1, 2, 0))}, zipfile.ZIP_STORED)
PY

# text for the importers' line reader and number parsers, plain and gzip
printf '# an edge list\n0 1\n1\t2 0.5\n%% comment\n\n2 0\r\n-3 +4 1e-5 3.4028235e38 1e-46 0x1p3 nan -inf 123456789012345678901 .5 5. 1e\n' \
  >"$out/text/seed-edges.txt"
printf '1.5,2.25,-0.0,7\n3e10,16777217,0.1,NaN\n' | gzip -9 -n >"$out/text/seed-feat.csv.gz"
# GraphSAINT JSON (mode 0: class_map.json, 1: role.json) for the harness's 4-vertex folder
printf '\x00{"0": 1, "1": 0, "2": 1, "3": 0}' >"$out/saint/seed-class-map"
printf '\x00{"0": [1, 0], "1": [0, 1], "2": [1, 1], "3": [0, 0]}' >"$out/saint/seed-class-map-multi"
printf '\x01{"tr": [0, 1], "va": [2], "te": [3]}' >"$out/saint/seed-role"
echo "seeds written to $out"
