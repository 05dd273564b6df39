// The C# version of examples/c/quickstart.c: what the machine can do, then one weight matrix
// quantized three ways (int8 per output channel, int4 per block of 32, NF4 per block of 64),
// dequantized, and compared with the original.
// Build: mcs -r:Qnt.dll Quickstart.cs; run with Qnt.dll, libqnt_csharp.so and libqnt.so.1 beside.
using System;
using System.Text;
using Qnt;

static class Quickstart {
  const int Rows = 256, Cols = 512;
  static ulong state = 42;

  static double Uniform01() {
    state = state * 6364136223846793005UL + 1442695040888963407UL;
    return ((double)(state >> 11) + 0.5) / 9007199254740992.0;
  }

  /// A reproducible weight matrix: Gaussian (Box-Muller over a small LCG), a few outliers.
  static float[] Weights() {
    var w = new float[Rows * Cols];
    for (int i = 0; i < w.Length; ++i) {
      double r = Math.Sqrt(-2.0 * Math.Log(Uniform01())), t = 2 * Math.PI * Uniform01();
      w[i] = (float)(0.02 * r * Math.Cos(t));
    }
    for (int i = 0; i < w.Length; i += 997) w[i] *= 8.0f; // outliers, as real weights have
    return w;
  }

  static double SqnrDb(float[] reference, float[] got) {
    double signal = 0, noise = 0;
    for (int i = 0; i < reference.Length; ++i) {
      double d = (double)reference[i] - got[i];
      signal += (double)reference[i] * reference[i];
      noise += d * d;
    }
    return noise == 0 ? double.PositiveInfinity : 10 * Math.Log10(signal / noise);
  }

  /// Quantizes x with qp, dequantizes, prints one row of the table; disposes qp.
  static void Report(string label, Context ctx, Tensor x, float[] w, int dtype, QParams qp) {
    var shape = new long[] { Rows, Cols };
    using (qp)
    using (var q = new Tensor(dtype, shape, qp))
    using (var y = new Tensor(DType.F32, shape)) {
      ctx.Quantize(x, q);
      ctx.Dequantize(q, y);
      ulong qbytes = q.GetByteSize();
      ulong paramBytes = qp.GetScaleCount() * (qp.GetScheme() == Scheme.AFFINE ? 8UL : 4UL);
      ulong f32Bytes = 4UL * Rows * Cols;
      Console.WriteLine("  {0,-26} {1,7} + {2,5} bytes  saves {3,6} bytes ({4,5:F2}x smaller)  SQNR {5,6:F2} dB",
          label, qbytes, paramBytes, f32Bytes - qbytes - paramBytes,
          (double)f32Bytes / (qbytes + paramBytes), SqnrDb(w, y.ToFloatArray()));
    }
  }

  static void Main() {
    Library.AbiCheck();
    Console.Write("qnt " + Library.VersionString() + "\n" + Library.BuildInfo());
    using (var ctx = new Context()) {
      Console.WriteLine("\nmachine: {0} logical CPUs, {1} physical cores, {2} threads for ops",
          ctx.GetLogicalCpuCount(), ctx.GetPhysicalCoreCount(), ctx.GetNumThreads());
      var features = new StringBuilder();
      ulong mask = ctx.GetCpuFeatures();
      for (int bit = 0; bit < 32; ++bit)
        if ((mask & (1UL << bit)) != 0) features.Append(' ').Append(Library.CpuFeatureName(1 << bit));
      Console.WriteLine("  CPU features:" + features);
      Console.WriteLine("  caches: L1 {0} KiB L2 {1} KiB L3 {2} KiB", ctx.GetCacheSize(1) / 1024,
          ctx.GetCacheSize(2) / 1024, ctx.GetCacheSize(3) / 1024);
      Console.WriteLine("  CUDA devices: " + ctx.GetCudaDeviceCount());

      var w = Weights();
      using (var x = Tensor.FromFloats(w, new long[] { Rows, Cols })) {
        Console.WriteLine("\nweight matrix [{0}, {1}] f32: {2} bytes", Rows, Cols, 4 * Rows * Cols);
        Report("int8, per output channel", ctx, x, w, DType.I8,
            ctx.CalibrateMinmax(x, DType.I8, Scheme.SYMMETRIC, Granularity.PER_AXIS, 0, 0));
        Report("int4, per block of 32", ctx, x, w, DType.I4,
            ctx.CalibrateMinmax(x, DType.I4, Scheme.SYMMETRIC, Granularity.PER_BLOCK, 1, 32));
        Report("uint4 affine, block of 32", ctx, x, w, DType.U4,
            ctx.CalibrateMinmax(x, DType.U4, Scheme.AFFINE, Granularity.PER_BLOCK, 1, 32));
        Report("NF4, per block of 64", ctx, x, w, DType.NF4,
            ctx.CalibrateCodebook(x, DType.NF4, Granularity.PER_BLOCK, 1, 64));
      }
    }
  }
}
