#!/usr/bin/env python3
"""Cross-checks qnt's model files against code that is not ours:

  - files written by Hugging Face's safetensors (safetensors.torch.save_file, every dtype it has,
    and a sharded model with its index) open through libqnt's C API with the same names, dtypes,
    shapes and bytes, and `qnt info` lists them;
  - files written by `qnt quantize` load in safetensors (numpy and torch) and in PyTorch; the
    tensors it keeps are the input's bytes; each quantized tensor dequantized in numpy from its
    entries ((q - z) * s per group, in float32, the ONNX rule) has the bits of qnt_dequantize.

It loads libqnt.so through ctypes, as any foreign-language user would.
usage: model_files.py path/to/libqnt.so path/to/qnt workdir
"""
import ctypes as C
import json
import os
import subprocess
import sys

import numpy as np
from qnt_ctypes import Checks, P, load
import torch
from safetensors.numpy import load_file as np_load
from safetensors.torch import load_file as torch_load
from safetensors.torch import save_file

lib = load(sys.argv[1], {
    "qnt_model_file_open": [C.c_char_p, P],
    "qnt_model_file_destroy": [P],
    "qnt_model_file_tensor_count": [P, P],
    "qnt_model_file_tensor_find": [P, C.c_char_p, P],
    "qnt_model_file_tensor_name": [P, C.c_size_t, P],
    "qnt_model_file_tensor_type": [P, C.c_size_t, P],
    "qnt_model_file_tensor_shape": [P, C.c_size_t, P, C.c_size_t, P],
    "qnt_model_file_tensor_bytes": [P, C.c_size_t, P, P],
    "qnt_model_file_tensor": [P, C.c_size_t, P],
    "qnt_tensor_create": [C.c_int32, P, C.c_size_t, P, P],
    "qnt_tensor_rank": [P, P],
    "qnt_tensor_shape": [P, P, C.c_size_t],
    "qnt_tensor_copy_to": [P, P, C.c_size_t],
    "qnt_tensor_destroy": [P],
    "qnt_dequantize": [P, P, P],
    "qnt_model_file_tensor_input_qparams": [P, C.c_size_t, P],
    "qnt_qparams_scales": [P, P, C.c_size_t],
    "qnt_qparams_zero_points": [P, P, C.c_size_t],
    "qnt_qparams_destroy": [P],
})
qnt_cmd = sys.argv[2]
work = sys.argv[3]
os.makedirs(work, exist_ok=True)
_c = Checks(lib)
check, ok = _c.check, _c.ok


class QntFile:
    def __init__(self, path):
        self.h = P()
        ok(lib.qnt_model_file_open(path.encode(), C.byref(self.h)), path)

    def __del__(self):
        lib.qnt_model_file_destroy(self.h)

    def count(self):
        n = C.c_size_t()
        ok(lib.qnt_model_file_tensor_count(self.h, C.byref(n)), "count")
        return n.value

    def entry(self, i):
        s = C.c_char_p()
        ok(lib.qnt_model_file_tensor_name(self.h, i, C.byref(s)), "name")
        name = s.value.decode()
        ok(lib.qnt_model_file_tensor_type(self.h, i, C.byref(s)), "type")
        dtype = s.value.decode()
        rank = C.c_size_t()
        dims = (C.c_int64 * 8)()
        ok(lib.qnt_model_file_tensor_shape(self.h, i, dims, 8, C.byref(rank)), "shape")
        data = P()
        n = C.c_size_t()
        ok(lib.qnt_model_file_tensor_bytes(self.h, i, C.byref(data), C.byref(n)), "bytes")
        raw = C.string_at(data, n.value) if n.value else b""
        return name, dtype, list(dims[: rank.value]), raw

    def dequantized(self, name):
        """qnt_dequantize of the named (quantized) tensor, as float32."""
        i = C.c_size_t()
        ok(lib.qnt_model_file_tensor_find(self.h, name.encode(), C.byref(i)), name)
        q = P()
        ok(lib.qnt_model_file_tensor(self.h, i.value, C.byref(q)), name)
        rank = C.c_size_t()
        ok(lib.qnt_tensor_rank(q, C.byref(rank)), name)
        dims = (C.c_int64 * 8)()
        ok(lib.qnt_tensor_shape(q, dims, 8), name)
        y = P()
        ok(lib.qnt_tensor_create(1, dims, rank.value, None, C.byref(y)), name)  # f32
        ok(lib.qnt_dequantize(None, q, y), name)
        shape = list(dims[: rank.value])
        out = np.zeros(shape, dtype=np.float32)
        ok(lib.qnt_tensor_copy_to(y, out.ctypes.data, out.nbytes), name)
        lib.qnt_tensor_destroy(y)
        lib.qnt_tensor_destroy(q)
        return out


