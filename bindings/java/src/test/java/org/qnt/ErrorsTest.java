package org.qnt;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Every failure arrives as the exception class of its status, with the library's message. */
class ErrorsTest {
  @Test
  void invalidParametersThrowInvalidQParamsWithTheMessage() {
    QntException.InvalidQParams e =
        assertThrows(QntException.InvalidQParams.class, () -> QParams.perTensor(DType.I8, -1.0f, 0));
    assertEquals(Status.INVALID_QPARAMS, e.getStatus());
    assertEquals(Library.lastErrorMessage(), e.getMessage());
    assertTrue(e.getMessage().contains("scale"), e.getMessage());
  }

  @Test
  void shapeAndDtypeMismatches() {
    try (Context ctx = new Context();
        Tensor x = new Tensor(DType.F32, new long[] {2, 3});
        QParams qp = QParams.perTensor(DType.I8, 0.5f, 0);
        Tensor y = new Tensor(DType.I8, new long[] {3, 2}, qp);
        Tensor bare = new Tensor(DType.I8, new long[] {2, 3})) {
      QntException e = assertThrows(QntException.ShapeMismatch.class, () -> ctx.quantize(x, y));
      assertFalse(e.getMessage().isEmpty());
      assertThrows(QntException.InvalidQParams.class, () -> ctx.quantize(x, bare));
      // Arrays of the wrong length: too short (the library's check), too long (the binding's);
      // a typed copy of another dtype.
      assertThrows(QntException.BufferTooSmall.class,
          () -> Tensor.fromFloats(new float[5], new long[] {2, 3}));
      assertThrows(QntException.ShapeMismatch.class,
          () -> Tensor.fromFloats(new float[7], new long[] {2, 3}));
      assertThrows(QntException.DtypeMismatch.class, () -> y.toFloatArray());
      assertThrows(QntException.ShapeMismatch.class, () -> x.copyFromFloats(new float[7]));
      assertThrows(QntException.ShapeMismatch.class,
          () -> QParams.perAxis(DType.I8, 0, new float[] {1, 1}, new int[] {0}));
    }
  }

  @Test
  void optionsOutOfRangeAndUnsupportedCases() {
    try (OpDesc d = new OpDesc(); Context ctx = new Context()) {
      assertThrows(QntException.InvalidArgument.class, () -> d.set(OpOption.STRIDE_H, 0));
      assertEquals(1, d.get(OpOption.STRIDE_H), "unchanged on failure");
      assertThrows(QntException.InvalidArgument.class, () -> ctx.setNumThreads(-1));
      assertThrows(QntException.Unsupported.class,
          () -> new Calibrator(CalibMethod.MINMAX, DType.NF4, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0));
      byte[] junk = {1, 2, 3, 4, 5, 6, 7, 8};
      assertThrows(QntException.CorruptData.class, () -> Calibrator.deserialize(junk));
      if (ctx.getCudaDeviceCount() == 0) {
        assertThrows(QntException.NoDevice.class, () -> ctx.getCudaComputeCapabilityMajor(0));
      }
    }
  }

  @Test
  void aClosedHandleIsANullPointerError() {
    try (Context ctx = new Context(); Tensor y = new Tensor(DType.F32, new long[] {2})) {
      Tensor x = new Tensor(DType.F32, new long[] {2});
      x.close();
      x.close(); // twice is fine
      assertThrows(QntException.NullPointer.class, () -> ctx.dequantize(x, y));
    }
  }

  @Test
  void unknownStatusesMapToUnknownAndNeverToAnotherClass() {
    QntException e = QntException.of(999, "from a newer library");
    assertTrue(e instanceof QntException.Unknown);
    assertEquals(999, e.getStatus());
    assertEquals("unknown qnt_status", Library.statusString(999));
    for (int s = 1; s <= 12; ++s) {
      QntException known = QntException.of(s, "m");
      assertFalse(known instanceof QntException.Unknown, "status " + s);
      assertEquals(s, known.getStatus());
    }
    // Values the binding has no name for pass through as ints.
    assertEquals("invalid", Library.dtypeName(99));
    assertEquals("invalid", Library.isaName(99));
  }
}
