#!/usr/bin/python3
"""Fixtures for test_import_fixtures: small datasets in every source format that
`capgnn convert` reads, each with the graph it must become, written here by an
independent implementation (numpy/scipy + a .cgr writer that follows
../shared/datasets/FORMAT.md), plus malformed variants.

usage: import_fixtures.py OUTDIR      (exit 77 when numpy/scipy are missing)

Each case is a folder OUTDIR/<case>/ holding the source files, expected.cgr and
expected_stats.txt ("edges_read self_loops duplicates reverse_added isolated").
The converted graph is named "converted" (the test writes converted.cgr)."""
import gzip
import json
import os
import shutil
import struct
import sys
import zlib

try:
    import numpy as np
    import scipy.sparse as sp
except ImportError:
    sys.exit(77)

NAME = "converted"


# ---- the expected graph -------------------------------------------------------------

def sym_csr(n, us, vs):
    """Symmetrised, deduplicated, loop-free CSR of the directed entries (us[i], vs[i]),
    and the counters the converter must report."""
    us = np.asarray(us, dtype=np.int64)
    vs = np.asarray(vs, dtype=np.int64)
    loops = int(np.sum(us == vs))
    keep = us != vs
    pairs = set(zip(us[keep].tolist(), vs[keep].tolist()))
    dups = int(np.sum(keep)) - len(pairs)
    full = pairs | {(v, u) for (u, v) in pairs}
    added = len(full) - len(pairs)
    rows = [[] for _ in range(n)]
    for u, v in full:
        rows[u].append(v)
    rowptr = np.zeros(n + 1, dtype=np.int64)
    col = []
    for u in range(n):
        r = sorted(rows[u])
        col.extend(r)
        rowptr[u + 1] = rowptr[u] + len(r)
    isolated = sum(1 for u in range(n) if not rows[u])
    stats = (len(us), loops, dups, added, isolated)
    return rowptr, np.array(col, dtype=np.int32), stats


def feat_storage(x, mode="auto"):
    """The converter's rule: sparse when that at least halves the bytes; nonzero is
    bitwise, so -0.0 is kept."""
    n, f = x.shape
    bits = x.view(np.uint32)
    nnz = int(np.count_nonzero(bits))
    if mode == "dense":
        return False
    if mode == "sparse":
        return True
    return 8 * nnz + 8 * (n + 1) <= 2 * n * f


def write_cgr(path, name, rowptr, colidx, x, labels, split, multilabel=False, sparse=None):
    """A .cgr writer following FORMAT.md, independent of the C one."""
    n = len(rowptr) - 1
    m = len(colidx)
    x = np.ascontiguousarray(x, dtype=np.float32)
    f = x.shape[1]
    if sparse is None:
        sparse = feat_storage(x)
    if sparse:
        bits = x.view(np.uint32)
        nzr, nzc = np.nonzero(bits)
        frp = np.zeros(n + 1, dtype=np.int64)
        np.add.at(frp, nzr + 1, 1)
        frp = np.cumsum(frp).astype(np.int64)
        fci = nzc.astype(np.int32)
        fv = x[nzr, nzc].astype(np.float32)
        nnz = len(fv)
        secs = [rowptr.astype("<i8").tobytes(), colidx.astype("<i4").tobytes(), frp.astype("<i8").tobytes(),
                fci.astype("<i4").tobytes(), fv.astype("<f4").tobytes()]
    else:
        nnz = n * f
        secs = [rowptr.astype("<i8").tobytes(), colidx.astype("<i4").tobytes(), b"", b"",
                x.astype("<f4").tobytes()]
    if multilabel:
        c = labels.shape[1]
        secs.append(np.ascontiguousarray(labels, dtype=np.uint8).tobytes())
    else:
        c = int(labels.max()) + 1 if labels.max() >= 0 else 1
        secs.append(labels.astype("<i4").tobytes())
    secs.append(split.astype(np.uint8).tobytes())
    flags = (1 if multilabel else 0) | (2 if sparse else 0)
    table = b""
    body = b""
    cur = 256
    for s in secs:
        if not s:
            table += struct.pack("<QQII", 0, 0, 0, 0)
            continue
        off = (cur + 63) // 64 * 64
        body += b"\0" * (off - cur) + s
        table += struct.pack("<QQII", off, len(s), zlib.crc32(s), 0)
        cur = off + len(s)
    h = b"CAPGNN01" + struct.pack("<IIQQQQQII", 1, 256, n, m, f, c, nnz, flags, 7) + table
    h += name.encode().ljust(16, b"\0") + struct.pack("<I", 0)
    h += struct.pack("<I", zlib.crc32(h))
    assert len(h) == 256
    with open(path, "wb") as fp:
        fp.write(h + body)


