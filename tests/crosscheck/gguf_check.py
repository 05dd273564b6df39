#!/usr/bin/env python3
"""Cross-checks qnt's GGUF reader against gguf-py (ggml's own Python package):

  - a GGUF file written by gguf.GGUFWriter (metadata of every value type and arrays of them, an
    alignment of 64, tensors F32, F16, BF16, I8, I16, I32 and Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 as
    gguf.quants.quantize makes them, and Q4_K, Q5_K, Q6_K, IQ4_NL, TQ1_0, TQ2_0 blocks of random
    bytes with finite scales) opens through libqnt's C API with the same keys, values, tensor
    names, types, shapes and bytes as gguf.GGUFReader reads;
  - qnt_model_file_tensor_dequantize of every tensor equals gguf.quants.dequantize bit for bit;
  - Q8_0 and Q4_0 taken as qnt tensors (i8, u4 with per-block qparams) and qnt_dequantize'd give
    the same floats (Q4_0: up to the sign of zero, as qnt_io.h says);
  - `qnt info` reads the file and `qnt quantize` turns it into a safetensors file.

usage: gguf_check.py path/to/libqnt.so path/to/qnt workdir
"""
import ctypes as C
import hashlib
import os
import subprocess
import sys

import numpy as np
from qnt_ctypes import Checks, P, load
import gguf
from gguf import GGMLQuantizationType as T
from gguf import quants

lib = load(sys.argv[1], {
    "qnt_model_file_open": [C.c_char_p, P],
    "qnt_model_file_destroy": [P],
    "qnt_model_file_format": [P, P],
    "qnt_model_file_tensor_count": [P, P],
    "qnt_model_file_tensor_find": [P, C.c_char_p, P],
    "qnt_model_file_tensor_type": [P, C.c_size_t, P],
    "qnt_model_file_tensor_shape": [P, C.c_size_t, P, C.c_size_t, P],
    "qnt_model_file_tensor_bytes": [P, C.c_size_t, P, P],
    "qnt_model_file_tensor": [P, C.c_size_t, P],
    "qnt_model_file_tensor_dequantize": [P, C.c_size_t, P],
    "qnt_model_file_metadata_count": [P, P],
    "qnt_model_file_metadata_type": [P, C.c_char_p, P, P, P],
    "qnt_model_file_metadata_int": [P, C.c_char_p, C.c_size_t, P],
    "qnt_model_file_metadata_uint": [P, C.c_char_p, C.c_size_t, P],
    "qnt_model_file_metadata_float": [P, C.c_char_p, C.c_size_t, P],
    "qnt_model_file_metadata_string_at": [P, C.c_char_p, C.c_size_t, P],
    "qnt_tensor_create": [C.c_int32, P, C.c_size_t, P, P],
    "qnt_tensor_copy_to": [P, P, C.c_size_t],
    "qnt_tensor_dtype": [P, P],
    "qnt_tensor_destroy": [P],
    "qnt_dequantize": [P, P, P],
})
qnt_cmd = sys.argv[2]
work = sys.argv[3]
os.makedirs(work, exist_ok=True)
_c = Checks(lib)
check, ok = _c.check, _c.ok


rng = np.random.default_rng(7)

# --- the file, written by gguf-py ---------------------------------------------------------------
path = os.path.join(work, "model.gguf")
w = gguf.GGUFWriter(path, "llama")
w.add_custom_alignment(64)
meta = {
    "t.u8": (np.uint8(200), gguf.GGUFValueType.UINT8),
    "t.i8": (np.int8(-100), gguf.GGUFValueType.INT8),
    "t.u16": (np.uint16(60000), gguf.GGUFValueType.UINT16),
    "t.i16": (np.int16(-30000), gguf.GGUFValueType.INT16),
    "t.u32": (np.uint32(4000000000), gguf.GGUFValueType.UINT32),
    "t.i32": (np.int32(-2000000000), gguf.GGUFValueType.INT32),
    "t.u64": (np.uint64(2 ** 63 + 5), gguf.GGUFValueType.UINT64),
    "t.i64": (np.int64(-(2 ** 62)), gguf.GGUFValueType.INT64),
    "t.f32": (np.float32(0.1), gguf.GGUFValueType.FLOAT32),
    "t.f64": (np.float64(1e300), gguf.GGUFValueType.FLOAT64),
    "t.bool": (True, gguf.GGUFValueType.BOOL),
    "t.str": ("héllo wörld", gguf.GGUFValueType.STRING),
}
for k, (v, vt) in meta.items():
    w.add_key_value(k, v, vt)
