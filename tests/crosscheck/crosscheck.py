#!/usr/bin/env python3
"""Cross-checks libqnt against independent implementations:

  - PyTorch's MinMaxObserver / PerChannelMinMaxObserver (scale and zero point), and
  - the ONNX QuantizeLinear / DequantizeLinear reference formulas written in numpy
    (y = clip(rint(x / scale) + zero_point), x = (q - zero_point) * scale, float32 throughout),
    per tensor, per axis and per block, for every integer dtype;
  - bitsandbytes' NF4 rule (x * (1 / absmax), its 15 decision thresholds), in numpy;
  all of these bit for bit; and, for the operators, within one step of
  - the ONNX QLinearMatMul reference formula (numpy: float64 product of the int32 accumulator), and
  - PyTorch's quantized linear, conv2d, add and relu (its default quantized engine),
  counting and printing how many results are bit-identical.

It loads libqnt.so through ctypes, as any foreign-language user would.
usage: crosscheck.py path/to/libqnt.so
"""
import ctypes as C
import sys

import numpy as np
import torch
from torch.ao.quantization.observer import MinMaxObserver, PerChannelMinMaxObserver

lib = C.CDLL(sys.argv[1])
P = C.c_void_p
lib.qnt_last_error_message.restype = C.c_char_p
for name, args in {
    "qnt_tensor_create_from_data": [C.c_int32, P, C.c_size_t, P, P, C.c_size_t, P],
    "qnt_tensor_create": [C.c_int32, P, C.c_size_t, P, P],
    "qnt_tensor_copy_to": [P, P, C.c_size_t],
    "qnt_tensor_byte_size": [P, P],
    "qnt_tensor_destroy": [P],
    "qnt_qparams_create_per_tensor": [C.c_int32, C.c_float, C.c_int32, P],
    "qnt_qparams_create_per_axis": [C.c_int32, C.c_int64, C.c_size_t, P, P, P],
    "qnt_qparams_create_per_block": [C.c_int32, C.c_int64, C.c_int64, C.c_size_t, P, P, P],
    "qnt_qparams_scale_count": [P, P],
    "qnt_qparams_scales": [P, P, C.c_size_t],
    "qnt_qparams_zero_points": [P, P, C.c_size_t],
    "qnt_qparams_destroy": [P],
    "qnt_quantize": [P, P, P],
    "qnt_dequantize": [P, P, P],
    "qnt_calibrate_minmax": [P, P, C.c_int32, C.c_int32, C.c_int32, C.c_int64, C.c_int64, P],
    "qnt_calibrate_minmax_range": [P, P, C.c_int32, C.c_int32, C.c_int32, C.c_int64, C.c_int64,
                                   C.c_int32, C.c_int32, P],
    "qnt_calibrate_codebook": [P, P, C.c_int32, C.c_int32, C.c_int64, C.c_int64, P],
    "qnt_qmatmul": [P, P, P, P, P],
    "qnt_qadd": [P, P, P, P, P],
    "qnt_qrelu": [P, P, P],
    "qnt_calibrator_create": [C.c_int32, C.c_int32, C.c_int32, C.c_int32, C.c_int64, P],
    "qnt_calibrator_set_option": [P, C.c_int32, C.c_double],
    "qnt_calibrator_observe": [P, P, P],
    "qnt_calibrator_compute": [P, P, P],
    "qnt_calibrator_destroy": [P],
    "qnt_op_desc_create": [P],
    "qnt_op_desc_destroy": [P],
    "qnt_op_desc_set": [P, C.c_int32, C.c_int64],
    "qnt_qconv2d": [P, P, P, P, P, P],
    "qnt_context_cuda_device_count": [P, P],
    "qnt_context_create": [P],
    "qnt_tensor_dtype": [P, P],
    "qnt_tensor_rank": [P, P],
    "qnt_tensor_shape": [P, P, C.c_size_t],
    "qnt_tensor_qparams": [P, P],
    "qnt_tensor_create_on_device": [C.c_int32, P, C.c_size_t, P, C.c_int32, C.c_int32, P],
    "qnt_tensor_copy": [P, P, P],
    "qnt_tensor_copy_from": [P, P, C.c_size_t],
}.items():
    getattr(lib, name).argtypes = args
    if name not in ("qnt_tensor_destroy", "qnt_qparams_destroy", "qnt_op_desc_destroy",
                    "qnt_calibrator_destroy"):
        getattr(lib, name).restype = C.c_int32

F32, I32, I8, U8, I16, U16, I4, U4, NF4 = 1, 2, 3, 4, 5, 6, 7, 8, 9
PER_TENSOR, PER_AXIS, PER_BLOCK = 1, 2, 3
SYM, AFF = 1, 2
RANGES = {I8: (-128, 127), U8: (0, 255), I16: (-32768, 32767), U16: (0, 65535), I4: (-8, 7),
          U4: (0, 15)}