def write_stats(d, stats):
    with open(os.path.join(d, "expected_stats.txt"), "w") as fp:
        fp.write(" ".join(str(s) for s in stats) + "\n")


def messy_edges(rng, n, k):
    """k directed entries with self-loops, repeats, one-way and two-way edges, and a
    couple of isolated vertices (the last two ids are never used)."""
    us = rng.integers(0, n - 2, size=k)
    vs = rng.integers(0, n - 2, size=k)
    us[:3] = vs[:3]                      # self-loops
    us = np.concatenate([us, us[5:9]])   # exact repeats
    vs = np.concatenate([vs, vs[5:9]])
    us = np.concatenate([us, vs[10:14]])  # mirrors of existing entries
    vs = np.concatenate([vs, us[10:14]])
    return us, vs


def float_text(x, style):
    """A decimal string whose correctly rounded float32 value is exactly x."""
    if style == 0:
        return np.format_float_positional(x, unique=True, trim="-")
    if style == 1:
        return np.format_float_scientific(x, unique=True, trim="-")
    return repr(float(x))  # the double's shortest repr: 9-17 digits


def mkdir(d):
    os.makedirs(d, exist_ok=True)
    return d


# ---- DGL reddit ---------------------------------------------------------------------------

def case_reddit(out, fmt, feat_dtype, label_dtype, compressed):
    rng = np.random.default_rng(11 if fmt == "coo" else 12)
    n, f, c = 40, 6, 5
    d = mkdir(os.path.join(out, "reddit_" + fmt))
    us, vs = messy_edges(rng, n, 120)
    rowptr, colidx, stats = sym_csr(n, us, vs)
    a = sp.coo_matrix((np.ones(len(us), dtype=np.float32), (us, vs)), shape=(n, n))
    if fmt == "csr":
        # Keep the duplicates: build the CSR by hand, as a file may hold it.
        order = np.argsort(us, kind="stable")
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, us + 1, 1)
        indptr = np.cumsum(indptr)
        a = sp.csr_matrix((np.ones(len(us), dtype=np.float32), vs[order].astype(np.int64), indptr), shape=(n, n))
        a.indices = a.indices.astype(np.int64)
        a.indptr = a.indptr.astype(np.int64)
    sp.save_npz(os.path.join(d, "reddit_graph.npz"), a, compressed=compressed)
    x = rng.standard_normal((n, f)).astype(feat_dtype)
    labels = rng.integers(0, c, size=n).astype(label_dtype)
    types = rng.integers(1, 4, size=n).astype(np.uint8)
    types[:2] = 0
    saver = np.savez_compressed if compressed else np.savez
    saver(os.path.join(d, "reddit_data.npz"), feature=x, label=labels, node_types=types)
    write_cgr(os.path.join(d, "expected.cgr"), NAME, rowptr, colidx, x.astype(np.float32),
              labels.astype(np.int32), types)
    write_stats(d, stats)
    return d


# ---- GraphSAINT ------------------------------------------------------------------------------

