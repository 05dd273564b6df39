"""qnt from Python: the results are libqnt's (checked bit for bit against NumPy formulas of the
contract), arrays cross through DLPack without copies, errors are exceptions, handles close in
any order, and threads share contexts and prepared operators."""
import gc
import os
import pickle
import subprocess
import sys
import threading

import numpy as np
import pytest

import qnt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
rng = np.random.default_rng(1234)

try:
    import torch
except ImportError:  # the NumPy 2 environment has no PyTorch
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed here")


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == np.float32 else np.uint8).tobytes()


def ref_quantize(x, s, z, lo, hi):
    """The ONNX QuantizeLinear rule in float32: saturate(round_half_to_even(x / s) + z)."""
    q = np.round(x.astype(np.float32) / np.float32(s)).astype(np.float64) + z
    return np.clip(q, lo, hi).astype(np.int64)


def unpack4(raw, count, signed):
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.int64)
    q = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:count]
    return np.where(q >= 8, q - 16, q) if signed else q


@pytest.fixture(autouse=True)
def no_leaks():
    gc.collect()
    before = qnt.live_handles()
    yield
    gc.collect()
    assert qnt.live_handles() == before, "handles leaked"


# --- the library --------------------------------------------------------------------------------
def test_version_and_info():
    v = qnt.version_number()
    assert qnt.version() == f"{v // 10000}.{v // 100 % 100}.{v % 100}"
    assert qnt.abi_version() == qnt.capi.QNT_ABI_VERSION
    assert "version=" + qnt.version() in qnt.build_info()
    assert "SHAPE" in qnt.status_string(qnt.capi.QNT_ERR_SHAPE_MISMATCH)
    cb = qnt.nf4_codebook()
    assert len(cb) == 16 and cb[0] == -1.0 and cb[-1] == 1.0
    assert qnt.cpu_feature_name(qnt.capi.QNT_CPU_AVX2) == "avx2"
    assert qnt.DType.I4.bits == 4 and qnt.DType.I4.packed and qnt.DType.I8.range() == (-128, 127)
    assert str(qnt.int8) == "i8" and qnt.dtype("uint4") is qnt.uint4 and qnt.dtype(np.dtype("int8")) is qnt.int8


def test_context():
    with qnt.Context(threads=2, max_isa="reference") as ctx:
        assert ctx.threads == 2 and ctx.isa == qnt.Isa.REFERENCE
        assert ctx.kernels
        logical, _ = ctx.cpu_count
        assert logical >= 1
        assert ctx.cache_size(1) >= 0
        assert ctx.cuda_device_count >= 0
        if ctx.cuda_device_count == 0:
            with pytest.raises(qnt.NoDeviceError):
                ctx.set_cuda_stream(0)
        ctx.synchronize()
        assert isinstance(ctx.cpu_features, tuple)
    with pytest.raises(qnt.InvalidArgumentError, match="closed"):
        ctx.threads
    with pytest.raises(qnt.InvalidArgumentError):
        qnt.Context(threads=-3)


# --- quantize, dequantize, requantize ------------------------------------------------------------
@pytest.mark.parametrize("dt,lo,hi", [("int8", -128, 127), ("uint8", 0, 255), ("int16", -32768, 32767),
                                      ("uint16", 0, 65535)])
def test_quantize_per_tensor_is_the_onnx_rule(dt, lo, hi):
    x = (rng.standard_normal((7, 33)) * 3).astype(np.float32)
    x[0, :4] = [0.5, 1.5, -2.5, 1e9]  # ties and saturation
    z = 0 if lo < 0 else (lo + hi + 1) // 2
    qp = qnt.QParams.per_tensor(dt, 0.5, z)
    q = qnt.quantize(x, qp)
    assert q.dtype == qnt.dtype(dt) and q.shape == (7, 33) and q.qparams == qp
    codes = np.from_dlpack(q).astype(np.int64)
    assert np.array_equal(codes, ref_quantize(x, 0.5, z, lo, hi))
    y = np.from_dlpack(qnt.dequantize(q))
    want = ((codes - z).astype(np.float32) * np.float32(0.5)).astype(np.float32)
    assert bits(y) == bits(want)