ST_OF_TORCH = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.float64: "F64",
               torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
               torch.uint8: "U8", torch.bool: "BOOL"}


def torch_bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


# 1. Files written by safetensors open in qnt with the same entries.
torch.manual_seed(0)
tensors = {
    "model.embed_tokens.weight": torch.randn(50, 32),
    "layers.0.attn.q_proj.weight": torch.randn(32, 32).to(torch.bfloat16),
    "layers.0.attn.k_proj.weight": torch.randn(24, 32).to(torch.float16),
    "layers.0.mlp.up_proj.weight": torch.randn(64, 32),
    "layers.0.mlp.down_proj.weight": torch.randn(32, 64) * 0.02,
    "layers.0.input_layernorm.weight": torch.ones(32),
    "position_ids": torch.arange(7, dtype=torch.int64),
    "f64": torch.randn(3, dtype=torch.float64),
    "i32": torch.tensor([1, -2, 3], dtype=torch.int32),
    "i16": torch.tensor([[1, -2], [3, 4]], dtype=torch.int16),
    "i8": torch.tensor([-128, 127], dtype=torch.int8),
    "u8": torch.tensor([0, 255], dtype=torch.uint8),
    "mask": torch.tensor([True, False]),
    "scalar": torch.tensor(2.5),
    "empty": torch.zeros(0, 4),
}
src = os.path.join(work, "model.safetensors")
save_file(tensors, src, metadata={"format": "pt", "note": "written by safetensors"})
f = QntFile(src)
check(f.count() == len(tensors), f"{src}: {f.count()} entries, {len(tensors)} written")
seen = {}
for i in range(f.count()):
    name, dtype, shape, raw = f.entry(i)
    seen[name] = (dtype, shape, raw)
for name, t in tensors.items():
    got = seen.get(name)
    check(got is not None, f"{name} missing in qnt's listing")
    if got is None:
        continue
    check(got[0] == ST_OF_TORCH[t.dtype], f"{name}: dtype {got[0]} vs {ST_OF_TORCH[t.dtype]}")
    check(got[1] == list(t.shape), f"{name}: shape {got[1]} vs {list(t.shape)}")
    check(got[2] == torch_bytes(t), f"{name}: bytes differ")
info = subprocess.run([qnt_cmd, "info", src], capture_output=True, text=True)
check(info.returncode == 0 and "layers.0.mlp.up_proj.weight" in info.stdout and "note = written by safetensors"
      in info.stdout, f"qnt info: {info.returncode} {info.stderr}")
del f

