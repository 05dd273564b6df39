// NUnit tests of the C# binding: results against the C API's bits (files written by
// bindings/swig/tests/reference.c into $QNT_REFERENCE_DIR), typed exceptions, lifetimes, threads.
using System;
using System.Collections.Generic;
using System.IO;
using System.Linq;
using System.Threading;
using System.Threading.Tasks;
using NUnit.Framework;

namespace Qnt.Tests {

  [TestFixture]
  public class ReferenceTests {
    static string Dir { get { return Environment.GetEnvironmentVariable("QNT_REFERENCE_DIR") ?? "reference"; } }

    static byte[] Read(string name) { return File.ReadAllBytes(Path.Combine(Dir, name)); }

    static float[] Floats(string name) {
      var b = Read(name);
      var f = new float[b.Length / 4];
      Buffer.BlockCopy(b, 0, f, 0, b.Length);
      return f;
    }

    /// Bits of floats, so that NaNs compare equal and -0.0 differs from 0.0.
    static int[] Bits(float[] v) { return v.Select(x => BitConverter.ToInt32(BitConverter.GetBytes(x), 0)).ToArray(); }

    [Test]
    public void QuantizeAndDequantizeGiveTheCApisBits() {
      var shape = new long[] { 37, 131 };
      var cases = File.ReadAllLines(Path.Combine(Dir, "cases.txt"));
      Assert.AreEqual(9, cases.Length);
      using (var ctx = new Context())
      using (var x = Tensor.FromFloats(Floats("x.bin"), shape)) {
        foreach (var line in cases) {
          var f = line.Trim().Split(' ');
          int i = int.Parse(f[0]), dtype = int.Parse(f[1]), scheme = int.Parse(f[2]), g = int.Parse(f[3]);
          long axis = long.Parse(f[4]), block = long.Parse(f[5]);
          using (var qp = f[6] == "1" ? ctx.CalibrateCodebook(x, dtype, g, axis, block)
                                      : ctx.CalibrateMinmax(x, dtype, scheme, g, axis, block))
          using (var q = new Tensor(dtype, shape, qp))
          using (var back = new Tensor(DType.F32, shape)) {
            ctx.Quantize(x, q);
            ctx.Dequantize(q, back);
            CollectionAssert.AreEqual(Read("q" + i + ".bin"), q.ToByteArray(), line);
            CollectionAssert.AreEqual(Bits(Floats("back" + i + ".bin")), Bits(back.ToFloatArray()), line);
          }
        }
      }
    }

    [Test]
    public void DeviceTensorsAndCopies() {
      var v = new float[] { 1f, -2f, 3.5f, 0.25f };
      using (var ctx = new Context())
      using (var src = Tensor.FromFloats(v, new long[] { 2, 2 }))
      using (var dst = Tensor.OnDevice(DType.F32, new long[] { 2, 2 }, null, DeviceType.CPU, 0)) {
        dst.CopyFromTensor(ctx, src);
        CollectionAssert.AreEqual(v, dst.ToFloatArray());
        if (ctx.GetCudaDeviceCount() == 0) {
          Assert.Throws<QntException.NoDevice>(() => Tensor.OnDevice(DType.F16, new long[] { 2 }, null, DeviceType.CUDA, 0));
          Assert.Throws<QntException.NoDevice>(() => Tensor.WrapDeviceAddress(DType.F32, new long[] { 2 }, null, DeviceType.CUDA, 0, 16, 8));
        }
      }
    }

