import org.qnt.Context;
import org.qnt.CpuFeature;
import org.qnt.DType;
import org.qnt.Granularity;
import org.qnt.Library;
import org.qnt.QParams;
import org.qnt.Scheme;
import org.qnt.Tensor;

/**
 * The Java version of examples/c/quickstart.c: what the machine can do, then one weight matrix
 * quantized three ways (int8 per output channel, int4 per block of 32, NF4 per block of 64),
 * dequantized, and compared with the original.
 *
 * <p>Run: java -cp qnt-VERSION.jar:. Quickstart
 */
public final class Quickstart {
  static final int ROWS = 256, COLS = 512;
  static long state = 42;

  static double uniform01() {
    state = state * 6364136223846793005L + 1442695040888963407L;
    return ((double) (state >>> 11) + 0.5) / 9007199254740992.0;
  }

  /** A reproducible weight matrix: Gaussian (Box-Muller over a small LCG), a few outliers. */
  static float[] weights() {
    float[] w = new float[ROWS * COLS];
    for (int i = 0; i < w.length; ++i) {
      double r = Math.sqrt(-2.0 * Math.log(uniform01())), t = 2 * Math.PI * uniform01();
      w[i] = (float) (0.02 * r * Math.cos(t));
    }
    for (int i = 0; i < w.length; i += 997) w[i] *= 8.0f; // outliers, as real weights have
    return w;
  }

  static double sqnrDb(float[] ref, float[] got) {
    double signal = 0, noise = 0;
    for (int i = 0; i < ref.length; ++i) {
      double d = (double) ref[i] - got[i];
      signal += (double) ref[i] * ref[i];
      noise += d * d;
    }
    return noise == 0 ? Double.POSITIVE_INFINITY : 10 * Math.log10(signal / noise);
  }

  /** Quantizes x with qp, dequantizes, prints one row of the table; closes qp. */
  static void report(String label, Context ctx, Tensor x, float[] w, int dtype, QParams qp) {
    long[] shape = {ROWS, COLS};
    try (qp; Tensor q = new Tensor(dtype, shape, qp); Tensor y = new Tensor(DType.F32, shape)) {
      ctx.quantize(x, q);
      ctx.dequantize(q, y);
      long qbytes = q.getByteSize();
      long paramBytes = qp.getScaleCount() * (qp.getScheme() == Scheme.AFFINE ? 8 : 4);
      long f32Bytes = 4L * ROWS * COLS;
      System.out.printf("  %-26s %7d + %5d bytes  saves %6d bytes (%5.2fx smaller)  SQNR %6.2f dB%n",
          label, qbytes, paramBytes, f32Bytes - qbytes - paramBytes,
          (double) f32Bytes / (qbytes + paramBytes), sqnrDb(w, y.toFloatArray()));
    }
  }

  public static void main(String[] args) {
    Library.abiCheck();
    System.out.print("qnt " + Library.versionString() + "\n" + Library.buildInfo());
    try (Context ctx = new Context()) {
      System.out.printf("%nmachine: %d logical CPUs, %d physical cores, %d threads for ops%n",
          ctx.getLogicalCpuCount(), ctx.getPhysicalCoreCount(), ctx.getNumThreads());
      StringBuilder features = new StringBuilder();
      long mask = ctx.getCpuFeatures();
      for (int bit = 0; bit < 32; ++bit) {
        if ((mask & (1L << bit)) != 0) features.append(' ').append(Library.cpuFeatureName(1 << bit));
      }
      System.out.println("  CPU features:" + features);
      System.out.printf("  caches: L1 %d KiB L2 %d KiB L3 %d KiB%n", ctx.getCacheSize(1) / 1024,
          ctx.getCacheSize(2) / 1024, ctx.getCacheSize(3) / 1024);
      System.out.println("  CUDA devices: " + ctx.getCudaDeviceCount());

      float[] w = weights();
      try (Tensor x = Tensor.fromFloats(w, new long[] {ROWS, COLS})) {
        System.out.printf("%nweight matrix [%d, %d] f32: %d bytes%n", ROWS, COLS, 4 * ROWS * COLS);
        report("int8, per output channel", ctx, x, w, DType.I8,
            ctx.calibrateMinmax(x, DType.I8, Scheme.SYMMETRIC, Granularity.PER_AXIS, 0, 0));
        report("int4, per block of 32", ctx, x, w, DType.I4,
            ctx.calibrateMinmax(x, DType.I4, Scheme.SYMMETRIC, Granularity.PER_BLOCK, 1, 32));
        report("uint4 affine, block of 32", ctx, x, w, DType.U4,
            ctx.calibrateMinmax(x, DType.U4, Scheme.AFFINE, Granularity.PER_BLOCK, 1, 32));
        report("NF4, per block of 64", ctx, x, w, DType.NF4,
            ctx.calibrateCodebook(x, DType.NF4, Granularity.PER_BLOCK, 1, 64));
      }
    }
    // CpuFeature's names are the library's: the holder and the library agree.
    if (!Library.cpuFeatureName(CpuFeature.AVX2).equals("avx2")) throw new AssertionError();
  }
}
