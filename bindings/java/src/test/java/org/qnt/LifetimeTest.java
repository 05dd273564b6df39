package org.qnt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.Test;

/**
 * Handles closed or left to the garbage collector, in any order: the library's own live-handle
 * counter must come back to where it started.
 */
class LifetimeTest {
  /** Runs the collector until the live handles fall to {@code target} (or a time limit). */
  static long settle(long target) throws InterruptedException {
    long live = Library.liveHandles();
    for (int i = 0; i < 200 && live > target; ++i) {
      System.gc();
      System.runFinalization();
      Thread.sleep(20);
      live = Library.liveHandles();
    }
    return live;
  }

  @Test
  void oneHundredThousandHandlesClosedOrCollected() throws InterruptedException {
    long base = settle(0);
    try (Context ctx = new Context()) {
      float[] data = {0.5f, -1.0f, 2.0f, 0.25f};
      for (int i = 0; i < 100_000 / 4; ++i) {
        // Four handles per round: parameters, two tensors and one of a rotating kind.
        QParams qp = QParams.perTensor(DType.I8, 0.05f, 0);
        Tensor x = Tensor.fromFloats(data, new long[] {4});
        Tensor q = new Tensor(DType.I8, new long[] {4}, qp);
        AutoCloseable extra;
        switch (i % 3) {
          case 0: extra = new OpDesc(); break;
          case 1: extra = q.getQParams(); break;
          default: extra = new Calibrator(CalibMethod.MINMAX, DType.I8, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0);
        }
        ctx.quantize(x, q);
        if (i % 2 == 0) {
          // closed, in an order where the parameters go before the tensor that uses them
          try {
            qp.close();
            q.close();
            extra.close();
            x.close();
          } catch (Exception e) {
            throw new AssertionError(e);
          }
        } // else left to the garbage collector
      }
    }
    assertEquals(base, settle(base), "handles leaked");
  }

  @Test
  void objectsOthersDependOnStayAlive() {
    try (Context ctx = new Context()) {
      Tensor q;
      try (QParams qp = QParams.perAxis(DType.U8, 0, new float[] {0.1f, 0.2f}, new int[] {3, 4})) {
        q = new Tensor(DType.U8, new long[] {2, 2}, qp);
      } // the parameters' handle is closed; the tensor keeps its own reference
      try (Tensor x = Tensor.fromFloats(new float[] {0.1f, 0.2f, 0.4f, 0.8f}, new long[] {2, 2});
          Tensor back = new Tensor(DType.F32, new long[] {2, 2});
          QParams again = q.getQParams()) {
        ctx.quantize(x, q);
        ctx.dequantize(q, back);
        assertNotNull(again);
        assertArrayEquals(new int[] {3, 4}, again.getZeroPoints());
        assertArrayEquals(new byte[] {4, 5, 6, 8}, q.toByteArray());
      }
      q.close();
      // A prepared operator outlives the weights and the context it was made with.
      Prepared op;
      try (Context c2 = new Context();
          QParams wq = QParams.perTensor(DType.I8, 0.01f, 0);
          Tensor w = Tensor.fromBytes(DType.I8, new byte[] {1, 2, 3, 4, 5, 6}, new long[] {2, 3}, wq)) {
        op = c2.prepareLinearDynamic(w, null, null);
      }
      try (Tensor x = Tensor.fromFloats(new float[] {1, 1, 1}, new long[] {1, 3});
          Tensor y = new Tensor(DType.F32, new long[] {1, 2})) {
        op.run(ctx, x, y);
        assertEquals(2, y.toFloatArray().length);
      }
      op.close();
    }
  }
}