    [Test]
    public void PreparedWeightOnlyLinearGivesTheCApisBits() {
      using (var ctx = new Context())
      using (var w = Tensor.FromFloats(Floats("w.bin"), new long[] { 24, 160 }))
      using (var x = Tensor.FromFloats(Floats("wx.bin"), new long[] { 3, 160 }))
      using (var bias = Tensor.FromFloats(Floats("bias.bin"), new long[] { 24 }))
      using (var qp = ctx.CalibrateMinmax(w, DType.I4, Scheme.SYMMETRIC, Granularity.PER_BLOCK, 1, 32))
      using (var wq = new Tensor(DType.I4, new long[] { 24, 160 }, qp)) {
        ctx.Quantize(w, wq);
        foreach (var mode in new[] { WeightOnlyMode.F32, WeightOnlyMode.INT8_ACT, WeightOnlyMode.INT8_BLOCK }) {
          using (var desc = new OpDesc())
          using (var y = new Tensor(DType.F32, new long[] { 3, 24 })) {
            desc.Set(OpOption.WEIGHT_ONLY_MODE, mode);
            using (var layer = ctx.PrepareLinearWeightOnly(wq, bias, desc)) {
              Assert.AreEqual(PreparedKind.LINEAR_WEIGHT_ONLY, layer.GetKind());
              layer.Run(ctx, x, y);
            }
            CollectionAssert.AreEqual(Bits(Floats("lin" + mode + ".bin")), Bits(y.ToFloatArray()), "mode " + mode);
          }
        }
      }
    }
  }

  [TestFixture]
  public class ErrorTests {
    [Test]
    public void InvalidParametersThrowInvalidQParamsWithTheMessage() {
      var e = Assert.Throws<QntException.InvalidQParams>(() => QParams.PerTensor(DType.I8, -1.0f, 0));
      Assert.AreEqual(Status.INVALID_QPARAMS, e.StatusCode);
      Assert.AreEqual(Library.LastErrorMessage(), e.Message);
      StringAssert.Contains("scale", e.Message);
    }

    [Test]
    public void MismatchesAndBadOptions() {
      using (var ctx = new Context())
      using (var x = new Tensor(DType.F32, new long[] { 2, 3 }))
      using (var qp = QParams.PerTensor(DType.I8, 0.5f, 0))
      using (var y = new Tensor(DType.I8, new long[] { 3, 2 }, qp))
      using (var bare = new Tensor(DType.I8, new long[] { 2, 3 }))
      using (var d = new OpDesc()) {
        Assert.Throws<QntException.ShapeMismatch>(() => ctx.Quantize(x, y));
        Assert.Throws<QntException.InvalidQParams>(() => ctx.Quantize(x, bare));
        Assert.Throws<QntException.BufferTooSmall>(() => Tensor.FromFloats(new float[5], new long[] { 2, 3 }));
        Assert.Throws<QntException.ShapeMismatch>(() => Tensor.FromFloats(new float[7], new long[] { 2, 3 }));
        Assert.Throws<QntException.DtypeMismatch>(() => y.ToFloatArray());
        Assert.Throws<QntException.ShapeMismatch>(() => QParams.PerAxis(DType.I8, 0, new float[] { 1, 1 }, new[] { 0 }));
        Assert.Throws<QntException.InvalidArgument>(() => d.Set(OpOption.STRIDE_H, 0));
        Assert.AreEqual(1, d.Get(OpOption.STRIDE_H));
        Assert.Throws<QntException.Unsupported>(() =>
            new Calibrator(CalibMethod.MINMAX, DType.NF4, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0));
        Assert.Throws<QntException.CorruptData>(() => Calibrator.Deserialize(new byte[] { 1, 2, 3, 4, 5, 6, 7, 8 }));
        if (ctx.GetCudaDeviceCount() == 0)
          Assert.Throws<QntException.NoDevice>(() => ctx.GetCudaComputeCapabilityMajor(0));
      }
    }

    [Test]
    public void ADisposedHandleIsANullPointerError() {
      using (var ctx = new Context())
      using (var y = new Tensor(DType.F32, new long[] { 2 })) {
        var x = new Tensor(DType.F32, new long[] { 2 });
        x.Dispose();
        x.Dispose(); // twice is fine
        Assert.Throws<QntException.NullPointer>(() => ctx.Dequantize(x, y));
      }
    }

    [Test]
    public void UnknownStatusesMapToUnknown() {
      var e = QntException.Of(999, "from a newer library");
      Assert.IsInstanceOf<QntException.Unknown>(e);
      Assert.AreEqual(999, e.StatusCode);
      for (int s = 1; s <= 12; ++s) Assert.IsNotInstanceOf<QntException.Unknown>(QntException.Of(s, "m"));
      Assert.AreEqual("unknown qnt_status", Library.StatusString(999));
      Assert.AreEqual("invalid", Library.DtypeName(99));
    }
  }

