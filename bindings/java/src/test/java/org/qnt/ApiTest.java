package org.qnt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

/** The rest of the API: the library facts, the context, tensors over direct buffers, the ops. */
class ApiTest {
  @Test
  void libraryFacts() {
    Library.abiCheck();
    assertEquals(Limits.ABI_VERSION, Library.abiVersion());
    assertEquals(Limits.VERSION_NUMBER, Library.version());
    assertEquals(Limits.VERSION_MAJOR + "." + Limits.VERSION_MINOR + "." + Limits.VERSION_PATCH,
        Library.versionString());
    assertTrue(Library.buildInfo().contains("version="));
    assertEquals(4, Library.dtypeBits(DType.I4));
    assertEquals("nf4", Library.dtypeName(DType.NF4));
    assertEquals(-8, Library.dtypeMin(DType.I4));
    assertEquals(15, Library.dtypeMax(DType.U4));
    float[] book = Library.nf4Codebook();
    assertEquals(-1.0f, book[0]);
    assertEquals(1.0f, book[15]);
    assertEquals("avx2", Library.isaName(Isa.AVX2));
    assertEquals("avx512vnni", Library.cpuFeatureName(CpuFeature.AVX512VNNI));
    assertTrue(Library.statusString(Status.SHAPE_MISMATCH).startsWith("QNT_ERR_SHAPE_MISMATCH"));
  }

  @Test
  void deviceTensorsAndCopies() {
    float[] v = {1f, -2f, 3.5f, 0.25f};
    try (Context ctx = new Context();
        Tensor src = Tensor.fromFloats(v, new long[] {2, 2});
        Tensor dst = Tensor.onDevice(DType.F32, new long[] {2, 2}, null, DeviceType.CPU, 0)) {
      dst.copyFromTensor(ctx, src);
      assertArrayEquals(v, dst.toFloatArray());
      if (ctx.getCudaDeviceCount() == 0) {
        org.junit.jupiter.api.Assertions.assertThrows(QntException.NoDevice.class,
            () -> Tensor.onDevice(DType.F16, new long[] {2}, null, DeviceType.CUDA, 0));
        org.junit.jupiter.api.Assertions.assertThrows(QntException.NoDevice.class,
            () -> Tensor.wrapDeviceAddress(DType.F32, new long[] {2}, null, DeviceType.CUDA, 0,
                16, 8));
      }
    }
  }

  @Test
  void context() {
    try (Context ctx = new Context()) {
      ctx.setNumThreads(2);
      assertEquals(2, ctx.getNumThreads());
      ctx.setMaxIsa(Isa.REFERENCE);
      assertEquals(Isa.REFERENCE, ctx.getIsa());
      assertTrue(ctx.getKernels().contains("quantize.i8"));
      assertTrue(ctx.getLogicalCpuCount() >= 1);
      assertTrue(ctx.getPhysicalCoreCount() >= 0);
      assertTrue(ctx.getCacheSize(1) >= 0);
      assertTrue(ctx.getCpuFeatures() >= 0);
      ctx.synchronize();
      if (ctx.getCudaDeviceCount() == 0) {
        try {
          ctx.setCudaStream(0, 0);
        } catch (QntException.NoDevice expected) {
          // no device here
        }
      } else {
        assertTrue(ctx.getCudaComputeCapabilityMajor(0) >= 1);
        assertTrue(ctx.getCudaComputeCapabilityMinor(0) >= 0);
      }
    }
  }

  @Test
  void directBuffersAreWrappedWithoutCopying() {
    ByteBuffer in = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    in.asFloatBuffer().put(new float[] {0.5f, -1.0f, 2.0f, 100.0f});
    ByteBuffer out = ByteBuffer.allocateDirect(4);
    try (Context ctx = new Context();
        QParams qp = QParams.perTensor(DType.I8, 0.5f, 0);
        Tensor x = Tensor.wrap(DType.F32, new long[] {4}, in, null);
        Tensor q = Tensor.wrap(DType.I8, new long[] {4}, out, qp)) {
      ctx.quantize(x, q);
      assertEquals(1, out.get(0)); // written straight into the buffer
      assertEquals(-2, out.get(1));
      assertEquals(4, out.get(2));
      assertEquals(127, out.get(3));
      in.asFloatBuffer().put(0, 3.0f); // and read straight from it
      ctx.quantize(x, q);
      assertEquals(6, out.get(0));
      assertFalse(x.isReadOnly());
      assertEquals(DeviceType.CPU, x.getDeviceType());
      assertEquals(0, x.getDeviceId());
      assertTrue(x.getDataAddress() != 0);
    }
    try (QParams qp = QParams.perTensor(DType.I8, 1.0f, 0)) {
      org.junit.jupiter.api.Assertions.assertThrows(QntException.ShapeMismatch.class,
          () -> Tensor.wrap(DType.I8, new long[] {4}, ByteBuffer.allocateDirect(5), qp));
    }
    try {
      Tensor.wrap(DType.I8, new long[] {4}, ByteBuffer.allocate(4), null);
      throw new AssertionError("a heap buffer was accepted");
    } catch (IllegalArgumentException expected) {
      // heap buffers have no stable address
    }
  }

