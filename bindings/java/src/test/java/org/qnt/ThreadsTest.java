package org.qnt;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Handles from several threads as the header allows: one context and one prepared operator
 * shared by every thread, each thread with its own tensors; a calibrator per thread, merged.
 */
class ThreadsTest {
  @Test
  void aSharedPreparedOperatorGivesEveryThreadTheSerialResult() throws Exception {
    int n = 32, k = 96, threads = 4, rounds = 50;
    float[] wf = new float[n * k];
    for (int i = 0; i < wf.length; ++i) wf[i] = (float) Math.sin(i) * 0.1f;
    try (Context ctx = new Context();
        Tensor w = Tensor.fromFloats(wf, new long[] {n, k});
        QParams qp = ctx.calibrateMinmax(w, DType.I4, Scheme.SYMMETRIC, Granularity.PER_BLOCK, 1, 32);
        Tensor wq = new Tensor(DType.I4, new long[] {n, k}, qp)) {
      ctx.quantize(w, wq);
      try (Prepared layer = ctx.prepareLinearWeightOnly(wq, null, null)) {
        float[][] inputs = new float[threads][k];
        float[][] serial = new float[threads][];
        for (int t = 0; t < threads; ++t) {
          for (int i = 0; i < k; ++i) inputs[t][i] = (float) Math.cos(i * (t + 1));
          try (Tensor x = Tensor.fromFloats(inputs[t], new long[] {1, k});
              Tensor y = new Tensor(DType.F32, new long[] {1, n})) {
            layer.run(ctx, x, y);
            serial[t] = y.toFloatArray();
          }
        }
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
          List<Future<float[]>> results = new ArrayList<>();
          for (int t = 0; t < threads; ++t) {
            final int id = t;
            results.add(pool.submit(() -> {
              float[] last = null;
              for (int r = 0; r < rounds; ++r) {
                try (Tensor x = Tensor.fromFloats(inputs[id], new long[] {1, k});
                    Tensor y = new Tensor(DType.F32, new long[] {1, n})) {
                  layer.run(ctx, x, y);
                  last = y.toFloatArray();
                }
              }
              return last;
            }));
          }
          for (int t = 0; t < threads; ++t) assertArrayEquals(serial[t], results.get(t).get());
        } finally {
          pool.shutdown();
        }
      }
    }
  }

  @Test
  void calibratorsPerThreadMergeToTheOnePassResult() throws Exception {
    int threads = 4;
    float[][] batches = new float[threads][1000];
    for (int t = 0; t < threads; ++t)
      for (int i = 0; i < 1000; ++i) batches[t][i] = (float) Math.sin(i * 0.37 + t) * (t + 1);
    try (Context ctx = new Context();
        Calibrator one = new Calibrator(CalibMethod.ENTROPY, DType.I8, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0)) {
      for (float[] b : batches) {
        try (Tensor x = Tensor.fromFloats(b, new long[] {1000})) {
          one.observe(ctx, x);
        }
      }
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      List<Future<byte[]>> shards = new ArrayList<>();
      for (float[] b : batches) {
        shards.add(pool.submit(() -> {
          try (Calibrator c = new Calibrator(CalibMethod.ENTROPY, DType.I8, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0);
              Tensor x = Tensor.fromFloats(b, new long[] {1000})) {
            c.observe(ctx, x);
            return c.serialize();
          }
        }));
      }
      pool.shutdown();
      try (Calibrator merged = Calibrator.deserialize(shards.get(0).get())) {
        for (int t = 1; t < threads; ++t) {
          try (Calibrator c = Calibrator.deserialize(shards.get(t).get())) {
            merged.merge(c);
          }
        }
        try (QParams a = one.compute(ctx); QParams b = merged.compute(ctx)) {
          assertArrayEquals(a.getScales(), b.getScales());
        }
      }
    }
  }
}
