#!/usr/bin/env python3
"""qnt from Python against PyTorch on the same arrays, in one process: per-tensor quantize and
dequantize (torch.quantize_per_tensor / Tensor.dequantize) and the dynamic int8 linear layer
(torch.ao.nn.quantized.dynamic.Linear against qnt.PreparedLinearDynamic, both with reduce_range
as PyTorch's x86 default), on 1 and 2 threads. Times are the median of repeated calls, Python's
call overhead included on both sides. usage: bench_python.py [--quick]"""
import statistics
import sys
import time

import numpy as np
import torch

import qnt

quick = "--quick" in sys.argv


def median_time(fn, reps):
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


rng = np.random.default_rng(0)
rows = []
for threads in (1, 2):
    torch.set_num_threads(threads)
    ctx = qnt.Context(threads=threads)
    n = 1 << 22
    x = rng.standard_normal(n).astype(np.float32)
    xt = torch.from_numpy(x)  # the same memory
    qp = qnt.QParams.per_tensor("int8", 0.02)
    reps = 5 if quick else 30
    out = qnt.Tensor.empty((n,), "int8", qp)
    tq = median_time(lambda: qnt.quantize(x, qp, out=out, ctx=ctx), reps)
    tt = median_time(lambda: torch.quantize_per_tensor(xt, 0.02, 0, torch.qint8), reps)
    rows.append(("quantize f32 -> int8, 4 Mi", threads, tq, tt))
    q = qnt.quantize(x, qp)
    tqq = torch.quantize_per_tensor(xt, 0.02, 0, torch.qint8)
    # PyTorch's CPU kernel multiplies by 1 / scale where ONNX (and qnt) divide: a few codes differ
    ndiff = int(np.count_nonzero(np.from_dlpack(q) != tqq.int_repr().numpy()))
    rows[-1] = (rows[-1][0] + f" ({ndiff} of {n} codes differ: x * (1/s) vs x / s)",) + rows[-1][1:]
    y = qnt.Tensor.empty((n,), "float32")
    tq = median_time(lambda: qnt.dequantize(q, out=y, ctx=ctx), reps)
    tt = median_time(lambda: tqq.dequantize(), reps)
    rows.append(("dequantize int8 -> f32, 4 Mi", threads, tq, tt))
    K = N = 1024
    w = rng.standard_normal((N, K)).astype(np.float32) / 32
    tl = torch.ao.nn.quantized.dynamic.Linear(K, N)
    wq = torch.quantize_per_channel(torch.from_numpy(w), torch.from_numpy(np.abs(w).max(1) / 127).double(),
                                    torch.zeros(N, dtype=torch.long), 0, torch.qint8)
    tl.set_weight_bias(wq, None)
    qw = qnt.asarray(wq.int_repr().numpy(), qparams=qnt.QParams.per_axis(
        "int8", 0, wq.q_per_channel_scales().float().numpy()))
    lin = qnt.PreparedLinearDynamic(qw, reduce_range=True, ctx=ctx)
    for m in (1, 16, 128):
        a = rng.standard_normal((m, K)).astype(np.float32)
        at = torch.from_numpy(a)
        yo = qnt.Tensor.empty((m, N), "float32")
        r = 20 if quick else 200
        tq = median_time(lambda: lin(a, out=yo, ctx=ctx), r)
        with torch.no_grad():
            tt = median_time(lambda: tl(at), r)
            diff = np.abs(np.from_dlpack(lin(a, ctx=ctx)) - tl(at).numpy()).max()
        rows.append((f"dynamic linear {m}x{K} * {K}x{N} (max |diff| {diff:.1e})", threads, tq, tt))
    ctx.close()

print(f"| qnt {qnt.version()} from Python vs PyTorch {torch.__version__} | threads | qnt | PyTorch | PyTorch time / qnt time |")
print("|---|---|---|---|---|")
for name, th, tq, tt in rows:
    print(f"| {name} | {th} | {tq * 1e6:.1f} µs | {tt * 1e6:.1f} µs | {tt / tq:.2f}× |")
