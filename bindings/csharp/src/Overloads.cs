// The thin hand-written layer over SWIG's proxies: overloads that take arrays alone, their
// lengths read from the arrays (the generated methods that take (array, length) pairs are
// internal), and array-returning conveniences.
namespace Qnt {

  public partial class Tensor {
    /// <summary>A zero-filled tensor of a dtype and shape; qp (may be null) for quantized dtypes.</summary>
    public Tensor(int dtype, long[] shape, QParams qp = null) : this(dtype, shape, Len(shape), qp) {}

    /// <summary>An f32 tensor holding a copy of data (exactly the shape's element count).</summary>
    public static Tensor FromFloats(float[] data, long[] shape) {
      return FromFloats(data, Len(data), shape, Len(shape));
    }

    /// <summary>A tensor of any dtype holding a copy of its storage bytes (i8, u8, or the packed
    /// layout of the sub-byte dtypes: element 0 in the lowest bits), exactly its byte size.</summary>
    public static Tensor FromBytes(int dtype, byte[] data, long[] shape, QParams qp = null) {
      return FromBytes(dtype, data, Len(data), shape, Len(shape), qp);
    }

    /// <summary>An i16 or u16 tensor holding a copy of data.</summary>
    public static Tensor FromShorts(int dtype, short[] data, long[] shape, QParams qp = null) {
      return FromShorts(dtype, data, Len(data), shape, Len(shape), qp);
    }

    /// <summary>An i32 tensor holding a copy of data.</summary>
    public static Tensor FromInts(int dtype, int[] data, long[] shape, QParams qp = null) {
      return FromInts(dtype, data, Len(data), shape, Len(shape), qp);
    }

    /// <summary>A zero-filled tensor on a device: DeviceType.CPU (device 0) or DeviceType.CUDA and
    /// its index; QntException.NoDevice where that CUDA device is not usable.</summary>
    public static Tensor OnDevice(int dtype, long[] shape, QParams qp, int deviceType, int device) {
      return OnDevice(dtype, shape, Len(shape), qp, deviceType, device);
    }

    /// <summary>A tensor over another library's device memory at address (bytes long), which
    /// must outlive the tensor.</summary>
    public static Tensor WrapDeviceAddress(int dtype, long[] shape, QParams qp, int deviceType,
                                           int device, long address, ulong bytes) {
      return WrapDeviceAddress(dtype, shape, Len(shape), qp, deviceType, device, address, bytes);
    }

    /// <summary>The dimensions.</summary>
    public long[] GetShape() {
      var out_ = new long[GetRank()];
      CopyShape(out_, Len(out_));
      return out_;
    }

    /// <summary>A copy of an f32 tensor's elements.</summary>
    public float[] ToFloatArray() {
      var out_ = new float[GetElementCount()];
      CopyToFloats(out_, Len(out_));
      return out_;
    }

    /// <summary>A copy of the storage's bytes.</summary>
    public byte[] ToByteArray() {
      var out_ = new byte[GetByteSize()];
      CopyToBytes(out_, Len(out_));
      return out_;
    }

    /// <summary>A copy of an i16 or u16 tensor's elements.</summary>
    public short[] ToShortArray() {
      var out_ = new short[GetElementCount()];
      CopyToShorts(out_, Len(out_));
      return out_;
    }

    /// <summary>A copy of an i32 tensor's elements.</summary>
    public int[] ToIntArray() {
      var out_ = new int[GetElementCount()];
      CopyToInts(out_, Len(out_));
      return out_;
    }

    /// <summary>Overwrites an f32 tensor's elements (exactly its element count).</summary>
    public void CopyFrom(float[] data) { CopyFromFloats(data, Len(data)); }
    /// <summary>Overwrites the storage's bytes (exactly its byte size).</summary>
    public void CopyFrom(byte[] data) { CopyFromBytes(data, Len(data)); }
    /// <summary>Overwrites an i16 or u16 tensor's elements.</summary>
    public void CopyFrom(short[] data) { CopyFromShorts(data, Len(data)); }
    /// <summary>Overwrites an i32 tensor's elements.</summary>
    public void CopyFrom(int[] data) { CopyFromInts(data, Len(data)); }

    /// <summary>The pinned array a wrapped tensor borrows; unpinned when the tensor is
    /// collected.</summary>
#pragma warning disable 414  // held, not read: it keeps the array pinned while the tensor lives
    Pin pinned;
#pragma warning restore 414