BITS = {I8: 8, U8: 8, I16: 16, U16: 16, I4: 4, U4: 4, NF4: 4}
NP = {I8: np.int8, U8: np.uint8, I16: np.int16, U16: np.uint16}

failures = 0
passed = 0


def ok(call):
    if call != 0:
        raise RuntimeError(lib.qnt_last_error_message().decode())


def check(cond, what):
    global failures, passed
    if cond:
        passed += 1
    else:
        failures += 1
        print("FAIL:", what)


def cuda_devices():
    ctx = P()
    ok(lib.qnt_context_create(C.byref(ctx)))
    n = C.c_int32()
    ok(lib.qnt_context_cuda_device_count(ctx, C.byref(n)))
    return n.value


# With a CUDA device, every op of the corpus that has a device kernel runs a second time on
# device copies of its tensors, and must give the host's bytes (the conformance corpus through
# device tensors). Without one this is skipped.
GPU = cuda_devices() > 0
device_runs = 0


def tensor_bytes(t):
    nb = C.c_size_t()
    ok(lib.qnt_tensor_byte_size(t, C.byref(nb)))
    out = np.zeros(nb.value, np.uint8)
    ok(lib.qnt_tensor_copy_to(t, out.ctypes.data, nb.value))
    return out


def device_copy(t, poison=False):
    d, r = C.c_int32(), C.c_size_t()
    ok(lib.qnt_tensor_dtype(t, C.byref(d)))
    ok(lib.qnt_tensor_rank(t, C.byref(r)))
    shape = (C.c_int64 * 8)()
    ok(lib.qnt_tensor_shape(t, shape, 8))
    qp = P()
    ok(lib.qnt_tensor_qparams(t, C.byref(qp)))
    out = P()
    ok(lib.qnt_tensor_create_on_device(d.value, shape, r.value, qp, 2, 0, C.byref(out)))
    lib.qnt_qparams_destroy(qp)
    if poison:  # an output: filled with a pattern, so that a kernel that writes nothing fails
        nb = C.c_size_t()
        ok(lib.qnt_tensor_byte_size(out, C.byref(nb)))
        junk = np.full(max(1, nb.value), 0xA5, np.uint8)
        ok(lib.qnt_tensor_copy_from(out, junk.ctypes.data, nb.value))
    else:
        ok(lib.qnt_tensor_copy(None, t, out))
    return out


def also_on_device(name, op, inputs, output):
    """After op(None, *inputs, output) ran on the host: the same on device copies, same bytes."""
    global device_runs
    if not GPU:
        return
    ins = [None if t is None else device_copy(t) for t in inputs]
    out = device_copy(output, poison=True)
    ok(op(None, *ins, out))
    check(np.array_equal(tensor_bytes(out), tensor_bytes(output)), f"{name} on the device")
    device_runs += 1
    for t in ins + [out]:
        if t is not None:
            lib.qnt_tensor_destroy(t)


def f32_tensor(x):
    x = np.ascontiguousarray(x, dtype=np.float32)
    shape = (C.c_int64 * max(1, x.ndim))(*x.shape)
    t = P()
    ok(lib.qnt_tensor_create_from_data(F32, shape, x.ndim, None, x.ctypes.data, x.nbytes,
                                       C.byref(t)))
    return t


def read_qparams(qp):
    n = C.c_size_t()
    ok(lib.qnt_qparams_scale_count(qp, C.byref(n)))
    s = np.zeros(n.value, np.float32)
    z = np.zeros(n.value, np.int32)
    ok(lib.qnt_qparams_scales(qp, s.ctypes.data, n.value))
    ok(lib.qnt_qparams_zero_points(qp, z.ctypes.data, n.value))
    return s, z


def qnt_minmax(x, dtype, scheme, axis=None, qrange=None):
    t = f32_tensor(x)
    qp = P()
    g = PER_TENSOR if axis is None else PER_AXIS
    if qrange is None:
        ok(lib.qnt_calibrate_minmax(None, t, dtype, scheme, g, axis or 0, 0, C.byref(qp)))
    else:
        ok(lib.qnt_calibrate_minmax_range(None, t, dtype, scheme, g, axis or 0, 0, qrange[0], qrange[1],
                                          C.byref(qp)))
    s, z = read_qparams(qp)
    lib.qnt_qparams_destroy(qp)
    lib.qnt_tensor_destroy(t)
    return s, z