def case_saint(out, multi):
    rng = np.random.default_rng(21 if multi else 22)
    n, f, c = 50, 30, 4
    d = mkdir(os.path.join(out, "saint_multi" if multi else "saint_single"))
    us, vs = messy_edges(rng, n, 150)
    rowptr, colidx, stats = sym_csr(n, us, vs)
    a = sp.coo_matrix((np.ones(len(us)), (us, vs)), shape=(n, n)).tocsr()  # sums duplicates: fine, data ignored
    # tocsr merged the duplicates; the source entries are what the file holds now.
    rows = np.repeat(np.arange(n), np.diff(a.indptr))
    rowptr, colidx, stats = sym_csr(n, rows, a.indices)
    sp.save_npz(os.path.join(d, "adj_full.npz"), a, compressed=True)
    if multi:
        x = rng.standard_normal((n, f)).astype(np.float32)
        x[0, 0] = -0.0
        np.save(os.path.join(d, "feats.npy"), x)
        lab = (rng.random((n, c)) < 0.4).astype(np.uint8)
        lab[3] = 0
        cmap = {str(u): [int(v) for v in lab[u]] for u in range(n)}
    else:
        # Bag of words: mostly zeros, float64 on disk -> stored sparse.
        x = (rng.random((n, f)) < 0.08) * rng.integers(1, 4, size=(n, f))
        x = x.astype(np.float64)
        np.save(os.path.join(d, "feats.npy"), x)
        lab = rng.integers(0, c, size=n).astype(np.int32)
        lab[[4, 7]] = -1  # absent from the class map
        cmap = {str(u): int(lab[u]) for u in range(n) if lab[u] >= 0}
    keys = list(cmap.keys())
    rng.shuffle(keys)
    with open(os.path.join(d, "class_map.json"), "w") as fp:
        json.dump({k: cmap[k] for k in keys}, fp)
    split = rng.integers(1, 4, size=n).astype(np.uint8)
    if not multi:
        split[[4, 7]] = 0
    split[10] = 0
    roles = {"tr": [], "va": [], "te": []}
    for u in rng.permutation(n):
        if split[u]:
            roles[["", "tr", "va", "te"][split[u]]].append(int(u))
    with open(os.path.join(d, "role.json"), "w") as fp:
        json.dump(roles, fp, indent=1)
    write_cgr(os.path.join(d, "expected.cgr"), NAME, rowptr, colidx, x.astype(np.float32),
              lab if multi else lab.astype(np.int32), split, multilabel=multi)
    write_stats(d, stats)
    return d


# ---- OGB --------------------------------------------------------------------------------------

def write_csv(path, lines, gz=True):
    data = ("\n".join(lines) + "\n").encode()
    if gz:
        with gzip.open(path + ".gz", "wb") as fp:
            fp.write(data)
    else:
        with open(path, "wb") as fp:
            fp.write(data)


