"""The CUDA kernels' workloads beside the GPU's limits and PyTorch's kernels, in one run, timed
with CUDA events on torch's current stream (qnt runs on it through a bound context):
  - quantize f32 -> i8 and dequantize i8 -> f32 of 256 Mi elements, against the device-to-device
    copy bandwidth measured here (bytes read + written per second);
  - the int8 GEMM (i8 x i8 -> i32) at 4096 and 8192 square against torch._int_mm (cuBLASLt);
  - the weight-only int4 layer (block 128, 8192 x 8192, f16 activations) at batch 1 against the
    HBM roofline (the copy bandwidth; weights rotated over copies larger than the L2, so every
    call reads them from HBM), and at batches 1 to 16 against torch's f16 matmul with f16
    weights.
Prints one table (workload, qnt ms, reference ms, ratio, target) and writes it to $OUT/bench.md
when OUT is set.

usage: bench_cuda.py path/to/libqnt.so
"""
import ctypes as C
import os
import sys

import torch

lib = C.CDLL(sys.argv[1])
P = C.c_void_p
lib.qnt_last_error_message.restype = C.c_char_p
for name, args in {
    "qnt_context_create": [P],
    "qnt_context_destroy": [P],
    "qnt_context_cuda_device_count": [P, P],
    "qnt_context_set_cuda_stream": [P, C.c_int32, P],
    "qnt_context_synchronize": [P],
    "qnt_tensor_wrap_device": [C.c_int32, P, C.c_size_t, P, C.c_int32, C.c_int32, P, C.c_size_t,
                               P],
    "qnt_tensor_create_from_data": [C.c_int32, P, C.c_size_t, P, P, C.c_size_t, P],
    "qnt_tensor_destroy": [P],
    "qnt_qparams_create_per_tensor": [C.c_int32, C.c_float, C.c_int32, P],
    "qnt_qparams_create_per_block": [C.c_int32, C.c_int64, C.c_int64, C.c_size_t, P, P, P],
    "qnt_qparams_destroy": [P],
    "qnt_quantize": [P, P, P],
    "qnt_dequantize": [P, P, P],
    "qnt_qmatmul": [P, P, P, P, P],
    "qnt_prepared_create_linear_weight_only": [P, P, P, P, P],
    "qnt_prepared_run": [P, P, P, P],
    "qnt_prepared_destroy": [P],
}.items():
    getattr(lib, name).argtypes = args
    if not name.endswith("_destroy"):
        getattr(lib, name).restype = C.c_int32

F32, I32, I8, I4, F16, CUDA = 1, 2, 3, 7, 12, 2


def ok(status):
    if status != 0:
        raise RuntimeError(lib.qnt_last_error_message().decode())


ctx = P()
ok(lib.qnt_context_create(C.byref(ctx)))
n = C.c_int32()
ok(lib.qnt_context_cuda_device_count(ctx, C.byref(n)))
if not torch.cuda.is_available() or n.value == 0:
    print("bench_cuda: no CUDA device for qnt or torch; nothing measured")
    sys.exit(0)
ok(lib.qnt_context_set_cuda_stream(ctx, 0, P(torch.cuda.current_stream().cuda_stream)))
handles = []


def wrap(t, dtype, qp=None, shape=None):
    """A qnt device tensor over a torch CUDA tensor's memory (kept alive by the caller)."""
    shape = list(t.shape) if shape is None else shape
    dims = (C.c_int64 * len(shape))(*shape)
    out = P()
    nbytes = t.numel() * t.element_size()
    ok(lib.qnt_tensor_wrap_device(dtype, dims, len(shape), qp, CUDA, 0, P(t.data_ptr()), nbytes,
                                  C.byref(out)))
    handles.append(out)
    return out


def per_tensor(dtype, scale, zp):
    qp = P()
    ok(lib.qnt_qparams_create_per_tensor(dtype, C.c_float(scale), zp, C.byref(qp)))
    return qp