  [TestFixture]
  public class LifetimeTests {
    static ulong Settle(ulong target) {
      ulong live = Library.LiveHandles();
      for (int i = 0; i < 200 && live > target; ++i) {
        GC.Collect();
        GC.WaitForPendingFinalizers();
        live = Library.LiveHandles();
      }
      return live;
    }

    [Test]
    public void OneHundredThousandHandlesDisposedOrCollected() {
      ulong baseline = Settle(0);
      // On a thread of its own: Mono scans stacks conservatively, and a finished thread's stack
      // holds no stale references to the handles left to the collector.
      var worker = new Thread(Churn);
      worker.Start();
      worker.Join();
      Assert.AreEqual(baseline, Settle(baseline), "handles leaked");
    }

    static void Churn() {
      using (var ctx = new Context()) {
        var data = new float[] { 0.5f, -1.0f, 2.0f, 0.25f };
        for (int i = 0; i < 100000 / 4; ++i) {
          var qp = QParams.PerTensor(DType.I8, 0.05f, 0);
          var x = Tensor.FromFloats(data, new long[] { 4 });
          var q = new Tensor(DType.I8, new long[] { 4 }, qp);
          IDisposable extra;
          switch (i % 3) {
            case 0: extra = new OpDesc(); break;
            case 1: extra = q.GetQParams(); break;
            default: extra = new Calibrator(CalibMethod.MINMAX, DType.I8, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0); break;
          }
          ctx.Quantize(x, q);
          if (i % 2 == 0) {
            qp.Dispose(); // before the tensor that uses the parameters
            q.Dispose();
            extra.Dispose();
            x.Dispose();
          }
        }
      }
    }

    [Test]
    public void ObjectsOthersDependOnStayAlive() {
      using (var ctx = new Context()) {
        Tensor q;
        using (var qp = QParams.PerAxis(DType.U8, 0, new[] { 0.1f, 0.2f }, new[] { 3, 4 }))
          q = new Tensor(DType.U8, new long[] { 2, 2 }, qp);
        using (var x = Tensor.FromFloats(new[] { 0.1f, 0.2f, 0.4f, 0.8f }, new long[] { 2, 2 }))
        using (var again = q.GetQParams()) {
          ctx.Quantize(x, q);
          CollectionAssert.AreEqual(new[] { 3, 4 }, again.GetZeroPoints());
          CollectionAssert.AreEqual(new byte[] { 4, 5, 6, 8 }, q.ToByteArray());
        }
        q.Dispose();
      }
    }
  }

  [TestFixture]
  public class ThreadTests {
    [Test]
    public void ASharedPreparedOperatorGivesEveryThreadTheSerialResult() {
      int n = 32, k = 96, threads = 4;
      var wf = Enumerable.Range(0, n * k).Select(i => (float)Math.Sin(i) * 0.1f).ToArray();
      using (var ctx = new Context())
      using (var w = Tensor.FromFloats(wf, new long[] { n, k }))
      using (var qp = ctx.CalibrateMinmax(w, DType.I4, Scheme.SYMMETRIC, Granularity.PER_BLOCK, 1, 32))
      using (var wq = new Tensor(DType.I4, new long[] { n, k }, qp)) {
        ctx.Quantize(w, wq);
        using (var layer = ctx.PrepareLinearWeightOnly(wq, null, null)) {
          Func<int, float[]> run = t => {
            var xv = Enumerable.Range(0, k).Select(i => (float)Math.Cos(i * (t + 1))).ToArray();
            using (var x = Tensor.FromFloats(xv, new long[] { 1, k }))
            using (var y = new Tensor(DType.F32, new long[] { 1, n })) {
              layer.Run(ctx, x, y);
              return y.ToFloatArray();
            }
          };
          var serial = Enumerable.Range(0, threads).Select(run).ToArray();
          var tasks = Enumerable.Range(0, threads).Select(t => Task.Run(() => {
            float[] last = null;
            for (int r = 0; r < 50; ++r) last = run(t);
            return last;
          })).ToArray();
          Task.WaitAll(tasks);
          for (int t = 0; t < threads; ++t) CollectionAssert.AreEqual(serial[t], tasks[t].Result);
        }
      }
    }
  }