w.add_array("t.tokens", ["<s>", "</s>", "a", "ü"])
w.add_array("t.scores", [0.5, -1.25, 3.0])
w.add_array("t.ids", [1, 2, 3, 400])

shapes = {"f32": (3, 64), "f16": (2, 32), "bf16": (4, 32), "i8": (5,), "i16": (2, 3), "i32": (7,)}
tensors = {}
tensors["f32"] = (rng.standard_normal(shapes["f32"]).astype(np.float32), None)
tensors["f16"] = (rng.standard_normal(shapes["f16"]).astype(np.float16), None)
tensors["i8"] = (rng.integers(-128, 128, shapes["i8"]).astype(np.int8), None)
tensors["i16"] = (rng.integers(-30000, 30000, shapes["i16"]).astype(np.int16), None)
tensors["i32"] = (rng.integers(-2 ** 31, 2 ** 31, shapes["i32"]).astype(np.int32), None)
bf = quants.quantize(rng.standard_normal(shapes["bf16"]).astype(np.float32), T.BF16)
tensors["bf16"] = (bf, T.BF16)
# Block types gguf-py quantizes, from real values (and a zero row, and rows of one sign).
x = rng.standard_normal((6, 256)).astype(np.float32)
x[1] = 0
x[2] = np.abs(x[2])
x[3] = -np.abs(x[3])
for qt in (T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1):
    tensors[qt.name.lower()] = (quants.quantize(x, qt), qt)