    sealed class Pin {
      global::System.Runtime.InteropServices.GCHandle handle;
      internal Pin(global::System.Array data) {
        handle = global::System.Runtime.InteropServices.GCHandle.Alloc(
            data, global::System.Runtime.InteropServices.GCHandleType.Pinned);
      }
      internal long Address { get { return handle.AddrOfPinnedObject().ToInt64(); } }
      ~Pin() { handle.Free(); }
    }

    /// <summary>A tensor over a managed array, without copying: the array is pinned while the
    /// tensor object lives, and ops write their outputs straight into it. The array holds the
    /// tensor's storage exactly: elements of T for f32, i32, i16/u16 and i8/u8, or the packed
    /// bytes of the sub-byte dtypes.</summary>
    public static Tensor Wrap<T>(int dtype, T[] data, long[] shape, QParams qp = null) where T : struct {
      var pin = new Pin(data);
      ulong bytes = (ulong)data.LongLength *
          (ulong)global::System.Runtime.InteropServices.Marshal.SizeOf(typeof(T));
      var t = WrapPinned(dtype, shape, Len(shape), pin.Address, bytes, qp);
      if (t.GetByteSize() != bytes) {
        t.Dispose();
        throw QntException.Of(Status.SHAPE_MISMATCH, "Tensor.Wrap: an array of " + bytes +
                              " bytes for a tensor of another byte size");
      }
      t.pinned = pin;
      return t;
    }

    internal static ulong Len(global::System.Array a) {
      if (a == null) throw new global::System.ArgumentNullException("array");
      return (ulong)a.LongLength;
    }
  }

  public partial class QParams {
    /// <summary>One scale (and zero point; null: the symmetric ones) per index along axis.</summary>
    public static QParams PerAxis(int dtype, long axis, float[] scales, int[] zeroPoints = null) {
      return PerAxis(dtype, axis, scales, Tensor.Len(scales), zeroPoints,
                     zeroPoints == null ? 0 : Tensor.Len(zeroPoints));
    }

    /// <summary>Parameters per block of blockSize elements along axis.</summary>
    public static QParams PerBlock(int dtype, long axis, long blockSize, float[] scales,
                                   int[] zeroPoints = null) {
      return PerBlock(dtype, axis, blockSize, scales, Tensor.Len(scales), zeroPoints,
                      zeroPoints == null ? 0 : Tensor.Len(zeroPoints));
    }

    /// <summary>A copy of the scales.</summary>
    public float[] GetScales() {
      var out_ = new float[GetScaleCount()];
      CopyScales(out_, Tensor.Len(out_));
      return out_;
    }

    /// <summary>A copy of the zero points.</summary>
    public int[] GetZeroPoints() {
      var out_ = new int[GetScaleCount()];
      CopyZeroPoints(out_, Tensor.Len(out_));
      return out_;
    }
  }

  public partial class Calibrator {
    /// <summary>The settings and statistics as bytes, for <see cref="Deserialize(byte[])"/>.</summary>
    public byte[] Serialize() {
      var out_ = new byte[SerializedSize()];
      SerializeTo(out_, Tensor.Len(out_));
      return out_;
    }

    /// <summary>Recreates a calibrator from <see cref="Serialize"/>'s bytes.</summary>
    public static Calibrator Deserialize(byte[] data) {
      return Deserialize(data, Tensor.Len(data));
    }
  }

  public partial class Recommender {
    /// <summary>As AddTensor, each input channel's error weighted by its importance (one a
    /// channel: the last dimension of w).</summary>
    public void AddTensorWeighted(Context ctx, string name, Tensor w, float[] importance) {
      AddTensorWeighted(ctx, name, w, importance, Tensor.Len(importance));
    }
  }

  public partial class Library {
    /// <summary>The 16 NF4 codebook values, ascending from -1 to 1.</summary>
    public static float[] Nf4Codebook() {
      var out_ = new float[16];
      Nf4Codebook(out_, 16);
      return out_;
    }

    /// <summary>The output shape of Context.Qconv2d for these tensors and options (desc may be null).</summary>
    public static long[] Conv2dOutputShape(Tensor x, Tensor w, OpDesc desc) {
      var out_ = new long[4];
      Conv2dOutputShape(x, w, desc, out_, 4);
      return out_;
    }
  }
}