def case_ogb(out, multi):
    rng = np.random.default_rng(31 if multi else 32)
    n, f, c = 45, 7, 6
    d = mkdir(os.path.join(out, "ogb_multi" if multi else "ogb"))
    raw = mkdir(os.path.join(d, "raw"))
    gz = not multi  # the multi-label case uses plain .csv files and no num-node-list
    us, vs = messy_edges(rng, n, 130)
    rowptr, colidx, stats = sym_csr(n, us, vs)
    write_csv(os.path.join(raw, "edge.csv"), ["%d,%d" % (u, v) for u, v in zip(us, vs)], gz)
    x = (rng.standard_normal((n, f)) * np.array([1, 1e-3, 1e3, 1, 1e-6, 10, 1])).astype(np.float32)
    x[:, 3] = np.round(x[:, 3], 3)  # short decimals: the fast path
    x[1, 2] = -0.0
    x[2, 2] = 0.0
    x[3, 4] = np.float32(1e-40)     # subnormal
    lines = []
    for u in range(n):
        lines.append(",".join(float_text(x[u, j], (u + j) % 3) for j in range(f)))
    write_csv(os.path.join(raw, "node-feat.csv"), lines, gz)
    split = np.zeros(n, dtype=np.uint8)
    perm = rng.permutation(n)
    split[perm[:20]] = 1
    split[perm[20:28]] = 2
    split[perm[28:38]] = 3
    if multi:
        lab = (rng.random((n, c)) < 0.3).astype(np.uint8)
        write_csv(os.path.join(raw, "node-label.csv"), [",".join(str(v) for v in row) for row in lab], gz)
    else:
        lab = rng.integers(0, c, size=n).astype(np.int32)
        unl = perm[40:43]
        lab[unl] = -1
        text = [str(v) for v in lab]
        text[unl[0]] = "nan"
        text[unl[1]] = "NaN"
        text[5] = "%d.0" % lab[5] if lab[5] >= 0 else text[5]
        write_csv(os.path.join(raw, "node-label.csv"), text, gz)
        write_csv(os.path.join(raw, "num-node-list.csv"), [str(n)], gz)
        write_csv(os.path.join(raw, "num-edge-list.csv"), [str(len(us))], gz)
    sd = mkdir(os.path.join(d, "split", "time" if not multi else "random"))
    for s, name in ((1, "train"), (2, "valid"), (3, "test")):
        ids = [str(u) for u in rng.permutation(np.nonzero(split == s)[0])]
        write_csv(os.path.join(sd, name + ".csv"), ids, gz)
    write_cgr(os.path.join(d, "expected.cgr"), NAME, rowptr, colidx, x, lab, split, multilabel=multi)
    write_stats(d, stats)
    return d


# ---- edge list ----------------------------------------------------------------------------------

def case_edgelist(out):
    rng = np.random.default_rng(41)
    n, f, c = 30, 5, 3
    d = mkdir(os.path.join(out, "edgelist"))
    us, vs = messy_edges(rng, n, 90)
    rowptr, colidx, stats = sym_csr(n, us, vs)
    lines = ["# an edge list with comments", "% and another comment", ""]
    for i, (u, v) in enumerate(zip(us, vs)):
        sep = "\t" if i % 3 == 0 else " "
        lines.append("%d%s%d%s" % (u, sep, v, " 1.5" if i == 7 else ""))
    with open(os.path.join(d, "edges.txt"), "w") as fp:
        fp.write("\r\n".join(lines[:10]) + "\n" + "\n".join(lines[10:]))  # no final newline, some CRLF
    x = rng.integers(-3, 4, size=(n, f)).astype(np.int16)  # integer features, converted
    np.save(os.path.join(d, "X.npy"), x)
    lab = rng.integers(0, c, size=n).astype(np.int64)
    lab[2] = -1
    np.save(os.path.join(d, "Y.npy"), lab)
    split = rng.integers(0, 4, size=n).astype(np.int8)
    split[2] = 0
    np.save(os.path.join(d, "S.npy"), split)
    write_cgr(os.path.join(d, "expected.cgr"), NAME, rowptr, colidx, x.astype(np.float32),
              lab.astype(np.int32), split.astype(np.uint8))
    write_stats(d, stats)
    # The same edges and features with a multi-label (n, c) matrix and no split file.
    np.save(os.path.join(d, "Y_multi.npy"), (rng.random((n, c)) < 0.5).astype(np.bool_))
    # The labels as an (n, 1) column (PyG's and OGB's usual shape): class ids, not multi-label.
    np.save(os.path.join(d, "Y_col.npy"), lab.reshape(-1, 1))
    return d


# ---- malformed inputs ----------------------------------------------------------------------------