  @Test
  void tensorsAndParameters() {
    try (QParams qp = QParams.perBlock(DType.I4, 1, 32, new float[] {0.1f, 0.2f, 0.3f, 0.4f})) {
      assertEquals(DType.I4, qp.getDtype());
      assertEquals(Granularity.PER_BLOCK, qp.getGranularity());
      assertEquals(Scheme.SYMMETRIC, qp.getScheme());
      assertEquals(1, qp.getAxis());
      assertEquals(32, qp.getBlockSize());
      assertEquals(4, qp.getScaleCount());
      assertArrayEquals(new float[] {0.1f, 0.2f, 0.3f, 0.4f}, qp.getScales());
      assertArrayEquals(new int[] {0, 0, 0, 0}, qp.getZeroPoints());
      try (Tensor t = Tensor.fromBytes(DType.I4, new byte[64], new long[] {2, 64}, qp)) {
        assertArrayEquals(new long[] {2, 64}, t.getShape());
        assertEquals(128, t.getElementCount());
        assertEquals(64, t.getByteSize()); // two int4 values a byte
        t.copyFromBytes(new byte[64]);
      }
    }
    try (Tensor s = Tensor.fromShorts(DType.I16, new short[] {1, -2}, new long[] {2}, null);
        Tensor i = Tensor.fromInts(DType.I32, new int[] {7, 8, 9}, new long[] {3}, null)) {
      assertArrayEquals(new short[] {1, -2}, s.toShortArray());
      assertArrayEquals(new int[] {7, 8, 9}, i.toIntArray());
      s.copyFromShorts(new short[] {3, 4});
      i.copyFromInts(new int[] {1, 2, 3});
      assertArrayEquals(new short[] {3, 4}, s.toShortArray());
      assertNull(i.getQParams());
      // DLPack round trip by address: the import owns the export.
      try (Tensor back = Tensor.fromDlpack(i.toDlpack(1), 1, null)) {
        assertArrayEquals(new int[] {1, 2, 3}, back.toIntArray());
      }
    }
  }