  [TestFixture]
  public class ApiTests {
    [Test]
    public void LibraryAndContext() {
      Library.AbiCheck();
      Assert.AreEqual(Limits.ABI_VERSION, (int)Library.AbiVersion());
      Assert.AreEqual(Limits.VERSION_NUMBER, (int)Library.Version());
      StringAssert.Contains("version=", Library.BuildInfo());
      Assert.AreEqual(4, Library.DtypeBits(DType.I4));
      Assert.AreEqual(-8, Library.DtypeMin(DType.I4));
      Assert.AreEqual(15, Library.DtypeMax(DType.U4));
      Assert.AreEqual(1.0f, Library.Nf4Codebook()[15]);
      Assert.AreEqual("avx2", Library.IsaName(Isa.AVX2));
      Assert.AreEqual("avx2", Library.CpuFeatureName(CpuFeature.AVX2));
      using (var ctx = new Context()) {
        ctx.SetNumThreads(2);
        Assert.AreEqual(2, ctx.GetNumThreads());
        ctx.SetMaxIsa(Isa.REFERENCE);
        Assert.AreEqual(Isa.REFERENCE, ctx.GetIsa());
        StringAssert.Contains("quantize.i8", ctx.GetKernels());
        Assert.GreaterOrEqual(ctx.GetLogicalCpuCount(), 1);
        Assert.GreaterOrEqual(ctx.GetPhysicalCoreCount(), 0);
        Assert.GreaterOrEqual(ctx.GetCacheSize(2), 0UL);
        Assert.GreaterOrEqual(ctx.GetCpuFeatures(), 0UL);
        ctx.Synchronize();
        if (ctx.GetCudaDeviceCount() == 0)
          Assert.Throws<QntException.NoDevice>(() => ctx.SetCudaStream(0, 0));
        else
          Assert.GreaterOrEqual(ctx.GetCudaComputeCapabilityMinor(0), 0);
      }
    }

    [Test]
    public void ArraysAreWrappedWithoutCopying() {
      var input = new float[] { 0.5f, -1.0f, 2.0f, 100.0f };
      var output = new byte[4];
      using (var ctx = new Context())
      using (var qp = QParams.PerTensor(DType.U8, 0.5f, 128))
      using (var x = Tensor.Wrap(DType.F32, input, new long[] { 4 }))
      using (var q = Tensor.Wrap(DType.U8, output, new long[] { 4 }, qp)) {
        ctx.Quantize(x, q);
        CollectionAssert.AreEqual(new byte[] { 129, 126, 132, 255 }, output); // written in place
        input[0] = 3.0f; // and read in place
        ctx.Quantize(x, q);
        Assert.AreEqual(134, output[0]);
      }
      Assert.Throws<QntException.ShapeMismatch>(() => Tensor.Wrap(DType.F32, new float[3], new long[] { 2 }));
    }

