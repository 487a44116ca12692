#!/usr/bin/env python3
"""Continue a capgnn run in PyTorch: the same model, weights and Adam state.

Reads a checkpoint written by `capgnn --save FILE` (runtime/checkpoint.c: magic, version,
JSON header, float32 parameters, Adam's first and second moments, ...), builds
benchmarks/torch_gcn.py's model (GCN or GraphSAGE-mean, plain torch.sparse.mm products)
on the same .cgr file, loads the parameters and the optimizer state into it and trains
K more full-batch epochs, printing `EPOCH LOSS` per line (epochs numbered as capgnn
numbers them after a --resume). With dropout 0 the run is deterministic, so
`capgnn --resume FILE --epochs E+K` must print the same losses to rounding: this is how
the benchmark's PyTorch peer and capgnn are shown to train the same model (README,
"Against PyTorch"; tests/test_torch_peer.sh). Dropout and weight decay are refused (the
peer's RNG and decay scope are not capgnn's).

usage: torch_resume.py CHECKPOINT GRAPH.cgr K [--threads N]
"""
import argparse
import json
import os
import struct
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_gcn  # noqa: E402


def read_checkpoint(path):
    b = open(path, "rb").read()
    if b[:12] != b"CAPGNN-CKPT\0":
        sys.exit(f"{path}: not a capgnn checkpoint")
    (version,) = struct.unpack("<I", b[12:16])
    if version != 1:
        sys.exit(f"{path}: checkpoint format {version}, this script reads 1")
    (hlen,) = struct.unpack("<Q", b[16:24])
    head = json.loads(b[24:24 + hlen])
    n = head["params"]
    base = 24 + hlen
    arrays = [np.frombuffer(b, dtype="<f4", count=n, offset=base + 4 * n * k).copy() for k in range(3)]
    return head, arrays


def split_layers(vec, dims, sage):
    """capgnn's layout per layer: W [fin x fout] row-major, W_self (SAGE), bias [fout]."""
    out, o = [], 0
    for i in range(len(dims) - 1):
        fin, fout = dims[i], dims[i + 1]
        w = vec[o:o + fin * fout].reshape(fin, fout)
        o += fin * fout
        ws = None
        if sage:
            ws = vec[o:o + fin * fout].reshape(fin, fout)
            o += fin * fout
        out.append((w, ws, vec[o:o + fout]))
        o += fout
    if o != vec.size:
        sys.exit(f"the checkpoint has {vec.size} parameters, the model {o}")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("graph")
    ap.add_argument("epochs", type=int)
    ap.add_argument("--threads", type=int, default=0)
    a = ap.parse_args()
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    h, (params, m1, m2) = read_checkpoint(a.checkpoint)
    if h["model"] not in ("gcn", "sage") or h["layernorm"] or h["optimizer"] != "adam":
        sys.exit("only GCN and GraphSAGE without LayerNorm, trained with Adam")
    input_dropout = h["dropout"] if h["input_dropout"] < 0 else h["input_dropout"]  # (-1: as --dropout)
    if h["dropout"] != 0 or input_dropout != 0 or h["weight_decay"] != 0 or h["lr_schedule"] != "none":
        sys.exit("train the checkpoint with --dropout 0 --input-dropout 0 --weight-decay 0 and no schedule")
    if h["feat_norm"] != "none":
        sys.exit("only --feat-norm none")
    n, rowptr, colidx, x, labels, split, classes = torch_gcn.read_cgr(a.graph)
    if (n, x.shape[1], classes) != (h["nodes"], h["features"], h["classes"]):
        sys.exit(f"{a.graph}: {n} vertices, {x.shape[1]} features, {classes} classes; the checkpoint was trained on "
                 f"{h['graph']} with {h['nodes']}, {h['features']}, {h['classes']}")
    dims = [x.shape[1]] + [h["hidden"]] * (h["layers"] - 1) + [classes]
    sage = h["model"] == "sage"
    net = torch_gcn.Net(h["model"], dims, 0.0, 0.0, tuned=False)
    adj = (torch_gcn.adjacency(n, rowptr, colidx, h["model"], torch.device("cpu")), None)
    layers = [split_layers(v, dims, sage) for v in (params, m1, m2)]
    opt = torch.optim.Adam(net.parameters(), lr=h["lr"], betas=(h["beta1"], h["beta2"]), eps=h["adam_eps"],
                           weight_decay=0.0)
    with torch.no_grad():
        for i, lin in enumerate(net.lins):
            tensors = [(lin.weight, 0, True), (lin.bias, 2, False)]
            if sage:
                tensors.append((net.selfs[i].weight, 1, True))
            for p, k, transpose in tensors:  # torch.nn.Linear holds W transposed
                val, e1, e2 = (torch.from_numpy((L[i][k].T if transpose else L[i][k]).copy()) for L in layers)
                p.copy_(val)
                opt.state[p]["step"] = torch.tensor(float(h["steps"]))
                opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"] = e1, e2
    xt, y = torch.from_numpy(x), torch.from_numpy(labels.astype(np.int64))
    train = torch.from_numpy(split == 1)
    net.train()
    for e in range(a.epochs):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(adj, xt)[train], y[train])
        loss.backward()
        opt.step()
        print(h["epoch"] + e + 1, f"{loss.item():.9g}", flush=True)


if __name__ == "__main__":
    main()