def bad_cases(out, good):
    def clone(src, name):
        d = os.path.join(out, name)
        shutil.copytree(src, d)
        return d

    d = clone(good["reddit_coo"], "bad_truncated_npz")
    p = os.path.join(d, "reddit_graph.npz")
    data = open(p, "rb").read()
    open(p, "wb").write(data[: len(data) // 2])

    d = clone(good["reddit_coo"], "bad_label_dtype")
    z = dict(np.load(os.path.join(d, "reddit_data.npz")))
    z["label"] = z["label"].astype(np.float32)
    np.savez(os.path.join(d, "reddit_data.npz"), **z)

    d = clone(good["reddit_coo"], "bad_types_shape")
    z = dict(np.load(os.path.join(d, "reddit_data.npz")))
    z["node_types"] = z["node_types"][:-1]
    np.savez(os.path.join(d, "reddit_data.npz"), **z)

    d = clone(good["reddit_coo"], "bad_types_value")
    z = dict(np.load(os.path.join(d, "reddit_data.npz")))
    z["node_types"][17] = 7
    np.savez(os.path.join(d, "reddit_data.npz"), **z)

    d = clone(good["saint_multi"], "bad_multilabel")
    cm = json.load(open(os.path.join(d, "class_map.json")))
    cm["9"][1] = 2
    json.dump(cm, open(os.path.join(d, "class_map.json"), "w"))

    d = clone(good["saint_single"], "bad_json")
    t = open(os.path.join(d, "role.json")).read()
    open(os.path.join(d, "role.json"), "w").write(t.replace(",", ";", 1))

    d = clone(good["saint_single"], "bad_role_twice")
    r = json.load(open(os.path.join(d, "role.json")))
    r["te"].append(r["tr"][0])
    json.dump(r, open(os.path.join(d, "role.json"), "w"))

    d = clone(good["saint_single"], "bad_fortran")
    x = np.load(os.path.join(d, "feats.npy"))
    np.save(os.path.join(d, "feats.npy"), np.asfortranarray(x))

    d = clone(good["saint_single"], "bad_bigendian")
    x = np.load(os.path.join(d, "feats.npy"))
    np.save(os.path.join(d, "feats.npy"), x.astype(">f8"))

    d = clone(good["saint_single"], "bad_feat_rows")
    x = np.load(os.path.join(d, "feats.npy"))
    np.save(os.path.join(d, "feats.npy"), x[:-1])

    d = clone(good["ogb"], "bad_missing_split")
    os.remove(os.path.join(d, "split", "time", "valid.csv.gz"))

    d = clone(good["ogb"], "bad_ogb_label")
    p = os.path.join(d, "raw", "node-label.csv.gz")
    lines = gzip.open(p, "rt").read().split("\n")
    lines[6] = "-5"
    with gzip.open(p, "wt") as fp:
        fp.write("\n".join(lines))

    d = clone(good["ogb"], "bad_truncated_gz")
    p = os.path.join(d, "raw", "node-feat.csv.gz")
    data = open(p, "rb").read()
    open(p, "wb").write(data[: len(data) * 2 // 3])

    d = clone(good["ogb"], "bad_feat_columns")
    p = os.path.join(d, "raw", "node-feat.csv.gz")
    lines = gzip.open(p, "rt").read().split("\n")
    lines[3] = lines[3] + ",1.0"
    with gzip.open(p, "wt") as fp:
        fp.write("\n".join(lines))

    d = clone(good["edgelist"], "bad_vertex_id")
    p = os.path.join(d, "edges.txt")
    lines = open(p).read().split("\n")
    lines[12] = "3 30"  # n = 30
    open(p, "w").write("\n".join(lines))

    d = clone(good["edgelist"], "bad_header")
    p = os.path.join(d, "edges.txt")
    lines = open(p).read().split("\n")
    open(p, "w").write("\n".join(["src dst"] + lines))


def main():
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    out = sys.argv[1]
    good = {
        "reddit_coo": case_reddit(out, "coo", np.float32, np.int64, True),
        "reddit_csr": case_reddit(out, "csr", np.float64, np.int32, False),
        "saint_single": case_saint(out, False),
        "saint_multi": case_saint(out, True),
        "ogb": case_ogb(out, False),
        "ogb_multi": case_ogb(out, True),
        "edgelist": case_edgelist(out),
    }
    bad_cases(out, good)
    return 0


if __name__ == "__main__":
    sys.exit(main())