    [Test]
    public void TensorsParametersAndOperators() {
      using (var qp = QParams.PerBlock(DType.I4, 1, 32, new[] { 0.1f, 0.2f, 0.3f, 0.4f }))
      using (var t = Tensor.FromBytes(DType.I4, new byte[64], new long[] { 2, 64 }, qp)) {
        Assert.AreEqual(Granularity.PER_BLOCK, qp.GetGranularity());
        Assert.AreEqual(Scheme.SYMMETRIC, qp.GetScheme());
        Assert.AreEqual(DType.I4, qp.GetDtype());
        Assert.AreEqual(1, qp.GetAxis());
        Assert.AreEqual(32, qp.GetBlockSize());
        CollectionAssert.AreEqual(new[] { 0.1f, 0.2f, 0.3f, 0.4f }, qp.GetScales());
        CollectionAssert.AreEqual(new long[] { 2, 64 }, t.GetShape());
        Assert.AreEqual(64UL, t.GetByteSize());
        Assert.IsFalse(t.IsReadOnly());
        Assert.AreEqual(DeviceType.CPU, t.GetDeviceType());
        Assert.AreEqual(0, t.GetDeviceId());
        Assert.AreNotEqual(0L, t.GetDataAddress());
        t.CopyFrom(new byte[64]);
      }
      using (var s = Tensor.FromShorts(DType.I16, new short[] { 1, -2 }, new long[] { 2 }))
      using (var i = Tensor.FromInts(DType.I32, new[] { 7, 8, 9 }, new long[] { 3 })) {
        s.CopyFrom(new short[] { 3, 4 });
        CollectionAssert.AreEqual(new short[] { 3, 4 }, s.ToShortArray());
        i.CopyFrom(new[] { 1, 2, 3 });
        using (var back = Tensor.FromDlpack(i.ToDlpack(1), 1, null))
          CollectionAssert.AreEqual(new[] { 1, 2, 3 }, back.ToIntArray());
        Assert.IsNull(i.GetQParams());
      }
      using (var ctx = new Context())
      using (var xq = QParams.PerTensor(DType.U8, 0.1f, 10))
      using (var wq = QParams.PerTensor(DType.I8, 0.02f, 0))
      using (var a = Tensor.FromBytes(DType.U8, new byte[] { 0, 10, 20, 255 }, new long[] { 4 }, xq))
      using (var r = new Tensor(DType.U8, new long[] { 4 }, xq)) {
        ctx.Qrelu(a, r);
        CollectionAssert.AreEqual(new byte[] { 10, 10, 20, 255 }, r.ToByteArray());
        ctx.QreluClamp(a, 6.0f, r);
        CollectionAssert.AreEqual(new byte[] { 10, 10, 20, 70 }, r.ToByteArray());
        ctx.Qadd(a, a, null, r);
        ctx.Requantize(a, r);
        using (var x = Tensor.FromBytes(DType.U8, new byte[] { 11, 12, 13, 14, 15, 16, 17, 18, 19 }, new long[] { 1, 1, 3, 3 }, xq))
        using (var w = Tensor.FromBytes(DType.I8, new byte[] { 1, 1, 1, 1 }, new long[] { 1, 1, 2, 2 }, wq))
        using (var desc = new OpDesc()) {
          var shape = Library.Conv2dOutputShape(x, w, desc);
          CollectionAssert.AreEqual(new long[] { 1, 1, 2, 2 }, shape);
          using (var y = new Tensor(DType.I32, shape))
          using (var conv = ctx.PrepareConv2d(w, null, desc)) {
            ctx.Qconv2d(x, w, null, desc, y);
            CollectionAssert.AreEqual(new[] { 12, 16, 24, 28 }, y.ToIntArray());
            conv.Run(ctx, x, y);
            CollectionAssert.AreEqual(new[] { 12, 16, 24, 28 }, y.ToIntArray());
          }
        }
        using (var am = Tensor.FromBytes(DType.U8, new byte[] { 12, 14 }, new long[] { 1, 2 }, xq))
        using (var b = Tensor.FromBytes(DType.I8, new byte[] { 1, 2, 3, 4 }, new long[] { 2, 2 }, wq))
        using (var acc = new Tensor(DType.I32, new long[] { 1, 2 }))
        using (var mm = ctx.PrepareMatmul(b, null, null))
        using (var st = ctx.PrepareLinearStatic(b, null, xq, null, null))
        using (var dyn = ctx.PrepareLinearDynamic(b, null, null))
        using (var xf = Tensor.FromFloats(new[] { 1.0f, -1.0f }, new long[] { 1, 2 }))
        using (var yf = new Tensor(DType.F32, new long[] { 1, 2 })) {
          ctx.Qmatmul(am, b, null, acc);
          CollectionAssert.AreEqual(new[] { 14, 20 }, acc.ToIntArray());
          mm.Run(ctx, am, acc);
          st.Run(ctx, am, yf);
          dyn.Run(ctx, xf, yf);
          ctx.LinearDynamic(xf, b, null, null, yf);
          ctx.LinearWeightOnly(xf, b, null, yf);
          Assert.Greater(st.GetPackedSize(), 0UL);
          Assert.AreNotEqual(Isa.NATIVE, st.GetIsa());
          using (var rep = ctx.ErrorReport(xf, wq))
          using (var dq = ctx.DynamicQuantizeLinear(xf)) {
            Assert.AreEqual(2UL, rep.count);
            Assert.AreEqual(DType.U8, dq.GetDtype());
          }
          // 0.02 lies between 2^-6 and 2^-5: rounded up without data; with x = {1, -1} both
          // hold the values exactly, and a tie takes the larger.
          using (var up = ctx.Pow2Scales(wq, null))
          using (var chosen = ctx.Pow2Scales(wq, xf)) {
            CollectionAssert.AreEqual(new[] { 0.03125f }, up.GetScales());
            CollectionAssert.AreEqual(new[] { 0.03125f }, chosen.GetScales());
          }
          // Mixed precision: int8 keeps 30 dB on these weights, int4 in blocks of 32 does not.
          var wv = new float[4 * 64];
          for (int i = 0; i < wv.Length; ++i) wv[i] = (float)Math.Sin(i * 0.37) * (1 + i % 7);
          using (var rec = new Recommender())
          using (var wt = Tensor.FromFloats(wv, new long[] { 4, 64 })) {
            rec.AddFormat("i8");
            rec.AddFormat("i4.b32");
            rec.AddTensor(ctx, "fc1", wt);
            var imp = new float[64];
            for (int i = 0; i < imp.Length; ++i) imp[i] = 1.0f;
            rec.AddTensorWeighted(ctx, "fc2", wt, imp);
            rec.Run(Budget.MIN_SQNR, 30.0);
            Assert.AreEqual(2UL, rec.GetTensorCount());
            Assert.AreEqual("fc2", rec.GetChoiceName(1));
            Assert.AreEqual("i8", rec.GetChoiceFormat(0));
            Assert.AreEqual((ulong)(4 * 64 + 4 * 4), rec.GetChoiceBytes(0));
            Assert.AreEqual(rec.GetChoiceSqnr(0), rec.GetChoiceSqnr(1));
            StringAssert.Contains("runner-up", rec.GetReport());
            rec.Run(Budget.BYTES, 4 * 32 + 4 * 2 * 4 + 4 * 64 + 4 * 4);  // one of each fits
            Assert.AreNotEqual(rec.GetChoiceFormat(0) == "i8", rec.GetChoiceFormat(1) == "i8");
            Assert.Throws<QntException.InvalidArgument>(() => rec.AddFormat("i3"));
          }
          // Tuning: the same bits, and a table that round-trips.
          using (var acc2 = new Tensor(DType.I32, new long[] { 1, 2 })) {
            ctx.SetTuning(Tuning.MEASURE);
            Assert.AreEqual(Tuning.MEASURE, ctx.GetTuning());
            ctx.Qmatmul(am, b, null, acc2);
            ctx.SetTuning(Tuning.OFF);
            CollectionAssert.AreEqual(acc.ToIntArray(), acc2.ToIntArray());
            var table = Library.TuningExport();
            StringAssert.StartsWith("qnt-tuning 1\n", table);
            Library.TuningClear();
            Library.TuningImport(table);
            Assert.AreEqual(table, Library.TuningExport());
            Assert.Throws<QntException.CorruptData>(() => Library.TuningImport("x"));
          }
        }
        using (var x = Tensor.FromFloats(new float[] { -3, 1, 2, 5 }, new long[] { 4 }))
        using (var r2 = ctx.CalibrateMinmaxRange(x, DType.U8, Scheme.AFFINE, Granularity.PER_TENSOR, 0, 0, 0, 127))
        using (var c = new Calibrator(CalibMethod.ADAPTIVE, DType.I8, Scheme.SYMMETRIC, Granularity.PER_TENSOR, 0)) {
          Assert.AreEqual(1UL, r2.GetScaleCount());
          c.SetOption(CalibOption.BINS, 256);
          c.Observe(ctx, x);
          using (var p = c.Compute(ctx)) Assert.AreEqual(1UL, p.GetScaleCount());
          Assert.GreaterOrEqual(c.GetChosenMethod(), CalibMethod.MINMAX);
          Assert.AreEqual(4UL, c.GetFiniteCount());
          Assert.AreEqual(0UL, c.GetNanCount() + c.GetInfCount());
          using (var copy = Calibrator.Deserialize(c.Serialize())) {
            c.Merge(copy);
            Assert.AreEqual(8UL, c.GetFiniteCount());
          }
          c.Reset();
          Assert.AreEqual(0UL, c.GetFiniteCount());
        }
      }
    }
  }
}
