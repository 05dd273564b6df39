package org.qnt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Quantize, dequantize and the prepared weight-only linear layer through the binding, against the
 * C API's results on the same inputs (written by bindings/swig/tests/reference.c into the
 * directory of the system property qnt.reference.dir), bit for bit.
 */
class ReferenceTest {
  private static final Path DIR = Paths.get(System.getProperty("qnt.reference.dir", "reference"));

  static byte[] read(String name) throws IOException {
    return Files.readAllBytes(DIR.resolve(name));
  }

  static float[] floats(String name) throws IOException {
    ByteBuffer b = ByteBuffer.wrap(read(name)).order(ByteOrder.LITTLE_ENDIAN);
    float[] out = new float[b.remaining() / 4];
    b.asFloatBuffer().get(out);
    return out;
  }

  /** Bits of floats, so that NaNs compare equal and -0.0 differs from 0.0. */
  static int[] bits(float[] v) {
    int[] out = new int[v.length];
    for (int i = 0; i < v.length; ++i) out[i] = Float.floatToRawIntBits(v[i]);
    return out;
  }

  @Test
  void quantizeAndDequantizeGiveTheCApisBits() throws IOException {
    long[] shape = {37, 131};
    List<String> cases = Files.readAllLines(DIR.resolve("cases.txt"));
    assertEquals(9, cases.size());
    try (Context ctx = new Context(); Tensor x = Tensor.fromFloats(floats("x.bin"), shape)) {
      for (String line : cases) {
        String[] f = line.trim().split(" ");
        int i = Integer.parseInt(f[0]), dtype = Integer.parseInt(f[1]);
        int scheme = Integer.parseInt(f[2]), granularity = Integer.parseInt(f[3]);
        long axis = Long.parseLong(f[4]), block = Long.parseLong(f[5]);
        boolean codebook = f[6].equals("1");
        try (QParams qp = codebook
                ? ctx.calibrateCodebook(x, dtype, granularity, axis, block)
                : ctx.calibrateMinmax(x, dtype, scheme, granularity, axis, block);
            Tensor q = new Tensor(dtype, shape, qp);
            Tensor back = new Tensor(DType.F32, shape)) {
          ctx.quantize(x, q);
          ctx.dequantize(q, back);
          assertArrayEquals(read("q" + i + ".bin"), q.toByteArray(), "case " + line);
          assertArrayEquals(bits(floats("back" + i + ".bin")), bits(back.toFloatArray()), "case " + line);
        }
      }
    }
  }

  @Test
  void preparedWeightOnlyLinearGivesTheCApisBits() throws IOException {
    try (Context ctx = new Context();
        Tensor w = Tensor.fromFloats(floats("w.bin"), new long[] {24, 160});
        Tensor x = Tensor.fromFloats(floats("wx.bin"), new long[] {3, 160});
        Tensor bias = Tensor.fromFloats(floats("bias.bin"), new long[] {24});
        QParams qp = ctx.calibrateMinmax(w, DType.I4, Scheme.SYMMETRIC, Granularity.PER_BLOCK, 1, 32);
        Tensor wq = new Tensor(DType.I4, new long[] {24, 160}, qp)) {
      ctx.quantize(w, wq);
      for (int mode : new int[] {WeightOnlyMode.F32, WeightOnlyMode.INT8_ACT, WeightOnlyMode.INT8_BLOCK}) {
        try (OpDesc desc = new OpDesc();
            Tensor y = new Tensor(DType.F32, new long[] {3, 24})) {
          desc.set(OpOption.WEIGHT_ONLY_MODE, mode);
          try (Prepared layer = ctx.prepareLinearWeightOnly(wq, bias, desc)) {
            assertEquals(PreparedKind.LINEAR_WEIGHT_ONLY, layer.getKind());
            assertTrue(layer.getPackedSize() > 0);
            layer.run(ctx, x, y);
          }
          assertArrayEquals(bits(floats("lin" + mode + ".bin")), bits(y.toFloatArray()), "mode " + mode);
        }
      }
    }
  }
}