  @Test
  void operators() {
    try (Context ctx = new Context();
        QParams xq = QParams.perTensor(DType.U8, 0.1f, 10);
        QParams wq = QParams.perTensor(DType.I8, 0.02f, 0);
        Tensor a = Tensor.fromBytes(DType.U8, new byte[] {0, 10, 20, (byte) 255}, new long[] {4}, xq);
        Tensor r = new Tensor(DType.U8, new long[] {4}, xq);
        Tensor sum = new Tensor(DType.U8, new long[] {4}, xq)) {
      ctx.qrelu(a, r);
      assertArrayEquals(new byte[] {10, 10, 20, (byte) 255}, r.toByteArray());
      ctx.qreluClamp(a, 6.0f, r);
      assertArrayEquals(new byte[] {10, 10, 20, 70}, r.toByteArray());
      ctx.qadd(a, a, null, sum);
      ctx.requantize(a, r);
      // conv: 1x1x3x3 input, one 1x1x2x2 filter of ones, stride 1: sums of 2x2 windows
      try (Tensor x = Tensor.fromBytes(DType.U8, new byte[] {11, 12, 13, 14, 15, 16, 17, 18, 19},
               new long[] {1, 1, 3, 3}, xq);
          Tensor w = Tensor.fromBytes(DType.I8, new byte[] {1, 1, 1, 1}, new long[] {1, 1, 2, 2}, wq);
          OpDesc desc = new OpDesc()) {
        long[] shape = Library.conv2dOutputShape(x, w, desc);
        assertArrayEquals(new long[] {1, 1, 2, 2}, shape);
        try (Tensor y = new Tensor(DType.I32, shape); Tensor y2 = new Tensor(DType.I32, shape);
            Prepared conv = ctx.prepareConv2d(w, null, desc)) {
          ctx.qconv2d(x, w, null, desc, y);
          conv.run(ctx, x, y2);
          assertArrayEquals(new int[] {1 + 2 + 4 + 5, 2 + 3 + 5 + 6, 4 + 5 + 7 + 8, 5 + 6 + 8 + 9}, y.toIntArray());
          assertArrayEquals(y.toIntArray(), y2.toIntArray());
        }
      }
      // matmul [1, 2] x [2, 2], static and dynamic linear, error report, dynamic quantization
      try (Tensor am = Tensor.fromBytes(DType.U8, new byte[] {12, 14}, new long[] {1, 2}, xq);
          Tensor b = Tensor.fromBytes(DType.I8, new byte[] {1, 2, 3, 4}, new long[] {2, 2}, wq);
          Tensor acc = new Tensor(DType.I32, new long[] {1, 2});
          Prepared mm = ctx.prepareMatmul(b, null, null)) {
        ctx.qmatmul(am, b, null, acc);
        assertArrayEquals(new int[] {2 * 1 + 4 * 3, 2 * 2 + 4 * 4}, acc.toIntArray());
        mm.run(ctx, am, acc);
        assertArrayEquals(new int[] {14, 20}, acc.toIntArray());
        try (Prepared st = ctx.prepareLinearStatic(b, null, xq, null, null);
            Tensor yf = new Tensor(DType.F32, new long[] {1, 2});
            Tensor xf = Tensor.fromFloats(new float[] {1.0f, -1.0f}, new long[] {1, 2});
            Tensor yd = new Tensor(DType.F32, new long[] {1, 2})) {
          st.run(ctx, am, yf);
          assertEquals(PreparedKind.LINEAR_STATIC, st.getKind());
          assertTrue(st.getIsa() != Isa.NATIVE);
          ctx.linearDynamic(xf, b, null, null, yd);
          ctx.linearWeightOnly(xf, b, null, yd);
          try (ErrorReport rep = ctx.errorReport(xf, wq); Tensor dq = ctx.dynamicQuantizeLinear(xf)) {
            assertEquals(2, rep.getCount());
            assertTrue(rep.getSqnr_db() > 0);
            assertEquals(DType.U8, dq.getDtype());
          }
          // 0.02 lies between 2^-6 and 2^-5: rounded up without data; with x = {1, -1} both
          // hold the values exactly, and a tie takes the larger.
          try (QParams up = ctx.pow2Scales(wq, null); QParams chosen = ctx.pow2Scales(wq, xf)) {
            assertArrayEquals(new float[] {0.03125f}, up.getScales());
            assertArrayEquals(new float[] {0.03125f}, chosen.getScales());
          }
          // Mixed precision: int8 keeps 30 dB on these weights, int4 in blocks of 32 does not.
          float[] wv = new float[4 * 64];
          for (int i = 0; i < wv.length; ++i) wv[i] = (float) Math.sin(i * 0.37) * (1 + i % 7);
          try (Recommender rec = new Recommender();
              Tensor wt = Tensor.fromFloats(wv, new long[] {4, 64})) {
            rec.addFormat("i8");
            rec.addFormat("i4.b32");
            rec.addTensor(ctx, "fc1", wt);
            float[] imp = new float[64];
            java.util.Arrays.fill(imp, 1.0f);
            rec.addTensorWeighted(ctx, "fc2", wt, imp);
            rec.run(Budget.MIN_SQNR, 30.0);
            assertEquals(2, rec.getTensorCount());
            assertEquals("fc2", rec.getChoiceName(1));
            assertEquals("i8", rec.getChoiceFormat(0));
            assertEquals(4 * 64 + 4 * 4, rec.getChoiceBytes(0));
            assertEquals(rec.getChoiceSqnr(0), rec.getChoiceSqnr(1));  // importances all 1
            assertTrue(rec.getReport().contains("runner-up"));
            rec.run(Budget.BYTES, 4 * 32 + 4 * 2 * 4 + 4 * 64 + 4 * 4);  // one of each fits
            assertTrue(rec.getChoiceFormat(0).equals("i8") != rec.getChoiceFormat(1).equals("i8"));
            assertThrows(QntException.InvalidArgument.class, () -> rec.addFormat("i3"));
          }
          // Tuning: the same bits, and a table that round-trips.
          try (Tensor acc2 = new Tensor(DType.I32, new long[] {1, 2})) {
            ctx.setTuning(Tuning.MEASURE);
            assertEquals(Tuning.MEASURE, ctx.getTuning());
            ctx.qmatmul(am, b, null, acc2);
            ctx.setTuning(Tuning.OFF);
            assertArrayEquals(acc.toIntArray(), acc2.toIntArray());
            String table = Library.tuningExport();
            assertTrue(table.startsWith("qnt-tuning 1\n"));
            Library.tuningClear();
            Library.tuningImport(table);
            assertEquals(table, Library.tuningExport());
            assertThrows(QntException.CorruptData.class, () -> Library.tuningImport("x"));
          }
        }
      }
      try (Tensor x = Tensor.fromFloats(new float[] {-3, 1, 2, 5}, new long[] {4});
          QParams r2 = ctx.calibrateMinmaxRange(x, DType.U8, Scheme.AFFINE, Granularity.PER_TENSOR, 0, 0, 0, 127);
          Calibrator c = new Calibrator(CalibMethod.ADAPTIVE, DType.I8, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0)) {
        assertEquals(1, r2.getScaleCount());
        c.setOption(CalibOption.BINS, 256);
        c.observe(ctx, x);
        try (QParams p = c.compute(ctx)) {
          assertEquals(1, p.getScaleCount());
        }
        assertTrue(c.getChosenMethod() >= CalibMethod.MINMAX);
        assertEquals(4, c.getFiniteCount());
        assertEquals(0, c.getNanCount() + c.getInfCount());
        c.reset();
        assertEquals(0, c.getFiniteCount());
      }
    }
  }
}