# A sharded model: two shards written by safetensors and an index as transformers writes it.
shard_dir = os.path.join(work, "sharded")
os.makedirs(shard_dir, exist_ok=True)
names = list(tensors)
parts = [names[: len(names) // 2], names[len(names) // 2:]]
weight_map = {}
for k, part in enumerate(parts):
    fn = f"model-{k + 1:05d}-of-00002.safetensors"
    save_file({n: tensors[n] for n in part}, os.path.join(shard_dir, fn), metadata={"format": "pt"})
    weight_map.update({n: fn for n in part})
with open(os.path.join(shard_dir, "model.safetensors.index.json"), "w") as fh:
    json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, fh)
f = QntFile(shard_dir)
check(f.count() == len(tensors), f"sharded: {f.count()} entries")
for i in range(f.count()):
    name, dtype, shape, raw = f.entry(i)
    check(raw == torch_bytes(tensors[name]), f"sharded {name}: bytes differ")
del f

# 2. `qnt quantize` output loads in safetensors and PyTorch, and means what qnt says.
NIBBLE_SIGNED = {"i4": True, "u4": False}
for qtype, extra in [("int8", []), ("uint8", []), ("int4", []), ("uint4", ["--block", "64"]),
                     ("int4", ["--block", "16"]), ("nf4", []), ("int4", ["--per-channel", "--method", "mse"]),
                     ("uint8", ["--method", "percentile", "--percentile", "99.5"])]:
    out = os.path.join(work, f"q_{qtype}_{'_'.join(extra)}.safetensors")
    cmd = [qnt_cmd, "quantize", src, out, "--type", qtype, "--quiet"] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    check(r.returncode == 0, f"{' '.join(cmd)}: {r.stderr}")
    if r.returncode != 0:
        continue
    arrays = np_load(out)
    tt = torch_load(out)
    check(set(arrays) == set(tt), f"{out}: numpy and torch see different entries")
    with open(out, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        meta = json.loads(fh.read(n))["__metadata__"]
    check(meta.get("format") == "pt" and meta.get("note") == "written by safetensors", f"{out}: metadata lost")
    qf = QntFile(out)
    for name, t in tensors.items():
        key = "qnt." + name
        if key not in meta:  # kept: the input's bytes
            check(torch_bytes(tt[name]) == torch_bytes(t), f"{out}: kept {name} differs")
            continue
        fields = dict(kv.split("=", 1) for kv in meta[key].split(";"))
        shape = [int(d) for d in fields["shape"].split(",")]
        check(shape == list(t.shape), f"{out}: {name} logical shape {shape}")
        dt = fields["dtype"]
        codes = arrays[name]
        scales = arrays[name + ".qnt_scales"]
        check(scales.dtype == np.float32, f"{out}: {name} scales are {scales.dtype}")
        zps = arrays.get(name + ".qnt_zero_points", np.zeros_like(scales, dtype=np.int32))
        count = int(np.prod(shape))
        if dt in NIBBLE_SIGNED:
            b = codes.astype(np.int32)
            q = np.stack([b & 15, b >> 4], axis=1).reshape(-1)[:count]
            if NIBBLE_SIGNED[dt]:
                q = np.where(q >= 8, q - 16, q)
        elif dt in ("i8", "u8"):
            q = codes.astype(np.int32).reshape(-1)
        else:  # NF4: the codebook, not the integer rule; checked by qnt's own tests
            check(dt == "nf4", f"{out}: unexpected dtype {dt}")
            continue
        q = q.reshape(shape)
        if fields["granularity"] == "axis":
            s = scales.reshape(-1, 1)
            z = zps.reshape(-1, 1)
        else:
            blk = int(fields["block"])
            per_row = -(-shape[-1] // blk)
            idx = np.arange(shape[-1]) // blk
            s = scales.reshape(-1, per_row)[:, idx]
            z = zps.reshape(-1, per_row)[:, idx]
        want = (q - z).astype(np.float32) * s.astype(np.float32)
        got = qf.dequantized(name)
        check(np.array_equal(want.view(np.uint32), got.view(np.uint32)),
              f"{out}: {name} dequantized in numpy differs from qnt_dequantize")
        # and it is near the weights it came from (a quantization, not noise)
        ref = t.float().numpy()
        sqnr = 10 * np.log10(np.sum(ref * ref) / max(np.sum((ref - got) ** 2), 1e-30))
        check(sqnr > (30 if dt in ("i8", "u8") else 14), f"{out}: {name} SQNR {sqnr:.1f} dB")
    del qf

# 3. `qnt quantize --calibrate`: the input qparams stored with the weights are PyTorch's
#    MinMaxObserver's for min-max (uint8 affine, int8 symmetric), for samples named by the layer
#    or by its weight, in F32, F16 and BF16; they come back through the C API with the bits of
#    the text, survive a second quantize (to safetensors and to GGUF), and bad data is refused.
from torch.ao.quantization import MinMaxObserver  # noqa: E402

acts = {
    "layers.0.mlp.up_proj": torch.randn(4, 9, 32) * 2.5 + 0.7,          # the layer's name
    "layers.0.mlp.down_proj.weight": torch.relu(torch.randn(40, 64)).to(torch.float16),  # the weight's
    "layers.0.attn.q_proj": (torch.randn(17, 32) * 0.01).to(torch.bfloat16),
}
data = os.path.join(work, "acts.safetensors")
save_file(acts, data)


def input_qparams(path, weight):
    qf = QntFile(path)
    i = C.c_size_t()
    ok(lib.qnt_model_file_tensor_find(qf.h, weight.encode(), C.byref(i)), weight)
    qp = P()
    ok(lib.qnt_model_file_tensor_input_qparams(qf.h, i, C.byref(qp)), weight)
    if not qp.value:
        return None
    s, z = C.c_float(), C.c_int32()
    ok(lib.qnt_qparams_scales(qp, C.byref(s), 1), weight)
    ok(lib.qnt_qparams_zero_points(qp, C.byref(z), 1), weight)
    lib.qnt_qparams_destroy(qp)
    return np.float32(s.value), int(z.value)


for act_type, tdtype, scheme in [("uint8", torch.quint8, torch.per_tensor_affine),
                                 ("int8", torch.qint8, torch.per_tensor_symmetric)]:
    out = os.path.join(work, f"calibrated_{act_type}.safetensors")
    r = subprocess.run([qnt_cmd, "quantize", src, out, "--type", "int8", "--calibrate", data,
                        "--act-type", act_type], capture_output=True, text=True)
    check(r.returncode == 0, f"--calibrate {act_type}: {r.stderr}")
    check("inputs calibrated from" in r.stdout, f"--calibrate {act_type}: no inputs table in {r.stdout!r}")
    if r.returncode != 0:
        continue
    with open(out, "rb") as fh:
        n = int.from_bytes(fh.read(8), "little")
        meta = json.loads(fh.read(n))["__metadata__"]
    for layer, x in acts.items():
        weight = layer if layer.endswith(".weight") else layer + ".weight"
        obs = MinMaxObserver(dtype=tdtype, qscheme=scheme)
        obs(x.float())
        ts, tz = obs.calculate_qparams()
        got = input_qparams(out, weight)
        check(got is not None, f"{out}: no input qparams for {weight}")
        if got is None:
            continue
        want_s = np.float32(ts.item())
        check(got[0].view(np.uint32) == want_s.view(np.uint32) and got[1] == int(tz.item()),
              f"{out}: {weight} input qparams {got} vs MinMaxObserver ({want_s}, {int(tz.item())})")
        fields = dict(kv.split("=", 1) for kv in meta["qnt:input." + weight].split(";"))
        check(np.float32(fields["scale"]).view(np.uint32) == got[0].view(np.uint32),
              f"{out}: {weight}: the text {fields['scale']} is not the scale read back")
    # carried through a second quantize; and GGUF (of the float tensors: GGUF has no U8, BOOL)
    floats = os.path.join(work, "floats.safetensors")
    save_file({k: v for k, v in tensors.items() if v.is_floating_point() and v.dtype != torch.float64}, floats)
    gg = os.path.join(work, act_type + ".gguf")
    steps = [(out, os.path.join(work, act_type + "again.safetensors"), "int4", []),
             (floats, gg, "q8_0", ["--calibrate", data, "--act-type", act_type]),
             (gg, os.path.join(work, act_type + "from_gguf.safetensors"), "uint8", [])]
    for a, b, qtype, extra in steps:
        r = subprocess.run([qnt_cmd, "quantize", a, b, "--type", qtype, "--quiet"] + extra, capture_output=True,
                           text=True)
        check(r.returncode == 0, f"{b}: {r.stderr}")
        if r.returncode == 0:
            for layer in acts:
                weight = layer if layer.endswith(".weight") else layer + ".weight"
                check(input_qparams(b, weight) == input_qparams(out, weight), f"{b}: {weight} input qparams differ")
# the histogram methods run on the same samples (their results are the calibrator's: its own tests)
for method in ("percentile", "entropy", "mse", "adaptive"):
    out = os.path.join(work, f"calibrated_{method}.safetensors")
    r = subprocess.run([qnt_cmd, "quantize", src, out, "--type", "int8", "--calibrate", data, "--method", method,
                        "--quiet"], capture_output=True, text=True)
    check(r.returncode == 0, f"--method {method}: {r.stderr}")
    if r.returncode == 0:
        mm = input_qparams(os.path.join(work, "calibrated_uint8.safetensors"), "layers.0.mlp.up_proj.weight")
        got = input_qparams(out, "layers.0.mlp.up_proj.weight")
        check(got is not None and 0 < got[0] <= mm[0] * 1.0001, f"--method {method}: scale {got} vs min-max {mm}")
bad_data = {
    "no such layer": {"layers.9.mlp": torch.randn(3, 32)},
    "wrong width": {"layers.0.mlp.up_proj": torch.randn(3, 31)},
    "not a matrix": {"layers.0.input_layernorm": torch.randn(3, 32)},
    "integer samples": {"layers.0.mlp.up_proj": torch.ones(3, 32, dtype=torch.int32)},
    "twice": {"layers.0.mlp.up_proj": torch.randn(3, 32), "layers.0.mlp.up_proj.weight": torch.randn(3, 32)},
}
for what, d in bad_data.items():
    path = os.path.join(work, "bad_acts.safetensors")
    save_file(d, path)
    out = os.path.join(work, "bad_calibrated.safetensors")
    r = subprocess.run([qnt_cmd, "quantize", src, out, "--type", "int8", "--calibrate", path], capture_output=True,
                       text=True)
    check(r.returncode != 0 and "qnt:" in r.stderr and not os.path.exists(out),
          f"--calibrate with {what}: rc {r.returncode}, {r.stderr!r}")
r = subprocess.run([qnt_cmd, "quantize", src, os.path.join(work, "x.safetensors"), "--type", "int8", "--calibrate",
                    data, "--act-type", "int4"], capture_output=True, text=True)
check(r.returncode != 0 and "--act-type" in r.stderr, f"--act-type int4: {r.stderr!r}")

sys.exit(_c.summary("model files"))