def timed(fn, reps=20, warm=3):
    """The best of `reps` event-timed calls, in milliseconds."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        best = min(best, a.elapsed_time(b))
    return best


rows = []


def row(workload, ms, ref_ms, ratio, target):
    rows.append((workload, "%.3f" % ms, "%.3f" % ref_ms, "%.2f" % ratio, target))


props = torch.cuda.get_device_properties(0)
l2 = getattr(props, "L2_cache_size", 50 << 20)

# --- the copy bandwidth: the roofline of the memory-bound kernels ------------------------------
N = 256 << 20
src = torch.empty(N, dtype=torch.float32, device="cuda").normal_()
dst = torch.empty_like(src)
copy_ms = timed(lambda: dst.copy_(src))
copy_bw = 2 * 4 * N / (copy_ms * 1e-3)  # bytes read + written per second
del dst

# --- quantize / dequantize of 256 Mi elements ----------------------------------------------------
qp8 = per_tensor(I8, 0.05, 0)
q = torch.empty(N, dtype=torch.int8, device="cuda")
xt, qt = wrap(src, F32), wrap(q, I8, qp8)
back = torch.empty_like(src)
bt = wrap(back, F32)
ms = timed(lambda: ok(lib.qnt_quantize(ctx, xt, qt)))
bw = 5 * N / (ms * 1e-3)
row("quantize f32->i8, 256 Mi", ms, copy_ms, bw / copy_bw, ">= 0.85 of copy bandwidth")
ms = timed(lambda: ok(lib.qnt_dequantize(ctx, qt, bt)))
bw = 5 * N / (ms * 1e-3)
row("dequantize i8->f32, 256 Mi", ms, copy_ms, bw / copy_bw, ">= 0.85 of copy bandwidth")
del src, back, q

# --- int8 GEMM against torch._int_mm -----------------------------------------------------------
for S in (4096, 8192):
    a = torch.randint(-128, 128, (S, S), dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (S, S), dtype=torch.int8, device="cuda")
    y = torch.empty(S, S, dtype=torch.int32, device="cuda")
    at, btt, yt = wrap(a, I8), wrap(b, I8), wrap(y, I32)
    ms = timed(lambda: ok(lib.qnt_qmatmul(ctx, at, btt, None, yt)), reps=5)
    ref = timed(lambda: torch._int_mm(a, b), reps=5)
    check = torch._int_mm(a, b)
    torch.cuda.synchronize()
    same = torch.equal(check, y)
    row("int8 GEMM %d^3%s" % (S, "" if same else " (RESULT DIFFERS)"), ms, ref, ref / ms,
        ">= 0.8x torch._int_mm")
    del a, b, y, check

# --- weight-only int4, 8192 x 8192, block 128 ----------------------------------------------------
K = Nf = 8192
B = 128
w_host = torch.randint(0, 256, (Nf * K // 2,), dtype=torch.uint8)
scales = (torch.rand(Nf * K // B) * 0.01 + 0.001).float()
sp = scales.numpy()
qp4 = P()
ok(lib.qnt_qparams_create_per_block(I4, 1, B, Nf * K // B, P(sp.ctypes.data), None,
                                    C.byref(qp4)))
wshape = (C.c_int64 * 2)(Nf, K)
wt = P()
wb = w_host.numpy()
ok(lib.qnt_tensor_create_from_data(I4, wshape, 2, qp4, P(wb.ctypes.data), wb.nbytes,
                                   C.byref(wt)))
w_bytes = Nf * K // 2 + 4 * Nf * K // B
copies = max(2, (2 * l2) // w_bytes + 1)  # rotated: together over twice the L2
ops = []
for _ in range(copies):
    op = P()
    ok(lib.qnt_prepared_create_linear_weight_only(ctx, wt, None, None, C.byref(op)))
    ops.append(op)
w16 = [torch.randn(Nf, K, dtype=torch.float16, device="cuda") * 0.02 for _ in range(2)]
for M in (1, 2, 4, 8, 16):
    x = torch.randn(M, K, dtype=torch.float16, device="cuda")
    y = torch.empty(M, Nf, dtype=torch.float16, device="cuda")
    xt, yt = wrap(x, F16), wrap(y, F16)
    turn = [0]

    def run():
        ok(lib.qnt_prepared_run(ctx, ops[turn[0] % copies], xt, yt))
        turn[0] += 1

    ms = timed(run)
    tturn = [0]

    def run_torch():
        torch.matmul(x, w16[tturn[0] % 2].t())
        tturn[0] += 1

    ref = timed(run_torch)
    if M == 1:
        roof_ms = w_bytes / copy_bw * 1e3  # the weights read once at the copy's bandwidth
        row("W4A16 int4 b128 8192^2, batch 1: roofline", ms, roof_ms, roof_ms / ms,
            ">= 0.8 of HBM roofline")
    row("W4A16 int4 b128 8192^2, batch %d vs torch f16" % M, ms, ref, ref / ms,
        ">= 3x torch f16 matmul")
for op in ops:
    lib.qnt_prepared_destroy(op)
lib.qnt_tensor_destroy(wt)
for h in handles:
    lib.qnt_tensor_destroy(h)
for qp in (qp8, qp4):
    lib.qnt_qparams_destroy(qp)
lib.qnt_context_destroy(ctx)

head = ("workload", "qnt ms", "reference ms", "ratio", "target")
lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
lines += ["| " + " | ".join(r) + " |" for r in rows]
table = "\n".join(lines)
print("\ndevice: %s, copy bandwidth %.0f GB/s (read + write)\n" % (props.name, copy_bw / 1e9))
print(table)
if os.environ.get("OUT"):
    with open(os.path.join(os.environ["OUT"], "bench.md"), "w") as f:
        f.write(table + "\n")