def test_per_axis_and_per_block():
    x = rng.standard_normal((6, 64)).astype(np.float32)
    qa = qnt.calibrate_minmax(x, "int8", "symmetric", "per_axis", axis=0)
    assert qa.granularity == qnt.Granularity.PER_AXIS and len(qa) == 6 and qa.scheme == qnt.Scheme.SYMMETRIC
    s = np.asarray(qa.scales)
    q = np.from_dlpack(qnt.quantize(x, qa)).astype(np.int64)
    assert np.array_equal(q, ref_quantize(x, s[:, None], 0, -128, 127))
    qb = qnt.calibrate_minmax(x, "uint4", "affine", "per_block", axis=1, block_size=16)
    assert qb.block_size == 16 and qb.axis == 1 and len(qb) == 6 * 4 and qb.scheme == qnt.Scheme.AFFINE
    t = qnt.quantize(x, qb)
    sb = np.repeat(np.asarray(qb.scales).reshape(6, 4), 16, axis=1)
    zb = np.repeat(np.asarray(qb.zero_points).reshape(6, 4), 16, axis=1)
    codes = unpack4(t.tobytes(), x.size, False).reshape(6, 64)
    assert np.array_equal(codes, ref_quantize(x, sb, zb, 0, 15))
    y = np.from_dlpack(qnt.dequantize(t))
    assert bits(y) == bits((codes - zb).astype(np.float32) * sb.astype(np.float32))
    # made by hand, the same
    qb2 = qnt.QParams.per_block("uint4", 1, 16, np.asarray(qb.scales), np.asarray(qb.zero_points))
    assert qb2 == qb
    assert "per_block" in repr(qb2)


def test_requantize_and_codebooks():
    x = rng.standard_normal((4, 64)).astype(np.float32)
    q8 = qnt.quantize(x, qnt.QParams.per_tensor("int8", 0.02))
    q16 = qnt.requantize(q8, qnt.QParams.per_tensor("int16", 0.001))
    a = np.from_dlpack(q8).astype(np.int64)
    b = np.from_dlpack(q16).astype(np.int64)
    assert np.array_equal(b, np.clip(a * 20, -32768, 32767))  # 0.02 / 0.001 = 20 exactly in the rule
    nf = qnt.calibrate_codebook(x, "nf4", "per_block", axis=1, block_size=64)
    t = qnt.quantize(x, nf)
    cb = np.array(qnt.nf4_codebook(), dtype=np.float32)
    codes = unpack4(t.tobytes(), x.size, False).reshape(4, 64)
    y = np.from_dlpack(qnt.dequantize(t))
    assert bits(y) == bits(cb[codes] * np.asarray(nf.scales, dtype=np.float32)[:, None])
    assert np.from_dlpack(t).dtype == np.uint8  # NF4 leaves as its packed bytes
    # dequantize to bfloat16: the float32 result rounded to nearest even
    yb = qnt.dequantize(q8, dtype="bf16")
    assert yb.dtype == qnt.bfloat16 and yb.shape == q8.shape
    f = np.from_dlpack(qnt.dequantize(q8)).view(np.uint32).astype(np.uint64)
    rne = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)
    assert yb.tobytes() == rne.tobytes()


def test_log_codes_follow_the_log_domain_rule():
    # An independent oracle: k = round(-log2(|x| / scale)) in float64 (no float32 lies within
    # 1e-7 of a boundary 2^-(k + 1/2) in the log domain, far above float64's error there).
    edges = np.array([1.41421354, 1.41421366], dtype=np.float32)
    x = np.concatenate([rng.laplace(size=4000).astype(np.float32),
                        np.ldexp(edges[None, :], np.arange(-9, 3)[:, None]).ravel().astype(np.float32),
                        -np.ldexp(edges[None, :], np.arange(-9, 3)[:, None]).ravel().astype(np.float32),
                        np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=np.float32)])
    for name, bits_, lib_scale in (("log4", 4, 1.75), ("log8", 8, 0.3)):
        qp = qnt.QParams.per_tensor(name, lib_scale)
        assert qp.scheme == qnt.Scheme.LOG2
        t = qnt.quantize(x, qp)
        got = unpack4(t.tobytes(), x.size, False) if bits_ == 4 else np.frombuffer(t.tobytes(), np.uint8)
        M = (1 << (bits_ - 1)) - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            r = (np.abs(x) / np.float32(lib_scale)).astype(np.float64)
            k = np.floor(-np.log2(r) + 0.5)
        k = np.maximum(k, 0)
        mag = np.where(np.isnan(r) | (k > M - 1), 0, M - np.minimum(k, M - 1)).astype(np.int64)
        want = np.where((x < 0) & (mag != 0), mag | (1 << (bits_ - 1)), mag)
        assert np.array_equal(got.astype(np.int64), want), name
        y = np.from_dlpack(qnt.dequantize(t)).astype(np.float64)
        back = np.where(mag == 0, 0.0, np.float32(lib_scale) * np.ldexp(1.0, -(M - mag)))
        assert np.array_equal(y, np.where(want >> (bits_ - 1) == 1, -back, back)), name
    p2 = qnt.pow2_scales(qnt.QParams.per_tensor("int8", 0.3))
    assert list(p2.scales) == [0.5]
    # 20.2 / 0.25 rounds to 81 (error 0.05); 20.2 / 0.5 to 40 (error 0.2): the data picks 0.25.
    assert list(qnt.pow2_scales(qnt.QParams.per_tensor("int8", 0.3), np.full(4, 20.2, np.float32)).scales) == [0.25]