def torch_minmax(x, dtype, scheme, axis=None, **kw):
    tdtype = {I8: torch.qint8, U8: torch.quint8, I32: torch.qint32}[dtype]
    if axis is None:
        qs = torch.per_tensor_symmetric if scheme == SYM else torch.per_tensor_affine
        obs = MinMaxObserver(dtype=tdtype, qscheme=qs, **kw)
    else:
        qs = torch.per_channel_symmetric if scheme == SYM else torch.per_channel_affine
        obs = PerChannelMinMaxObserver(ch_axis=axis, dtype=tdtype, qscheme=qs, **kw)
    obs(torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)))
    s, z = obs.calculate_qparams()
    return s.numpy().astype(np.float32).reshape(-1), z.numpy().astype(np.int32).reshape(-1)


def check_minmax(rng):
    shapes = [(1,), (7,), (33, 5), (4, 17, 3), (255,)]
    gens = [lambda n: rng.standard_normal(n), lambda n: rng.uniform(0.1, 3.0, n),
            lambda n: -rng.uniform(0.1, 3.0, n), lambda n: rng.standard_t(2, n) * 10,
            lambda n: rng.uniform(-1e-6, 1e-6, n), lambda n: np.zeros(n)]
    for shape in shapes:
        for gen in gens:
            x = gen(int(np.prod(shape))).astype(np.float32).reshape(shape)
            for dtype in (I8, U8, I32):
                for scheme in (SYM, AFF):
                    axes = [None] + (list(range(x.ndim)) if x.ndim > 1 else [])
                    for axis in axes:
                        want = torch_minmax(x, dtype, scheme, axis)
                        got = qnt_minmax(x, dtype, scheme, axis)
                        what = f"minmax dtype={dtype} scheme={scheme} axis={axis} shape={shape}"
                        check(np.array_equal(got[0].view(np.int32), want[0].view(np.int32)),
                              f"{what}: scale {got[0]} vs torch {want[0]}")
                        # For i32 affine, PyTorch's zero point overflows its int32 arithmetic
                        # (round(min / scale) is near -2^32); only the scale is comparable there.
                        if dtype != I32 or scheme == SYM:
                            check(np.array_equal(got[1], want[1]),
                                  f"{what}: zero point {got[1]} vs torch {want[1]}")
                    # PyTorch's reduce_range is the range [0, 127] / [-64, 63]; for unsigned
                    # symmetric it keeps zero point 128 outside that range, which qnt does not copy.
                    if dtype == I32:
                        continue
                    if not (dtype == U8 and scheme == SYM):
                        r = (0, 127) if dtype == U8 else (-64, 63)
                        want = torch_minmax(x, dtype, scheme, None, reduce_range=True)
                        got = qnt_minmax(x, dtype, scheme, None, r)
                        check(np.array_equal(got[0].view(np.int32), want[0].view(np.int32)) and
                              np.array_equal(got[1], want[1]),
                              f"reduce_range dtype={dtype} scheme={scheme}: {got} vs {want}")
                    r = (0, 100) if dtype == U8 else (-50, 60)
                    want = torch_minmax(x, dtype, scheme, None, quant_min=r[0], quant_max=r[1])
                    got = qnt_minmax(x, dtype, scheme, None, r)
                    check(np.array_equal(got[0].view(np.int32), want[0].view(np.int32)) and
                          np.array_equal(got[1], want[1]),
                          f"custom range {r} dtype={dtype} scheme={scheme}: {got} vs {want}")