# Block types it only dequantizes: random blocks, each f16 scale replaced by a finite one.
def random_blocks(qt, rows, cols, scale_at):
    bs, ts = gguf.GGML_QUANT_SIZES[qt]
    b = rng.integers(0, 256, (rows, cols // bs, ts), dtype=np.uint8)
    for off in scale_at:
        d = (rng.standard_normal(b.shape[:2]) * 0.01).astype(np.float16)
        b[:, :, off:off + 2] = d.view(np.uint8).reshape(b.shape[0], b.shape[1], 2)
    return b.reshape(rows, -1)


tensors["q4_k"] = (random_blocks(T.Q4_K, 3, 512, [0, 2]), T.Q4_K)
tensors["q5_k"] = (random_blocks(T.Q5_K, 2, 256, [0, 2]), T.Q5_K)
tensors["q6_k"] = (random_blocks(T.Q6_K, 2, 512, [208]), T.Q6_K)
tensors["iq4_nl"] = (random_blocks(T.IQ4_NL, 4, 64, [0]), T.IQ4_NL)
tensors["tq1_0"] = (random_blocks(T.TQ1_0, 2, 256, [52]), T.TQ1_0)
tensors["tq2_0"] = (random_blocks(T.TQ2_0, 2, 256, [64]), T.TQ2_0)
# BitNet-like ternary weights (one scale, values -s, 0, +s) as TQ1_0 and TQ2_0.
tern = rng.integers(-1, 2, (8, 512)).astype(np.float32)
for qt in (T.TQ1_0, T.TQ2_0):
    tensors[qt.name.lower() + "_bitnet"] = (quants.quantize(tern * np.float32(0.03), qt), qt)
for name, (arr, qt) in tensors.items():
    w.add_tensor(name, arr, raw_dtype=qt)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()

# --- what gguf-py reads ---------------------------------------------------------------------------
reader = gguf.GGUFReader(path)
f = P()
ok(lib.qnt_model_file_open(path.encode(), C.byref(f)), path)
fmt = C.c_int32()
ok(lib.qnt_model_file_format(f, C.byref(fmt)), "format")
check(fmt.value == 2, f"format {fmt.value}")


def as_qnt_tensor(q, dtype, name, dims, rank, shape):
    """The values of qnt tensor q (destroyed here), checked to be of qnt dtype `dtype`, by
    qnt_dequantize."""
    d = C.c_int32()
    ok(lib.qnt_tensor_dtype(q, C.byref(d)), name)
    check(d.value == dtype, f"{name}: qnt dtype {d.value}, not {dtype}")
    y = P()
    ok(lib.qnt_tensor_create(1, dims, rank.value, None, C.byref(y)), name)
    ok(lib.qnt_dequantize(None, q, y), name)
    got = np.zeros(shape, dtype=np.float32)
    ok(lib.qnt_tensor_copy_to(y, got.ctypes.data, got.nbytes), name)
    lib.qnt_tensor_destroy(y)
    lib.qnt_tensor_destroy(q)
    return got


def meta_value(key):
    t, e, n = C.c_int32(), C.c_int32(), C.c_size_t()
    ok(lib.qnt_model_file_metadata_type(f, key.encode(), C.byref(t), C.byref(e), C.byref(n)), key)
    vals = []
    for i in range(n.value):
        if e.value == 8:
            s = C.c_char_p()
            ok(lib.qnt_model_file_metadata_string_at(f, key.encode(), i, C.byref(s)), key)
            vals.append(s.value.decode())
        elif e.value in (6, 12):
            d = C.c_double()
            ok(lib.qnt_model_file_metadata_float(f, key.encode(), i, C.byref(d)), key)
            vals.append(d.value)
        elif e.value == 10:
            u = C.c_uint64()
            ok(lib.qnt_model_file_metadata_uint(f, key.encode(), i, C.byref(u)), key)
            vals.append(u.value)
        else:
            v = C.c_int64()
            ok(lib.qnt_model_file_metadata_int(f, key.encode(), i, C.byref(v)), key)
            vals.append(v.value)
    return t.value, e.value, vals


n = C.c_size_t()
ok(lib.qnt_model_file_metadata_count(f, C.byref(n)), "metadata count")
real_keys = [k for k in reader.fields if not k.startswith("GGUF.")]  # gguf-py's pseudo-fields left out
check(n.value == len(real_keys), f"{n.value} keys, gguf-py reads {len(real_keys)}")
for key, field in reader.fields.items():
    if key.startswith("GGUF."):
        continue  # gguf-py's own pseudo-fields (version, counts)
    t, e, vals = meta_value(key)
    check(t == int(field.types[0]), f"{key}: type {t} vs {field.types}")
    want = field.contents()
    want = want if isinstance(want, list) else [want]
    if e in (6, 12):  # compare as the stored float
        cast = np.float32 if e == 6 else np.float64
        check([cast(v) for v in vals] == [cast(v) for v in want], f"{key}: {vals} vs {want}")
    else:
        check([bool(v) for v in vals] == [bool(v) for v in want] if e == 7 else vals == want,
              f"{key}: {vals} vs {want}")

count = C.c_size_t()
ok(lib.qnt_model_file_tensor_count(f, C.byref(count)), "count")
check(count.value == len(reader.tensors), f"{count.value} tensors, gguf-py reads {len(reader.tensors)}")
for rt in reader.tensors:
    name = rt.name
    i = C.c_size_t()
    ok(lib.qnt_model_file_tensor_find(f, name.encode(), C.byref(i)), name)
    s = C.c_char_p()
    ok(lib.qnt_model_file_tensor_type(f, i.value, C.byref(s)), name)
    check(s.value.decode() == rt.tensor_type.name, f"{name}: type {s.value} vs {rt.tensor_type.name}")
    dims = (C.c_int64 * 8)()
    rank = C.c_size_t()
    ok(lib.qnt_model_file_tensor_shape(f, i.value, dims, 8, C.byref(rank)), name)
    shape = list(dims[: rank.value])
    check(shape == [int(d) for d in reversed(rt.shape)], f"{name}: shape {shape} vs {list(rt.shape)} (ggml order)")
    data, nb = P(), C.c_size_t()
    ok(lib.qnt_model_file_tensor_bytes(f, i.value, C.byref(data), C.byref(nb)), name)
    check(C.string_at(data, nb.value) == rt.data.tobytes(), f"{name}: bytes differ")
    # dequantized: gguf-py's values, bit for bit
    if rt.tensor_type in (T.I8, T.I16, T.I32):  # plain integers: their values as float32
        want = rt.data.astype(np.float32).reshape(shape)
    else:
        want = quants.dequantize(rt.data, rt.tensor_type).astype(np.float32).reshape(shape)
    y = P()
    ok(lib.qnt_tensor_create(1, dims, rank.value, None, C.byref(y)), name)
    ok(lib.qnt_model_file_tensor_dequantize(f, i.value, y), name)
    got = np.zeros(shape, dtype=np.float32)
    ok(lib.qnt_tensor_copy_to(y, got.ctypes.data, got.nbytes), name)
    lib.qnt_tensor_destroy(y)
    check(np.array_equal(got.view(np.uint32), want.view(np.uint32)),
          f"{name} ({rt.tensor_type.name}): dequantized differs from gguf-py in "
          f"{int(np.sum(got.view(np.uint32) != want.view(np.uint32)))} of {got.size}")
    # Q8_0 and Q4_0 as qnt tensors
    if rt.tensor_type in (T.Q8_0, T.Q4_0):
        q = P()
        ok(lib.qnt_model_file_tensor(f, i.value, C.byref(q)), name)
        got = as_qnt_tensor(q, 3 if rt.tensor_type == T.Q8_0 else 8, name, dims, rank, shape)
        if rt.tensor_type == T.Q8_0:
            check(np.array_equal(got.view(np.uint32), want.view(np.uint32)), f"{name}: as i8, bits differ")
        else:
            same = got.view(np.uint32) == want.view(np.uint32)
            zero_sign = (got == 0) & (want == 0)
            check(np.all(same | zero_sign), f"{name}: as u4, values differ")
    # TQ1_0 and TQ2_0 as ternary tensors (the same values up to the sign of a zero); a TQ2_0 code
    # 3 (random blocks hold some) has no ternary value and is refused
    if rt.tensor_type in (T.TQ1_0, T.TQ2_0):
        q = P()
        st = lib.qnt_model_file_tensor(f, i.value, C.byref(q))
        if rt.tensor_type == T.TQ2_0 and not name.endswith("_bitnet"):
            check(st == 4, f"{name}: random TQ2_0 blocks (codes 3) as ternary: status {st}")
            continue
        ok(st, name)
        got = as_qnt_tensor(q, 11, name, dims, rank, shape)
        same = got.view(np.uint32) == want.view(np.uint32)
        check(np.all(same | ((got == 0) & (want == 0))), f"{name}: as ternary, values differ")

# BitNet's layer on them: the per-token weight-only mode over the TQ1_0 / TQ2_0 tensors gives
# the rule of qnt.h, computed here in NumPy from gguf-py's codes and scale.
for name_, args in {"qnt_op_desc_create": [P], "qnt_op_desc_set": [P, C.c_int32, C.c_int64],
                    "qnt_op_desc_destroy": [P], "qnt_prepared_destroy": [P],
                    "qnt_prepared_create_linear_weight_only": [P, P, P, P, P],
                    "qnt_prepared_run": [P, P, P, P], "qnt_tensor_create_from_data":
                    [C.c_int32, P, C.c_size_t, P, P, C.c_size_t, P]}.items():
    getattr(lib, name_).argtypes = args
    if not name_.endswith("destroy"):
        getattr(lib, name_).restype = C.c_int32
xs = rng.standard_normal((3, 512)).astype(np.float32)
amax = np.max(np.abs(xs), axis=1, keepdims=True).astype(np.float32)
qx = np.clip(np.rint((xs * np.float32(127)) / amax), -127, 127).astype(np.int64)
for qt in (T.TQ1_0, T.TQ2_0):
    name = qt.name.lower() + "_bitnet"
    rt = next(t for t in reader.tensors if t.name == name)
    vals = quants.dequantize(rt.data, qt).reshape(8, 512)
    scale = np.float32(np.max(np.abs(vals)))
    codes = np.rint(vals / scale).astype(np.int64)
    want = (qx @ codes.T).astype(np.float32) * ((amax / np.float32(127)).astype(np.float32) * scale)
    i = C.c_size_t()
    fh = P()
    ok(lib.qnt_model_file_open(path.encode(), C.byref(fh)), path)
    ok(lib.qnt_model_file_tensor_find(fh, name.encode(), C.byref(i)), name)
    wt, desc, op, xt, yt = P(), P(), P(), P(), P()
    ok(lib.qnt_model_file_tensor(fh, i.value, C.byref(wt)), name)
    ok(lib.qnt_op_desc_create(C.byref(desc)), "desc")
    ok(lib.qnt_op_desc_set(desc, 14, 2), "QNT_WEIGHT_ONLY_INT8_TOKEN")
    ok(lib.qnt_prepared_create_linear_weight_only(None, wt, None, desc, C.byref(op)), name)
    xd = (C.c_int64 * 2)(3, 512)
    yd = (C.c_int64 * 2)(3, 8)
    ok(lib.qnt_tensor_create_from_data(1, xd, 2, None, xs.ctypes.data, xs.nbytes, C.byref(xt)), "x")
    ok(lib.qnt_tensor_create(1, yd, 2, None, C.byref(yt)), "y")
    ok(lib.qnt_prepared_run(None, op, xt, yt), name)
    got = np.zeros((3, 8), dtype=np.float32)
    ok(lib.qnt_tensor_copy_to(yt, got.ctypes.data, got.nbytes), name)
    check(np.array_equal(got.view(np.uint32), want.astype(np.float32).view(np.uint32)),
          f"{name}: the per-token layer differs from the rule: {got[0, :3]} vs {want[0, :3]}")
    for h in (xt, yt, wt):
        lib.qnt_tensor_destroy(h)
    lib.qnt_prepared_destroy(op)
    lib.qnt_op_desc_destroy(desc)
    lib.qnt_model_file_destroy(fh)
lib.qnt_model_file_destroy(f)

# --- GGUF written by qnt, read by gguf-py --------------------------------------------------------
for name, args in {
    "qnt_model_writer_create": [C.c_char_p, C.c_int32, P],
    "qnt_model_writer_destroy": [P],
    "qnt_model_writer_set_metadata": [P, C.c_char_p, C.c_char_p],
    "qnt_model_writer_set_metadata_scalar": [P, C.c_char_p, C.c_int32, P],
    "qnt_model_writer_set_metadata_array": [P, C.c_char_p, C.c_int32, P, C.c_size_t],
    "qnt_model_writer_declare_ggml": [P, C.c_char_p, C.c_char_p, P, C.c_size_t],
    "qnt_model_writer_write": [P, P],
    "qnt_model_writer_finish": [P],
    "qnt_tensor_wrap": [C.c_int32, P, C.c_size_t, P, P, C.c_size_t, P],
}.items():
    getattr(lib, name).argtypes = args
    if not name.endswith("destroy"):
        getattr(lib, name).restype = C.c_int32

qpath = os.path.join(work, "written_by_qnt.gguf")
wq = P()
ok(lib.qnt_model_writer_create(qpath.encode(), 2, C.byref(wq)), qpath)
ok(lib.qnt_model_writer_set_metadata(wq, b"general.architecture", b"llama"), "meta")
scalars = {"s.u8": (0, C.c_uint8(250)), "s.i8": (1, C.c_int8(-5)), "s.u16": (2, C.c_uint16(65535)),
           "s.i16": (3, C.c_int16(-2)), "s.u32": (4, C.c_uint32(7)), "s.i32": (5, C.c_int32(-7)),
           "s.f32": (6, C.c_float(0.25)), "s.bool": (7, C.c_uint8(1)), "s.u64": (10, C.c_uint64(2 ** 64 - 1)),
           "s.i64": (11, C.c_int64(-(2 ** 63))), "s.f64": (12, C.c_double(-1e-300))}
for k, (t, v) in scalars.items():
    ok(lib.qnt_model_writer_set_metadata_scalar(wq, k.encode(), t, C.byref(v)), k)
strs = (C.c_char_p * 3)(b"a", "é".encode(), b"")
ok(lib.qnt_model_writer_set_metadata_array(wq, b"s.strs", 8, strs, 3), "strs")
floats = (C.c_float * 2)(1.5, -0.0)
ok(lib.qnt_model_writer_set_metadata_array(wq, b"s.floats", 6, floats, 2), "floats")


def write_tensors(w, x, types, name_of):
    """Declares then writes x (float32, 2-D) once per ggml type through qnt's writer w, finishes
    and destroys w."""
    dims = (C.c_int64 * 2)(*x.shape)
    for t in types:
        ok(lib.qnt_model_writer_declare_ggml(w, name_of(t).encode(), t.encode(), dims, 2), t)
    for t in types:
        xt = P()
        ok(lib.qnt_tensor_wrap(1, dims, 2, None, x.ctypes.data, x.nbytes, C.byref(xt)), t)
        ok(lib.qnt_model_writer_write(w, xt), t)
        lib.qnt_tensor_destroy(xt)
    ok(lib.qnt_model_writer_finish(w), "finish")
    lib.qnt_model_writer_destroy(w)


xw = rng.standard_normal((4, 64)).astype(np.float32)
xw[1] = 0
xw[2] = np.abs(xw[2])
written = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1"]
write_tensors(wq, xw, written, str.lower)
r2 = gguf.GGUFReader(qpath)
fields = {k: v for k, v in r2.fields.items() if not k.startswith("GGUF.")}
check(fields["general.architecture"].contents() == "llama", "architecture")
for k, (t, v) in scalars.items():
    got = fields[k].contents()
    check(int(fields[k].types[0]) == t, f"{k}: type {fields[k].types}")
    check((bool(got) == bool(v.value)) if t == 7 else got == v.value, f"{k}: {got} vs {v.value}")
check(fields["s.strs"].contents() == ["a", "é", ""], f"strs: {fields['s.strs'].contents()}")
check([float(v) for v in fields["s.floats"].contents()] == [1.5, -0.0], "floats")
for rt in r2.tensors:
    qt = T[rt.name.upper()]
    check(rt.tensor_type == qt and list(reversed([int(d) for d in rt.shape])) == [4, 64], f"{rt.name}: {rt.tensor_type} {rt.shape}")
    want = quants.quantize(xw, qt) if qt not in (T.F32, T.F16) else xw.astype(np.float32 if qt == T.F32 else np.float16)
    check(rt.data.tobytes() == np.ascontiguousarray(want).tobytes(), f"{rt.name}: qnt's bytes differ from gguf.quants.quantize")

info = subprocess.run([qnt_cmd, "info", path], capture_output=True, text=True)
check(info.returncode == 0 and "Q4_K" in info.stdout and "t.str = héllo wörld" in info.stdout,
      f"qnt info: {info.returncode} {info.stderr}")
out = os.path.join(work, "from_gguf.safetensors")
r = subprocess.run([qnt_cmd, "quantize", path, out, "--type", "int8", "--quiet"], capture_output=True, text=True)
check(r.returncode == 0, f"qnt quantize from GGUF: {r.stderr}")

# The K-quants, which gguf-py does not quantize: qnt's bytes against ggml's own reference
# quantizers. The SHA-256 of each type's bytes for golden_input() below was computed once with
# ggml_quantize_chunk (no importance matrix: quantize_row_*_ref) of ggml d99724f2, built from a
# fetched copy outside this project; the legacy types are here too, as a second witness besides
# gguf.quants.quantize.
GOLDEN = {
    "Q4_0": "2d391fb279c6d0b7bd78a7be6664a4218d821798991e6bc3a90796fb6bd4fa7e",
    "Q4_1": "58975d4cb1e4fc370de65c6f9f147be01ac76fb699b6859d01dc579f6ea5c345",
    "Q5_0": "b21a6b677db7357b6af33ad18d761798b160369f517d41306b57fd2745a84cce",
    "Q5_1": "d7f82c725308321c0954262fc8f1a6acd7c27e8cab03e1a1965fb3d84d03b76c",
    "Q8_0": "7981e074cef04112838b695371d909eb19ec3c25e7c816fba569fe959409174d",
    "Q4_K": "aec5ad50b007796a89a1e49588b6a2a68fd326140077a01d8825b5ba327ad079",
    "Q5_K": "aac64fd8900c227ad3791b178b134160287a00c89353a91b2a87cfd5b34129c2",
    "Q6_K": "46dcce2ed413e26cad650ac9e32280020911d680f77aa04f422db7ea4c2d1b7e",
    "TQ1_0": "e6b125f34f5ce937152419041ad13e3a78d99d6aceb8c5bd3ff61f3ab4b78b68",
    "TQ2_0": "7f0df3a04fab7213f2fcf1e3f07d8d009b16ef36bb63a43ed67b3a5c40cded1c",
    # IQ4_NL (quantize_row_iq4_nl_ref): the blocks that are not all zero (ggml leaves the codes of
    # an all-zero block to whatever its buffer held; qnt writes 0)
    "IQ4_NL": "0f267bd22ee6c89ab042b2442e1a7401f1a091c6759b6bf9eaa24914c4158f96",
}


def golden_input(rows=8, cols=512):
    """Deterministic values with heavy tails and a zero row, from a 32-bit LCG (no library RNG)."""
    st = 2463534242
    vals = np.empty(rows * cols, dtype=np.float32)
    for i in range(rows * cols):
        st = (st * 1664525 + 1013904223) % 2 ** 32
        u = (st >> 8) / 2 ** 24 - 0.5
        vals[i] = np.float32(8 * u * u * u + 0.1 * u)
    g = vals.reshape(rows, cols)
    g[2] = 0
    g[5] = np.abs(g[5])
    return g


xg = golden_input()
gpath = os.path.join(work, "golden.gguf")
wq = P()
ok(lib.qnt_model_writer_create(gpath.encode(), 2, C.byref(wq)), gpath)
write_tensors(wq, xg, list(GOLDEN), str)
for rt in gguf.GGUFReader(gpath).tensors:
    data = rt.data.tobytes()
    if rt.name == "IQ4_NL":
        nonzero = np.any(xg.reshape(-1, 32) != 0, axis=1)
        data = np.frombuffer(data, np.uint8).reshape(-1, 18)[nonzero].tobytes()
    check(hashlib.sha256(data).hexdigest() == GOLDEN[rt.name], f"{rt.name}: qnt's bytes are not ggml's reference quantizer's")
    if rt.tensor_type not in (T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL):  # gguf-py quantizes the others
        check(rt.data.tobytes() == quants.quantize(xg, rt.tensor_type).tobytes(),
              f"{rt.name}: qnt's bytes differ from gguf.quants.quantize")
    deq = quants.dequantize(rt.data, rt.tensor_type).reshape(8, 512)
    err = float(np.sum((deq - xg) ** 2))
    sqnr = 10 * np.log10(float(np.sum(xg.astype(np.float64) ** 2)) / max(err, 1e-30))
    check(sqnr > (3 if rt.name.startswith("TQ") else 15), f"{rt.name}: SQNR {sqnr:.1f} dB")

# `qnt quantize` into GGUF: from GGUF (block types kept as bytes, f32 matrices to Q8_0) and from
# the safetensors file qnt wrote above; gguf-py reads both.
out2 = os.path.join(work, "requantized.gguf")
r = subprocess.run([qnt_cmd, "quantize", path, out2, "--type", "q8_0", "--no-default-keep", "--quiet"],
                   capture_output=True, text=True)
check(r.returncode == 0, f"qnt quantize GGUF -> GGUF: {r.stderr}")
if r.returncode == 0:
    r3 = gguf.GGUFReader(out2)
    by = {t.name: t for t in r3.tensors}
    check(by["f32"].tensor_type == T.Q8_0, f"f32 became {by['f32'].tensor_type}")
    check(by["f32"].data.tobytes() == quants.quantize(tensors["f32"][0], T.Q8_0).tobytes(), "f32 -> Q8_0 bytes")
    check(by["q4_k"].tensor_type == T.Q8_0, "Q4_K dequantized then Q8_0")
    check(by["i16"].tensor_type == T.I16 and by["i16"].data.tobytes() == tensors["i16"][0].tobytes(), "i16 kept")
    check(r3.fields["t.tokens"].contents() == ["<s>", "</s>", "a", "ü"], "string array copied")
    check(int(r3.fields["t.u64"].contents()) == 2 ** 63 + 5, "u64 copied")
    # the closing table's SQNR of a tensor written as Q8_0: gguf-py's dequantization of the bytes
    # against the float32 values they came from
    r4 = subprocess.run([qnt_cmd, "quantize", path, out2 + ".2.gguf", "--type", "q8_0", "--no-default-keep"],
                        capture_output=True, text=True)
    row = [ln.split() for ln in r4.stdout.splitlines() if ln.split()[:1] == ["f32"]]
    x64 = tensors["f32"][0].astype(np.float64)
    d64 = quants.dequantize(by["f32"].data, T.Q8_0).reshape(x64.shape).astype(np.float64)
    want = 10 * np.log10(np.sum(x64 ** 2) / np.sum((x64 - d64) ** 2))
    check(r4.returncode == 0 and len(row) == 1 and abs(float(row[0][1]) - want) < 0.006,
          f"GGUF quantize's SQNR table: {row} vs {want:.2f} dB")
# --budget: a type per tensor among --formats by measured SQNR (qnt_recommender), the bytes and
# SQNR measured with ggml's reference quantizers, so gguf-py's dequantization of the file agrees.
for floor_db, want_type in ((10.0, T.Q4_0), (30.0, T.Q8_0)):
    out5 = os.path.join(work, f"budget{int(floor_db)}.gguf")
    r = subprocess.run([qnt_cmd, "quantize", path, out5, "--budget", f"{floor_db}dB", "--formats", "q4_0,q8_0",
                        "--no-default-keep", "--quiet"], capture_output=True, text=True)
    check(r.returncode == 0, f"qnt quantize --budget: {r.stderr}")
    if r.returncode == 0:
        t5 = {t.name: t for t in gguf.GGUFReader(out5).tensors}["f32"]
        x64 = tensors["f32"][0].astype(np.float64)
        d64 = quants.dequantize(t5.data, t5.tensor_type).reshape(x64.shape).astype(np.float64)
        got = 10 * np.log10(np.sum(x64 ** 2) / np.sum((x64 - d64) ** 2))
        check(t5.tensor_type == want_type and got >= floor_db,
              f"--budget {floor_db}dB: f32 became {t5.tensor_type} at {got:.2f} dB")
r = subprocess.run([qnt_cmd, "recommend", path, "--formats", "i8,i4.b32,q4_0", "--budget", "4.5bpw",
                    "--no-default-keep"], capture_output=True, text=True)
check(r.returncode == 0 and "worst SQNR" in r.stdout and "runner-up" in r.stdout, f"qnt recommend: {r.stderr}")
r = subprocess.run([qnt_cmd, "recommend", path, "--formats", "i3", "--budget", "4bpw"], capture_output=True, text=True)
check(r.returncode != 0 and "i3" in r.stderr, f"qnt recommend refuses an unknown format: {r.stderr}")
out3 = os.path.join(work, "from_safetensors.gguf")
r = subprocess.run([qnt_cmd, "quantize", out, out3, "--type", "q4_0", "--quiet"], capture_output=True, text=True)
check(r.returncode == 0, f"qnt quantize safetensors -> GGUF: {r.stderr}")
if r.returncode == 0:
    check(len(gguf.GGUFReader(out3).tensors) > 0, "gguf-py reads qnt's GGUF from safetensors")

sys.exit(_c.summary("gguf"))