def test_recommender_chooses_by_measured_error():
    w = rng.laplace(size=(8, 256)).astype(np.float32)
    w[:, 3] *= 40  # an outlier input channel
    flat = rng.standard_normal((8, 256)).astype(np.float32)
    with qnt.Recommender(["i8", "i4.b32", "i4.b128", "q4_k"]) as rec:
        imp = np.ones(256, np.float32)
        rec.add_tensor("outlier", w, importance=imp)
        rec.add_tensor("flat", flat)
        uniform = sum(c.bytes for c in qnt.Recommender(["i4.b128"]).add_tensor("a", w).add_tensor("b", flat)
                      .run("min_sqnr", 0.0))
        assert uniform == 2 * (8 * 256 // 2 + 8 * 2 * 4)
        got = rec.run(qnt.Budget.BYTES, uniform)
        assert [c.name for c in got] == ["outlier", "flat"]
        assert sum(c.bytes for c in got) <= uniform
        # The byte budget maximises the worst tensor: it is at least int4 b128's worst.
        worst_uniform = min(qnt.error_report(x, qnt.calibrate_minmax(x, "int4", "symmetric", "per_block", axis=1,
                                                                     block_size=128)).sqnr_db for x in (w, flat))
        assert min(c.sqnr_db for c in got) >= worst_uniform - 1e-9
        assert "runner-up" in rec.report and "outlier" in rec.report
        # A minimum SQNR: every tensor keeps it, each in its cheapest such format.
        for c in rec.run("min_sqnr", 25.0):
            assert c.sqnr_db >= 25.0
        with pytest.raises(qnt.InvalidArgumentError):
            rec.run("bytes", 10)
        with pytest.raises(qnt.ShapeMismatchError):
            qnt.Recommender(["i8"]).add_tensor("x", w, importance=np.ones(3))


def test_tuning_keeps_the_bits():
    x = rng.standard_normal((5, 256)).astype(np.float32)
    w = rng.standard_normal((96, 256)).astype(np.float32)
    qw = qnt.quantize(w, qnt.calibrate_minmax(w, "int4", "symmetric", "per_block", axis=1, block_size=32))
    want = np.from_dlpack(qnt.linear_weight_only(x, qw))
    ctx = qnt.Context(tuning="measure")
    assert ctx.tuning == qnt.Tuning.MEASURE
    layer = qnt.PreparedLinearWeightOnly(qw, ctx=ctx)
    for rows in (1, 3, 5):
        got = np.from_dlpack(layer(x[:rows], ctx=ctx))
        assert bits(got) == bits(want[:rows])
    table = qnt.tuning_export()
    assert table.startswith("qnt-tuning 1\n")
    qnt.tuning_clear()
    assert qnt.tuning_export() == "qnt-tuning 1\n"
    qnt.tuning_import(table)
    assert qnt.tuning_export() == table
    with pytest.raises(qnt.CorruptDataError):
        qnt.tuning_import("qnt-tuning 9\n")
    qnt.tuning_clear()


def test_tensor_constructors_and_copies():
    raw = bytes(range(12))
    t = qnt.Tensor.from_bytes(raw, (3, 4), "uint8")
    assert t.tobytes() == raw and t.nbytes == 12 and t.size == 12 and len(t) == 3 and t.ndim == 2
    buf = bytearray(16)
    w = qnt.Tensor.wrap(buf, (4,), "float32")
    w.copy_from(np.arange(4, dtype=np.float32))
    assert np.frombuffer(buf, np.float32).tolist() == [0, 1, 2, 3]  # the caller's memory
    c = w.copy()
    assert c.data_ptr != w.data_ptr and c.tobytes() == bytes(buf)
    assert qnt.Tensor.empty((2, 2), "int16").tobytes() == bytes(8)
    assert t.device == ("cpu", 0) and not t.read_only
    assert "shape=[3, 4]" in repr(t)
    with pytest.raises(qnt.BufferTooSmallError):
        t.copy_from(b"short")
    with pytest.raises(qnt.InvalidArgumentError):
        qnt.Tensor.wrap(b"read-only", (9,), "uint8")
    ctx = qnt.Context()
    if ctx.cuda_device_count == 0:
        with pytest.raises(qnt.NoDeviceError):
            qnt.Tensor.empty_on_device((4,), "float32")
        with pytest.raises(qnt.NoDeviceError):
            qnt.Tensor.wrap_device(0x1000, 16, (4,), "float32")
    else:  # pragma: no cover (a GPU machine)
        d = t.copy(("cuda", 0))
        assert d.device == ("cuda", 0) and d.tobytes() == raw


def test_error_report():
    x = rng.standard_normal(1000).astype(np.float32)
    qp = qnt.QParams.per_tensor("int8", 0.01)
    r = qnt.error_report(x, qp)
    y = np.from_dlpack(qnt.dequantize(qnt.quantize(x, qp))).astype(np.float64)
    err = x.astype(np.float64) - y
    assert r.count == 1000
    assert r.mse == pytest.approx(np.mean(err ** 2), rel=1e-12)
    assert r.max_abs_error == pytest.approx(np.max(np.abs(err)), rel=1e-12)
    assert r.saturated_fraction == pytest.approx(np.mean(np.abs(x) / 0.01 > 127.5), abs=2e-3)


# --- operators ----------------------------------------------------------------------------------
def test_qmatmul_int32_is_the_integer_product():
    a = rng.integers(0, 256, (5, 40)).astype(np.uint8)
    b = rng.integers(-128, 128, (40, 7)).astype(np.int8)
    y = qnt.qmatmul(a, b)
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert np.array_equal(np.from_dlpack(y), want.astype(np.int32))
    pm = qnt.PreparedMatmul(qnt.asarray(b))
    assert np.array_equal(np.from_dlpack(pm(a)), want.astype(np.int32))
    assert pm.kind == qnt.capi.QNT_PREPARED_MATMUL and pm.packed_size > 0
    za = qnt.QParams.per_tensor("uint8", 0.1, 3)
    yz = qnt.qmatmul(qnt.asarray(a, qparams=za), b)
    assert np.array_equal(np.from_dlpack(yz), ((a.astype(np.int64) - 3) @ b.astype(np.int64)).astype(np.int32))


def test_dynamic_linear_matches_its_formula_and_prepared_form():
    x = rng.standard_normal((9, 48)).astype(np.float32)
    wf = rng.standard_normal((16, 48)).astype(np.float32)
    w = qnt.quantize(wf, qnt.calibrate_minmax(wf, "int8", "symmetric", "per_axis"))
    bias = rng.standard_normal(16).astype(np.float32)
    y = np.from_dlpack(qnt.linear_dynamic(x, w, bias))
    xq = qnt.dynamic_quantize_linear(x)
    sx, zx = xq.qparams.scales[0], xq.qparams.zero_points[0]
    acc = (np.from_dlpack(xq).astype(np.int64) - zx) @ np.from_dlpack(w).astype(np.int64).T
    sw = np.asarray(w.qparams.scales, dtype=np.float32)
    want = acc.astype(np.float32) * (np.float32(sx) * sw) + bias
    assert bits(y) == bits(want.astype(np.float32))
    lin = qnt.PreparedLinearDynamic(w, bias, relu=True)
    assert bits(np.from_dlpack(lin(x))) == bits(np.maximum(want, 0).astype(np.float32))
    per_row = qnt.linear_dynamic(x, w, bias, act_quant="per_row")
    assert per_row.shape == (9, 16)


def test_static_linear_and_weight_only():
    x = rng.standard_normal((3, 64)).astype(np.float32)
    wf = rng.standard_normal((8, 64)).astype(np.float32)
    w8 = qnt.quantize(wf, qnt.calibrate_minmax(wf, "int8", "symmetric", "per_axis"))
    xqp = qnt.calibrate_minmax(x, "uint8", "affine")
    st = qnt.PreparedLinearStatic(w8, xqp)
    xq = qnt.quantize(x, xqp)
    acc = (np.from_dlpack(xq).astype(np.int64) - xqp.zero_points[0]) @ np.from_dlpack(w8).astype(np.int64).T
    want = acc.astype(np.float32) * (np.float32(xqp.scales[0]) * np.asarray(w8.qparams.scales, np.float32))
    assert bits(np.from_dlpack(st(xq))) == bits(want)
    assert bits(np.from_dlpack(st(x))) == bits(want)  # float input: quantized with x_qparams first
    w4 = qnt.quantize(wf, qnt.calibrate_minmax(wf, "int4", "symmetric", "per_block", axis=1, block_size=32))
    one = np.from_dlpack(qnt.linear_weight_only(x, w4))
    prep = qnt.PreparedLinearWeightOnly(w4)
    assert bits(np.from_dlpack(prep(x))) == bits(one)
    deq = np.from_dlpack(qnt.dequantize(w4)).astype(np.float64)
    assert np.allclose(one, x.astype(np.float64) @ deq.T, rtol=1e-5, atol=1e-4)
    w8a8 = qnt.PreparedLinearWeightOnly(w4, mode="int8_act")
    assert np.allclose(np.from_dlpack(w8a8(x)), one, rtol=0.05, atol=0.2)
    blk = qnt.PreparedLinearWeightOnly(w4, mode="int8_block")
    assert np.allclose(np.from_dlpack(blk(x)), one, rtol=0.05, atol=0.2)


def test_ternary_per_token_layer_is_bitnets_rule():
    wf = rng.standard_normal((12, 200)).astype(np.float32)
    qp = qnt.calibrate_codebook(wf, "ternary", "per_tensor", block_size=0)
    w = qnt.quantize(wf, qp)
    layer = qnt.PreparedLinearWeightOnly(w, mode="int8_token")
    x = rng.standard_normal((3, 200)).astype(np.float32)
    a = np.max(np.abs(x), axis=1, keepdims=True).astype(np.float32)
    qx = np.clip(np.rint((x * np.float32(127)) / a), -127, 127).astype(np.int64)
    v = np.rint(np.from_dlpack(qnt.dequantize(w)) / np.float32(qp.scales[0])).astype(np.int64)
    want = (qx @ v.T).astype(np.float32) * ((a / np.float32(127)).astype(np.float32) * np.float32(qp.scales[0]))
    assert bits(np.from_dlpack(layer(x))) == bits(want.astype(np.float32))


def test_binary_matmul_counts_agreements_and_ternary_conv_weights():
    af = rng.standard_normal((5, 300)).astype(np.float32)
    bf = rng.standard_normal((7, 300)).astype(np.float32)
    qp = qnt.QParams.per_tensor("binary", 0.5)
    a, b = qnt.quantize(af, qp), qnt.quantize(bf, qp)
    sa = np.where(af < 0, -1, 1).astype(np.int64)
    sb = np.where(bf < 0, -1, 1).astype(np.int64)
    y = np.from_dlpack(qnt.binary_matmul(a, b))
    assert np.array_equal(y, (sa @ sb.T).astype(np.int32))
    yf = np.from_dlpack(qnt.binary_matmul(a, b, out_dtype="float32"))
    assert bits(yf) == bits((sa @ sb.T).astype(np.float32) * np.float32(0.25))
    prepared = qnt.PreparedBinaryMatmul(b)
    assert np.array_equal(np.from_dlpack(prepared(a)), y)
    # Ternary weights in the integer convolution: the bits of the same values given as int8.
    wf = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    wq = qnt.calibrate_codebook(wf, "ternary", "per_tensor", block_size=0)
    w3 = qnt.quantize(wf, wq)
    w8 = np.rint(np.from_dlpack(qnt.dequantize(w3)) / np.float32(wq.scales[0])).astype(np.int8)
    x = rng.integers(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    assert np.array_equal(np.from_dlpack(qnt.qconv2d(x, w3, padding=1)),
                          np.from_dlpack(qnt.qconv2d(x, qnt.asarray(w8), padding=1)))


def _lcg_ternary(rows, cols, seed):
    x, out = seed, []
    for _ in range(rows * cols):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append((x >> 33) % 3 - 1)
    return np.array(out, dtype=np.float32).reshape(rows, cols)


# SHA-256 of the bytes bitnet.cpp's own conversion (its convert script's TL1 / TL2 preprocessing,
# and quantize_i2_s's packing with the scale after the codes) gives these weights, computed once
# outside the project.
_BITNET_DIGESTS = {
    ("tl1", 64, 256, (64, 128, 32)): "dc845264d29e73a1dae4b89da66ec29902902603c233c26e6d466f17dbe7afb6",
    ("tl2", 64, 416, (64, 192, 32)): "b78c2262e6427852fa337bfb1b47349cc40837b8f523b8c66c699bf425cb4a43",
    ("i2_s", 4, 256, None): "4da9cc40fb51706b004944213f2e961d2f5ad27ad359cd5d0af9899eb6b803ee",
}


@pytest.mark.parametrize("key", list(_BITNET_DIGESTS))
def test_ternary_layouts_are_bitnets_bytes_and_round_trip(key):
    import hashlib
    layout, rows, cols, tiling = key
    wf = _lcg_ternary(rows, cols, 7)
    qp = qnt.QParams.per_tensor("ternary", 0.75)
    w = qnt.quantize(wf * np.float32(0.75), qp)
    data = qnt.ternary_export(w, layout, tiling)
    assert len(data) == qnt.ternary_layout_size(layout, (rows, cols), tiling)
    assert hashlib.sha256(data).hexdigest() == _BITNET_DIGESTS[key]
    back = qnt.ternary_import(data, layout, (rows, cols), tiling, scale=0.75)
    assert bytes(np.from_dlpack(back).view(np.uint8).tobytes()) == bytes(np.from_dlpack(w).view(np.uint8).tobytes())
    assert back.qparams.scales[0] == np.float32(0.75)
    assert qnt.ternary_export(back, layout, tiling) == data
    # A flipped code no weights give is refused, not read as something else.
    bad = bytearray(data)
    bad[0] = 0xFF
    with pytest.raises(qnt.CorruptDataError):
        qnt.ternary_import(bytes(bad), layout, (rows, cols), tiling, scale=0.75)


def test_conv_add_relu():
    x = rng.integers(0, 256, (1, 3, 6, 6)).astype(np.uint8)
    w = rng.integers(-128, 128, (4, 3, 3, 3)).astype(np.int8)
    y = np.from_dlpack(qnt.qconv2d(x, qnt.asarray(w), padding=1))
    assert y.shape == qnt.conv2d_output_shape(x, w, padding=1) == (1, 4, 6, 6)
    xp = np.pad(x.astype(np.int64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    want = np.zeros((1, 4, 6, 6), dtype=np.int64)
    for i in range(6):
        for j in range(6):
            want[0, :, i, j] = np.tensordot(w.astype(np.int64), xp[0, :, i:i + 3, j:j + 3], axes=3)
    assert np.array_equal(y, want.astype(np.int32))
    pc = qnt.PreparedConv2d(qnt.asarray(w), padding=1)
    assert np.array_equal(np.from_dlpack(pc(x)), y)
    qa = qnt.QParams.per_tensor("int8", 0.1)
    qb = qnt.QParams.per_tensor("int8", 0.2)
    qy = qnt.QParams.per_tensor("int8", 0.25, -3)
    a = qnt.asarray(rng.integers(-128, 128, 50).astype(np.int8), qparams=qa)
    b = qnt.asarray(rng.integers(-128, 128, 50).astype(np.int8), qparams=qb)
    s = np.from_dlpack(a).astype(np.float32) * np.float32(0.1) + np.from_dlpack(b).astype(np.float32) * np.float32(0.2)
    assert np.array_equal(np.from_dlpack(qnt.qadd(a, b, qy)), ref_quantize(s, 0.25, -3, -128, 127).astype(np.int8))
    r = np.from_dlpack(qnt.qrelu(a))
    assert np.array_equal(r, np.maximum(np.from_dlpack(a), 0))
    r6 = np.from_dlpack(qnt.qrelu(a, upper=6.0))
    assert np.array_equal(r6, np.clip(np.from_dlpack(a), 0, 60))
    d = qnt.OpDesc(stride=2, groups=1)
    assert d.get(qnt.capi.QNT_OP_STRIDE_W) == 2
    d.close()


# --- calibrators --------------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["minmax", "percentile", "entropy", "mse", "adaptive"])
def test_calibrator_merge_and_pickle(method):
    x = rng.standard_normal((4000,)).astype(np.float32) * np.float32(2)
    whole = qnt.Calibrator(method, "int8").observe(x)
    a = qnt.Calibrator(method, "int8").observe(x[:1500])
    b = qnt.Calibrator(method, "int8").observe(x[1500:])
    assert a.merge(b).compute() == whole.compute()
    c = pickle.loads(pickle.dumps(whole))
    assert c.compute() == whole.compute() and c.serialize() == whole.serialize()
    assert whole.chosen_method in set(qnt.CalibMethod)
    with pytest.raises(qnt.CorruptDataError):
        qnt.Calibrator.deserialize(whole.serialize()[:-3])


def test_calibrator_counts_and_options():
    c = qnt.Calibrator("percentile", "uint8", "affine", percentile=99.0, bins=256)
    c.observe(np.array([1.0, np.nan, np.inf, -2.0], dtype=np.float32))
    assert c.counts == (2, 1, 1)
    c.reset()
    assert c.counts == (0, 0, 0)
    with pytest.raises(qnt.InvalidArgumentError):
        qnt.Calibrator("percentile", "int8", percentile=20.0)


@needs_torch
def test_minmax_is_pytorchs_observer():
    from torch.ao.quantization import MinMaxObserver
    x = torch.randn(1000) * 3 + 1
    obs = MinMaxObserver(dtype=torch.quint8, qscheme=torch.per_tensor_affine)
    obs(x)
    s, z = obs.calculate_qparams()
    qp = qnt.calibrate_minmax(x, "uint8", "affine")
    assert np.float32(qp.scales[0]) == np.float32(s.item()) and qp.zero_points[0] == int(z.item())
    q = qnt.quantize(x, qp)
    tq = torch.quantize_per_tensor(x, float(s), int(z), torch.quint8)
    assert np.array_equal(torch.from_dlpack(q).numpy(), tq.int_repr().numpy())


# --- DLPack -------------------------------------------------------------------------------------
def test_numpy_in_and_out_without_copies():
    x = rng.standard_normal((3, 5)).astype(np.float32)
    before = sys.getrefcount(x)
    t = qnt.asarray(x)
    assert t.data_ptr == x.ctypes.data and t.shape == (3, 5) and t.dtype == qnt.float32
    assert sys.getrefcount(x) == before + 1  # the import holds the array
    back = np.from_dlpack(t)
    assert back.ctypes.data == x.ctypes.data
    x[0, 0] = 42.0
    assert back[0, 0] == 42.0
    del t, back
    gc.collect()
    assert sys.getrefcount(x) == before
    # packed codes as bytes: rows of whole bytes keep their rank, the others flatten
    q4 = qnt.quantize(rng.standard_normal((4, 6)).astype(np.float32), qnt.QParams.per_tensor("int4", 0.3))
    b = np.from_dlpack(q4)
    assert b.dtype == np.uint8 and b.shape == (4, 3) and b.ctypes.data == q4.data_ptr
    q5 = qnt.quantize(rng.standard_normal((3, 5)).astype(np.float32), qnt.QParams.per_tensor("uint4", 0.3, 8))
    assert np.from_dlpack(q5).shape == (8,)
    again = qnt.asarray(np.from_dlpack(q5).copy(), "uint4", q5.qparams, shape=(3, 5))
    assert again.tobytes() == q5.tobytes()
    strided = np.zeros((4, 4), np.float32)[:, ::2]
    assert qnt.asarray(strided).shape == (4, 2)  # copied: qnt takes compact memory
    assert qnt.asarray([[1, 2], [3, 4]]).dtype == qnt.float32


@needs_torch
def test_torch_in_and_out_without_copies():
    x = torch.randn(4, 8)
    t = qnt.asarray(x)
    assert t.data_ptr == x.data_ptr()
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    q = qnt.quantize(x, qnt.QParams.per_tensor("int8", 0.05))
    qt = torch.from_dlpack(q)
    assert qt.dtype == torch.int8 and qt.data_ptr() == q.data_ptr
    qt[0, 0] = 7  # torch's view is writable, and it is qnt's memory
    assert q.tobytes()[0] == 7
    before = sys.getrefcount(x)
    t2 = qnt.asarray(x)
    del t2
    gc.collect()
    assert sys.getrefcount(x) == before
    half = qnt.asarray(torch.randn(2, 3).to(torch.bfloat16))
    assert half.dtype == qnt.bfloat16


def test_read_only_file_tensors_leave_as_read_only(tmp_path):
    p = str(tmp_path / "m.safetensors")
    with qnt.ModelWriter(p) as w:
        w.declare("a", "float32", (2, 3))
        w.write(np.arange(6, dtype=np.float32).reshape(2, 3))
    with qnt.ModelFile(p) as f:
        t = f["a"]
        assert t.read_only
        with pytest.raises(BufferError):
            t.__dlpack__()  # legacy DLPack cannot say read-only
        if int(np.__version__.split(".")[0]) >= 2:
            a = np.from_dlpack(t)
            assert not a.flags.writeable and a.tolist() == [[0, 1, 2], [3, 4, 5]]
        del t
        gc.collect()


# --- errors and lifetimes -----------------------------------------------------------------------
def test_errors_are_exceptions_with_the_message():
    x = np.zeros((3, 4), np.float32)
    with pytest.raises(qnt.ShapeMismatchError, match="3") as e:
        qnt.quantize(x, qnt.QParams.per_axis("int8", 0, [1.0, 2.0]))
    assert e.value.status == qnt.capi.QNT_ERR_SHAPE_MISMATCH and e.value.status_name == "QNT_ERR_SHAPE_MISMATCH"
    assert isinstance(e.value, ValueError)
    with pytest.raises(qnt.InvalidQParamsError):
        qnt.QParams.per_tensor("int8", -1.0)
    with pytest.raises(qnt.InvalidQParamsError):
        qnt.QParams.per_tensor("uint8", 1.0, 300)
    with pytest.raises(qnt.DTypeMismatchError):
        qnt.quantize(np.zeros(4, np.int32), qnt.QParams.per_tensor("int8", 1.0))
    with pytest.raises(qnt.UnsupportedError):
        qnt.Calibrator("mse", "nf4")
    with pytest.raises(qnt.InvalidArgumentError):
        qnt.ModelFile("/nonexistent.safetensors")
    with pytest.raises(qnt.InvalidArgumentError):
        qnt.dtype("int5")
    with pytest.raises(qnt.QntError):
        qnt.Context(max_isa="nope")


def test_handles_close_in_any_order():
    x = rng.standard_normal((2, 32)).astype(np.float32)
    qp = qnt.QParams.per_tensor("int8", 0.1)
    q = qnt.quantize(x, qp)
    qp.close()  # the tensor keeps its own
    assert q.qparams.scales[0] == np.float32(0.1)
    view = np.from_dlpack(q)
    q.close()  # the export keeps the memory
    assert view.shape == (2, 32) and int(view.astype(np.int64).sum()) == int(ref_quantize(x, 0.1, 0, -128, 127).sum())
    with pytest.raises(qnt.InvalidArgumentError):
        q.shape
    with qnt.Tensor.empty((3,), "int32") as t:
        assert t.tobytes() == bytes(12)
    q.close()  # twice is fine


def test_threads_share_a_context_and_a_prepared_operator():
    wf = rng.standard_normal((32, 128)).astype(np.float32)
    w = qnt.quantize(wf, qnt.calibrate_minmax(wf, "int8", "symmetric", "per_axis"))
    ctx = qnt.Context(threads=2)
    lin = qnt.PreparedLinearDynamic(w, ctx=ctx)
    inputs = [rng.standard_normal((16, 128)).astype(np.float32) for _ in range(8)]
    want = [bits(np.from_dlpack(lin(x, ctx=qnt.Context(threads=1)))) for x in inputs]
    errors = []

    def work(i):
        try:
            for _ in range(20):
                got = bits(np.from_dlpack(lin(inputs[i], ctx=ctx)))
                if got != want[i]:
                    errors.append(i)
                q = qnt.quantize(inputs[i], qnt.calibrate_minmax(inputs[i], "uint8", "affine", ctx=ctx), ctx=ctx)
                q.close()
        except Exception as e:  # pragma: no cover
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    lin.close()
    ctx.close()


# --- model files --------------------------------------------------------------------------------
def test_model_files_round_trip(tmp_path):
    wf = rng.standard_normal((8, 64)).astype(np.float32)
    q = qnt.quantize(wf, qnt.calibrate_minmax(wf, "int4", "symmetric", "per_block", axis=1, block_size=32))
    p = str(tmp_path / "q.safetensors")
    with qnt.ModelWriter(p) as w:
        w.set_metadata("note", "from python")
        w.set_input_qparams("w", qnt.QParams.per_tensor("uint8", 0.5, 9))
        w.declare("w", q.dtype, q.shape, q.qparams)
        w.declare("norm", "float32", (64,))
        w.write(q)
        w.write(np.ones(64, np.float32))
    with qnt.ModelFile(p) as f:
        assert f.format == "safetensors" and len(f) == 3 and "w" in f and "nope" not in f
        assert f.metadata["note"] == "from python"
        assert f.type("norm") == "F32" and f.shape("norm") == (64,)
        assert f["w"].tobytes() == q.tobytes() and f["w"].qparams == q.qparams
        assert bits(np.from_dlpack(f.dequantize("w"))) == bits(np.from_dlpack(qnt.dequantize(q)))
        assert f.input_qparams("w") == qnt.QParams.per_tensor("uint8", 0.5, 9)
        assert f.input_qparams("norm") is None
        assert bytes(f.raw("norm")) == np.ones(64, np.float32).tobytes()
    g = str(tmp_path / "q.gguf")
    with qnt.ModelWriter(g) as w:
        w.set_metadata("general.name", "tiny")
        w.set_metadata("n", 7, "uint32")
        w.set_metadata("xs", [1.5, 2.5], "float32")
        w.set_metadata("flag", True)
        w.declare_ggml("w", "Q8_0", (8, 64))
        w.write(wf)
    with qnt.ModelFile(g) as f:
        assert f.format == "gguf" and f.type("w") == "Q8_0"
        assert f.metadata_value("n") == 7 and f.metadata_value("xs") == [1.5, 2.5] and f.metadata_value("flag") is True
        d = np.from_dlpack(f.dequantize("w"))
        assert np.abs(d - wf).max() < np.abs(wf).max() / 100
    with pytest.raises(qnt.CorruptDataError):
        open(str(tmp_path / "bad.safetensors"), "wb").write(b"\x10" + bytes(7) + b"{}")
        qnt.ModelFile(str(tmp_path / "bad.safetensors"))


def test_help_comes_from_the_header():
    assert "QuantizeLinear" in qnt.quantize.__doc__
    assert qnt.capi.FUNCTIONS["qnt_quantize"][3].startswith("y = quantize(x)")


def test_example_runs(tmp_path):
    ex = os.path.join(ROOT, "examples", "python", "quantize_model.py")
    r = subprocess.run([sys.executable, ex, "--out", str(tmp_path / "ex.safetensors")], capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "SQNR" in r.stdout