def params_for(x, gran, axis, block, n_groups):
    """Expands per-group arrays to the full shape of x, as ONNX's reshape_input does."""
    def expand(p):
        if gran == PER_TENSOR:
            return np.full(x.shape, p[0], dtype=p.dtype)
        a = axis % x.ndim
        if gran == PER_AXIS:
            shp = [1] * x.ndim
            shp[a] = x.shape[a]
            return np.broadcast_to(p.reshape(shp), x.shape)
        gshape = list(x.shape)
        gshape[a] = -(-x.shape[a] // block)
        full = np.repeat(p.reshape(gshape), block, axis=a)
        return np.take(full, np.arange(x.shape[a]), axis=a)
    return expand


def pack(q, bits):
    q = q.reshape(-1).astype(np.int64) & ((1 << bits) - 1)
    per = 8 // bits
    pad = (-len(q)) % per
    q = np.concatenate([q, np.zeros(pad, np.int64)]).reshape(-1, per)
    out = np.zeros(len(q), np.int64)
    for k in range(per):
        out |= q[:, k] << (k * bits)
    return out.astype(np.uint8)


def qnt_roundtrip(x, dtype, gran, axis, block, scales, zps):
    qp = P()
    s = np.ascontiguousarray(scales, np.float32)
    z = None if zps is None else np.ascontiguousarray(zps, np.int32)
    zp = None if z is None else z.ctypes.data
    if gran == PER_TENSOR:
        ok(lib.qnt_qparams_create_per_tensor(dtype, float(s[0]), int(0 if z is None else z[0]),
                                             C.byref(qp)))
    elif gran == PER_AXIS:
        ok(lib.qnt_qparams_create_per_axis(dtype, axis, len(s), s.ctypes.data, zp, C.byref(qp)))
    else:
        ok(lib.qnt_qparams_create_per_block(dtype, axis, block, len(s), s.ctypes.data, zp,
                                            C.byref(qp)))
    tx = f32_tensor(x)
    shape = (C.c_int64 * x.ndim)(*x.shape)
    tq, ty = P(), P()
    ok(lib.qnt_tensor_create(dtype, shape, x.ndim, qp, C.byref(tq)))
    ok(lib.qnt_tensor_create(F32, shape, x.ndim, None, C.byref(ty)))
    ok(lib.qnt_quantize(None, tx, tq))
    ok(lib.qnt_dequantize(None, tq, ty))
    also_on_device("quantize", lib.qnt_quantize, [tx], tq)
    also_on_device("dequantize", lib.qnt_dequantize, [tq], ty)
    nb = C.c_size_t()
    ok(lib.qnt_tensor_byte_size(tq, C.byref(nb)))
    qbytes = np.zeros(nb.value, np.uint8)
    ok(lib.qnt_tensor_copy_to(tq, qbytes.ctypes.data, nb.value))
    y = np.zeros(x.shape, np.float32)
    ok(lib.qnt_tensor_copy_to(ty, y.ctypes.data, y.nbytes))
    for t in (tx, tq, ty):
        lib.qnt_tensor_destroy(t)
    lib.qnt_qparams_destroy(qp)
    return qbytes, y


def check_onnx_formulas(rng):
    for shape in [(1,), (7,), (3, 33), (2, 5, 17), (1023,)]:
        n = int(np.prod(shape))
        for dtype in (I8, U8, I16, U16, I4, U4):
            lo, hi = RANGES[dtype]
            for gran in (PER_TENSOR, PER_AXIS, PER_BLOCK):
                axis = -1 if gran == PER_BLOCK else (1 if len(shape) > 1 else 0)
                block = 4
                a = axis % len(shape)
                if gran == PER_TENSOR:
                    groups = 1
                elif gran == PER_AXIS:
                    groups = shape[a]
                else:
                    groups = n // shape[a] * -(-shape[a] // block)
                scales = rng.uniform(0.01, 2.0, groups).astype(np.float32)
                zps = rng.integers(max(lo, -300), min(hi, 300) + 1, groups).astype(np.int32)
                expand = params_for(np.zeros(shape), gran, axis, block, groups)
                s_full, z_full = expand(scales), expand(zps)
                x = (rng.standard_normal(n).astype(np.float32).reshape(shape) *
                     s_full * np.float32(min(hi - lo, 600) / 4))
                # exact ties, k + 0.5 steps, where the rounding rule shows
                ties = ((rng.integers(-40, 40, n).astype(np.float32) + np.float32(0.5))
                        .reshape(shape) * s_full).astype(np.float32)
                pick = rng.random(shape) < 0.3
                x = np.where(pick, ties, x).astype(np.float32)
                with np.errstate(over="ignore", invalid="ignore"):
                    ref_q = np.clip(np.rint(x / s_full).astype(np.int64) + z_full, lo, hi)
                ref_y = (ref_q.astype(np.float32) - z_full.astype(np.float32)) * s_full
                qbytes, y = qnt_roundtrip(x, dtype, gran, axis, block, scales, zps)
                if BITS[dtype] >= 8:
                    got_q = qbytes.view(NP[dtype]).reshape(shape).astype(np.int64)
                    same = np.array_equal(got_q, ref_q)
                else:
                    same = np.array_equal(qbytes, pack(ref_q, 4))
                what = f"ONNX dtype={dtype} gran={gran} shape={shape}"
                check(same, f"{what}: quantized values differ")
                check(np.array_equal(y.view(np.int32), ref_y.astype(np.float32).view(np.int32)),
                      f"{what}: dequantized values differ")


BNB_THRESHOLDS = np.array([
    -0.8480964004993439, -0.6106329262256622, -0.4599952697753906, -0.33967943489551544,
    -0.23460740596055984, -0.13791173323988914, -0.045525018125772476, 0.03979014977812767,
    0.1202552504837513, 0.2035212516784668, 0.2920137718319893, 0.3893125355243683,
    0.5016634166240692, 0.6427869200706482, 0.8614784181118011], dtype=np.float32)


def check_nf4(rng):
    for shape, block in [((64,), 64), ((4, 128), 64), ((3, 96), 32), ((5, 70), 64)]:
        x = rng.standard_normal(shape).astype(np.float32)
        t = f32_tensor(x)
        qp = P()
        ok(lib.qnt_calibrate_codebook(None, t, NF4, PER_BLOCK, -1, block, C.byref(qp)))
        s, _ = read_qparams(qp)
        lib.qnt_qparams_destroy(qp)
        lib.qnt_tensor_destroy(t)
        nb = -(-shape[-1] // block)
        xs = x.reshape(-1, shape[-1])
        want_s = np.array([np.abs(row[b * block:(b + 1) * block]).max()
                           for row in xs for b in range(nb)], np.float32)
        check(np.array_equal(s, want_s), f"NF4 absmax shape={shape}")
        expand = params_for(x, PER_BLOCK, -1, block, len(s))
        s_full = expand(s)
        n = x * (np.float32(1.0) / s_full)
        codes = (n[..., None] > BNB_THRESHOLDS).sum(-1)
        qbytes, _ = qnt_roundtrip(x, NF4, PER_BLOCK, -1, block, s, None)
        check(np.array_equal(qbytes, pack(codes, 4)), f"NF4 codes shape={shape}")


def qtensor(arr, dtype, scale=None, zp=None, axis=None):
    """An i8/u8/i32 tensor over arr's bytes, with per-tensor or per-axis qparams."""
    arr = np.ascontiguousarray(arr)
    qp = P()
    if scale is not None:
        if axis is None:
            ok(lib.qnt_qparams_create_per_tensor(dtype, float(scale), int(zp), C.byref(qp)))
        else:
            s = np.ascontiguousarray(scale, np.float32)
            z = np.ascontiguousarray(zp, np.int32)
            ok(lib.qnt_qparams_create_per_axis(dtype, axis, len(s), s.ctypes.data, z.ctypes.data,
                                               C.byref(qp)))
    shape = (C.c_int64 * arr.ndim)(*arr.shape)
    t = P()
    ok(lib.qnt_tensor_create_from_data(dtype, shape, arr.ndim, qp if scale is not None else None,
                                       arr.ctypes.data, arr.nbytes, C.byref(t)))
    if scale is not None:
        lib.qnt_qparams_destroy(qp)
    return t


def out_tensor(shape, dtype, npdtype, scale=None, zp=None):
    t = qtensor(np.zeros(shape, npdtype), dtype, scale, zp)
    return t


def read(t, shape, npdtype):
    out = np.zeros(shape, npdtype)
    ok(lib.qnt_tensor_copy_to(t, out.ctypes.data, out.nbytes))
    return out


ONE_STEP = {}


def close(name, got, want):
    """Within one step everywhere; counts the bit-identical results."""
    d = np.abs(got.astype(np.int64) - want.astype(np.int64))
    same, total = int((d == 0).sum()), d.size
    e = ONE_STEP.setdefault(name, [0, 0, 0])
    e[0] += same
    e[1] += total
    e[2] = max(e[2], int(d.max()) if d.size else 0)
    check(d.max() <= 1 if d.size else True, f"{name}: a result is {int(d.max())} steps away")


def check_onnx_qlinearmatmul(rng):
    for (M, K, N) in [(1, 1, 1), (3, 17, 5), (17, 255, 3), (8, 64, 33)]:
        a = rng.integers(0, 256, (M, K)).astype(np.uint8)
        b = rng.integers(-128, 128, (K, N)).astype(np.int8)
        sa, sb, sy = np.float32(rng.uniform(0.001, 0.05)), np.float32(rng.uniform(0.001, 0.05)), np.float32(rng.uniform(0.01, 0.5))
        za, zb, zy = int(rng.integers(0, 256)), int(rng.integers(-128, 128)), int(rng.integers(0, 256))
        ta, tb = qtensor(a, U8, sa, za), qtensor(b, I8, sb, zb)
        ty = out_tensor((M, N), U8, np.uint8, sy, zy)
        ok(lib.qnt_qmatmul(None, ta, tb, None, ty))
        also_on_device("QLinearMatMul", lib.qnt_qmatmul, [ta, tb, None], ty)
        got = read(ty, (M, N), np.uint8)
        acc = (a.astype(np.int32) - za) @ (b.astype(np.int32) - zb)
        want = np.clip(np.rint(acc * (sa * sb / sy)) + zy, 0, 255)  # the ONNX reference op
        close("ONNX QLinearMatMul formula", got, want)
        for t in (ta, tb, ty):
            lib.qnt_tensor_destroy(t)


def check_torch_ops(rng):
    import torch.ao.nn.quantized.functional as qF
    torch.manual_seed(0)
    # linear: u8 activations, i8 weights per output channel (symmetric), no bias. The
    # activations use PyTorch's reduce_range (7 bits, [0, 127]), as its fbgemm qconfig does:
    # on CPUs without VNNI, FBGEMM multiplies with vpmaddubsw, whose int16 pair sums saturate
    # for full-range u8 x i8 (255 * 127 * 2 > 32767), so PyTorch's own result is then wrong
    # (seen here on an AVX2-only Zen 3: up to 51 steps). qnt is exact for every input; the ONNX
    # formula check above covers the full range.
    for (M, K, N) in [(1, 16, 8), (5, 64, 17), (16, 255, 32)]:
        sx, zx = 0.05, int(rng.integers(0, 128))
        xq = torch.from_numpy(rng.integers(0, 128, (M, K)).astype(np.uint8))
        qx = torch._make_per_tensor_quantized_tensor(xq, sx, zx)
        sw = torch.rand(N) * 0.01 + 0.001
        qw = torch.quantize_per_channel(torch.randn(N, K) * 0.1, sw, torch.zeros(N, dtype=torch.long), 0, torch.qint8)
        sy, zy = 0.07, int(rng.integers(0, 256))
        want = qF.linear(qx, qw, None, sy, zy).int_repr().numpy()
        xi = qx.int_repr().numpy()
        wt = np.ascontiguousarray(qw.int_repr().numpy().T)  # [K, N]
        ta = qtensor(xi, U8, sx, zx)
        tb = qtensor(wt, I8, qw.q_per_channel_scales().numpy().astype(np.float32), np.zeros(N, np.int32), axis=1)
        ty = out_tensor((M, N), U8, np.uint8, sy, zy)
        ok(lib.qnt_qmatmul(None, ta, tb, None, ty))
        also_on_device("PyTorch quantized linear", lib.qnt_qmatmul, [ta, tb, None], ty)
        close("PyTorch quantized linear", read(ty, (M, N), np.uint8), want)
        for t in (ta, tb, ty):
            lib.qnt_tensor_destroy(t)
    # conv2d: per output channel weights, strides, pads, dilations, groups
    for (Nb, Cin, H, W, Mo, k, stride, pad, dil, groups) in [(1, 3, 8, 8, 4, 3, 1, 1, 1, 1),
                                                            (2, 4, 9, 7, 8, 3, 2, 1, 1, 2),
                                                            (1, 8, 6, 6, 8, 3, 1, 2, 2, 8)]:
        # 7-bit activations (reduce_range), for the reason given at the linear check.
        xq = torch.from_numpy(rng.integers(0, 128, (Nb, Cin, H, W)).astype(np.uint8))
        qx = torch._make_per_tensor_quantized_tensor(xq, 0.04, 120)
        sw = torch.rand(Mo) * 0.01 + 0.002
        qw = torch.quantize_per_channel(torch.randn(Mo, Cin // groups, k, k) * 0.2, sw, torch.zeros(Mo, dtype=torch.long), 0, torch.qint8)
        sy, zy = 0.05, 110
        want = qF.conv2d(qx, qw, None, stride=stride, padding=pad, dilation=dil, groups=groups, scale=sy, zero_point=zy).int_repr().numpy()
        tx = qtensor(qx.int_repr().numpy(), U8, 0.04, 120)
        tw = qtensor(qw.int_repr().numpy(), I8, qw.q_per_channel_scales().numpy().astype(np.float32), np.zeros(Mo, np.int32), axis=0)
        ty = out_tensor(want.shape, U8, np.uint8, sy, zy)
        d = P()
        ok(lib.qnt_op_desc_create(C.byref(d)))
        for key, value in ((1, stride), (2, stride), (3, pad), (4, pad), (5, pad), (6, pad),
                           (7, dil), (8, dil), (9, groups)):  # QNT_OP_STRIDE_H ... QNT_OP_GROUPS
            ok(lib.qnt_op_desc_set(d, key, value))
        ok(lib.qnt_qconv2d(None, tx, tw, None, d, ty))
        close("PyTorch quantized conv2d", read(ty, want.shape, np.uint8), want)
        lib.qnt_op_desc_destroy(d)
        for t in (tx, tw, ty):
            lib.qnt_tensor_destroy(t)
    # conv2d with an f32 bias (added in float before the requantization, as PyTorch and oneDNN
    # do) and the fused ReLU, in both activation layouts (NHWC is the same values transposed).
    for (Nb, Cin, H, W, Mo, k, stride, pad, dil, groups) in [(1, 3, 8, 8, 4, 3, 1, 1, 1, 1),
                                                            (2, 4, 9, 7, 8, 3, 2, 1, 1, 2),
                                                            (1, 16, 10, 10, 32, 3, 1, 1, 1, 1)]:
        xq = torch.from_numpy(rng.integers(0, 128, (Nb, Cin, H, W)).astype(np.uint8))
        qx = torch._make_per_tensor_quantized_tensor(xq, 0.04, 120)
        sw = torch.rand(Mo) * 0.01 + 0.002
        qw = torch.quantize_per_channel(torch.randn(Mo, Cin // groups, k, k) * 0.2, sw, torch.zeros(Mo, dtype=torch.long), 0, torch.qint8)
        bias = torch.randn(Mo)
        sy, zy = 0.05, 110
        for relu in (0, 1):
            want = qF.conv2d(qx, qw, bias, stride=stride, padding=pad, dilation=dil, groups=groups, scale=sy, zero_point=zy)
            want = (torch.relu(want) if relu else want).int_repr().numpy()
            for nhwc in (0, 1):
                xi = qx.int_repr().numpy()
                tx = qtensor(np.ascontiguousarray(xi.transpose(0, 2, 3, 1)) if nhwc else xi, U8, 0.04, 120)
                tw = qtensor(qw.int_repr().numpy(), I8, qw.q_per_channel_scales().numpy().astype(np.float32), np.zeros(Mo, np.int32), axis=0)
                tb = f32_tensor(bias.numpy().astype(np.float32))
                yshape = (want.shape[0], want.shape[2], want.shape[3], want.shape[1]) if nhwc else want.shape
                ty = out_tensor(yshape, U8, np.uint8, sy, zy)
                d = P()
                ok(lib.qnt_op_desc_create(C.byref(d)))
                for key, value in ((1, stride), (2, stride), (3, pad), (4, pad), (5, pad), (6, pad),
                                   (7, dil), (8, dil), (9, groups), (10, relu), (13, nhwc)):
                    ok(lib.qnt_op_desc_set(d, key, value))  # ... QNT_OP_FUSE_RELU, QNT_OP_LAYOUT
                ok(lib.qnt_qconv2d(None, tx, tw, tb, d, ty))
                got = read(ty, yshape, np.uint8)
                if nhwc:
                    got = np.ascontiguousarray(got.transpose(0, 3, 1, 2))
                close("PyTorch quantized conv2d, f32 bias" + (", relu" if relu else ""), got, want)
                lib.qnt_op_desc_destroy(d)
                for t in (tx, tw, tb, ty):
                    lib.qnt_tensor_destroy(t)
    # add (and add_relu) and relu
    for n in (1, 7, 1000):
        qa = torch.quantize_per_tensor(torch.randn(n), 0.03, 130, torch.quint8)
        qb = torch.quantize_per_tensor(torch.randn(n), 0.05, 100, torch.quint8)
        ta, tb = qtensor(qa.int_repr().numpy(), U8, 0.03, 130), qtensor(qb.int_repr().numpy(), U8, 0.05, 100)
        for relu in (0, 1):
            op = torch.ops.quantized.add_relu if relu else torch.ops.quantized.add
            want = op(qa, qb, 0.07, 90).int_repr().numpy()
            ty = out_tensor((n,), U8, np.uint8, 0.07, 90)
            d = P()
            ok(lib.qnt_op_desc_create(C.byref(d)))
            ok(lib.qnt_op_desc_set(d, 10, relu))  # QNT_OP_FUSE_RELU
            ok(lib.qnt_qadd(None, ta, tb, d, ty))
            lib.qnt_op_desc_destroy(d)
            close("PyTorch quantized add" + ("_relu" if relu else ""), read(ty, (n,), np.uint8), want)
            lib.qnt_tensor_destroy(ty)
        want = torch.relu(qa).int_repr().numpy()
        ty = out_tensor((n,), U8, np.uint8, 0.03, 130)
        ok(lib.qnt_qrelu(None, ta, ty))
        got = read(ty, (n,), np.uint8)
        check(np.array_equal(got, want), "PyTorch quantized relu differs")
        for t in (ta, tb, ty):
            lib.qnt_tensor_destroy(t)


def qnt_calibrate(batches, method, dtype, scheme, axis=None, averaging=None):
    c = P()
    ok(lib.qnt_calibrator_create(method, dtype, scheme, PER_TENSOR if axis is None else PER_AXIS,
                                 axis or 0, C.byref(c)))
    if averaging is not None:
        ok(lib.qnt_calibrator_set_option(c, 1, averaging))
    for b in batches:
        t = f32_tensor(b)
        ok(lib.qnt_calibrator_observe(None, c, t))
        lib.qnt_tensor_destroy(t)
    qp = P()
    ok(lib.qnt_calibrator_compute(None, c, C.byref(qp)))
    s, z = read_qparams(qp)
    lib.qnt_qparams_destroy(qp)
    lib.qnt_calibrator_destroy(c)
    return s, z


def check_moving_average(rng):
    from torch.ao.quantization.observer import (MovingAverageMinMaxObserver,
                                                MovingAveragePerChannelMinMaxObserver)
    for dtype, tdtype in ((I8, torch.qint8), (U8, torch.quint8)):
        for scheme in (SYM, AFF):
            batches = [(rng.standard_normal((4, 33)) * (1 + i)).astype(np.float32) for i in range(6)]
            qs = torch.per_tensor_symmetric if scheme == SYM else torch.per_tensor_affine
            obs = MovingAverageMinMaxObserver(averaging_constant=0.1, dtype=tdtype, qscheme=qs)
            qc = torch.per_channel_symmetric if scheme == SYM else torch.per_channel_affine
            pobs = MovingAveragePerChannelMinMaxObserver(averaging_constant=0.1, ch_axis=1,
                                                          dtype=tdtype, qscheme=qc)
            for b in batches:
                obs(torch.from_numpy(b))
                pobs(torch.from_numpy(b))
            for o, axis in ((obs, None), (pobs, 1)):
                ws, wz = o.calculate_qparams()
                gs, gz = qnt_calibrate(batches, 2, dtype, scheme, axis, 0.1)
                check(np.array_equal(gs.view(np.int32), ws.numpy().astype(np.float32).view(np.int32))
                      and np.array_equal(gz, wz.numpy().astype(np.int32)),
                      f"moving average dtype={dtype} scheme={scheme} axis={axis}: {gs} {gz} vs {ws} {wz}")


def sqnr(x, s, z, lo, hi):
    q = np.clip(np.rint(x / np.float32(s)) + z, lo, hi)
    e = x.astype(np.float64) - (q - z) * np.float64(np.float32(s))
    return 10 * np.log10((x.astype(np.float64) ** 2).sum() / (e ** 2).sum())


HISTOGRAM_SQNR = []


def check_histogram_sqnr(rng):
    """On heavy-tailed data, the best of entropy / MSE / adaptive against PyTorch's
    HistogramObserver on the same batches: SQNR on all the data, in dB."""
    from torch.ao.quantization.observer import HistogramObserver
    gens = {
        "Laplace": lambda n: rng.laplace(0, 1, n),
        "Laplace+outliers": lambda n: np.where(rng.random(n) < 1e-3, 30, 1) * rng.laplace(0, 1, n),
        "Student-t(3)+outliers": lambda n: np.where(rng.random(n) < 1e-3, 20, 1) * rng.standard_t(3, n),
    }
    for name, gen in gens.items():
        batches = [gen(50000).astype(np.float32) for _ in range(4)]
        x = np.concatenate(batches)
        for dtype, tdtype, scheme, qs in ((U8, torch.quint8, AFF, torch.per_tensor_affine),
                                          (I8, torch.qint8, SYM, torch.per_tensor_symmetric)):
            lo, hi = RANGES[dtype]
            obs = HistogramObserver(dtype=tdtype, qscheme=qs)
            for b in batches:
                obs(torch.from_numpy(b))
            ts, tz = obs.calculate_qparams()
            theirs = sqnr(x, float(ts), int(tz), lo, hi)
            ours = {m: sqnr(x, *[v[0] for v in qnt_calibrate(batches, code, dtype, scheme)], lo, hi)
                    for m, code in (("entropy", 4), ("MSE", 5), ("adaptive", 6))}
            best = max(ours.values())
            HISTOGRAM_SQNR.append((name, dtype, theirs, ours))
            check(best >= theirs - 1e-9,
                  f"{name} dtype={dtype}: best of ours {best:.2f} dB < HistogramObserver {theirs:.2f} dB")


rng = np.random.default_rng(20261122)
check_minmax(rng)
check_moving_average(rng)
check_histogram_sqnr(rng)
check_onnx_formulas(rng)
check_nf4(rng)
check_onnx_qlinearmatmul(rng)
check_torch_ops(rng)
for name, (same, total, worst) in ONE_STEP.items():
    rest = "" if same == total else f", the others {worst} step away"
    print(f"  {name}: {same} of {total} results bit-identical{rest}")
for name, dtype, theirs, ours in HISTOGRAM_SQNR:
    mine = ", ".join(f"{m} {v:.2f}" for m, v in ours.items())
    print(f"  SQNR on {name}, {'u8 affine' if dtype == U8 else 'i8 symmetric'}: "
          f"PyTorch HistogramObserver {theirs:.2f} dB; qnt {mine} dB")
print(f"  through device tensors: {device_runs} runs" if GPU else
      "  through device tensors: skipped (no CUDA device)")
print(f"crosscheck: {passed} passed, {failures} failed")
sys.exit(1 if failures else 0)
