namespace Qnt {

  /// <summary>A failed qnt call: the library's status code and its message. Each status has
  /// its own subclass (<see cref="ShapeMismatch"/>, <see cref="InvalidQParams"/>, ...); a status
  /// this binding does not know arrives as <see cref="Unknown"/>, with its code.</summary>
  public class QntException : global::System.Exception {
    /// <summary>The status code, one of <see cref="Status"/>'s values (or a newer one).</summary>
    public int StatusCode { get; private set; }

    /// <summary>An exception for <paramref name="status"/> with the library's message.</summary>
    public QntException(int status, string message) : base(message) {
      StatusCode = status;
    }

    /// <summary>The exception of a status code: its subclass, or <see cref="Unknown"/>.
    /// Called by the native code through the binding's callback.</summary>
    public static QntException Of(int status, string message) {
      switch (status) {
        case Status.INVALID_ARGUMENT: return new InvalidArgument(message);
        case Status.NULL_POINTER: return new NullPointer(message);
        case Status.OUT_OF_MEMORY: return new OutOfMemory(message);
        case Status.UNSUPPORTED: return new Unsupported(message);
        case Status.SHAPE_MISMATCH: return new ShapeMismatch(message);
        case Status.DTYPE_MISMATCH: return new DtypeMismatch(message);
        case Status.BUFFER_TOO_SMALL: return new BufferTooSmall(message);
        case Status.OVERFLOW: return new Overflow(message);
        case Status.INVALID_QPARAMS: return new InvalidQParams(message);
        case Status.NO_DEVICE: return new NoDevice(message);
        case Status.INTERNAL: return new Internal(message);
        case Status.CORRUPT_DATA: return new CorruptData(message);
        default: return new Unknown(status, message);
      }
    }

    /// <summary>A value out of its domain.</summary>
    public sealed class InvalidArgument : QntException {
      internal InvalidArgument(string m) : base(Status.INVALID_ARGUMENT, m) {}
    }
    /// <summary>A required handle is missing (a null or disposed object was passed).</summary>
    public sealed class NullPointer : QntException {
      internal NullPointer(string m) : base(Status.NULL_POINTER, m) {}
    }
    /// <summary>An allocation failed.</summary>
    public sealed class OutOfMemory : QntException {
      internal OutOfMemory(string m) : base(Status.OUT_OF_MEMORY, m) {}
    }
    /// <summary>Valid, but not implemented for this case; the message says which.</summary>
    public sealed class Unsupported : QntException {
      internal Unsupported(string m) : base(Status.UNSUPPORTED, m) {}
    }
    /// <summary>Shapes, parameter counts or array lengths disagree.</summary>
    public sealed class ShapeMismatch : QntException {
      internal ShapeMismatch(string m) : base(Status.SHAPE_MISMATCH, m) {}
    }
    /// <summary>A tensor has the wrong dtype for this call.</summary>
    public sealed class DtypeMismatch : QntException {
      internal DtypeMismatch(string m) : base(Status.DTYPE_MISMATCH, m) {}
    }
    /// <summary>A buffer is too small.</summary>
    public sealed class BufferTooSmall : QntException {
      internal BufferTooSmall(string m) : base(Status.BUFFER_TOO_SMALL, m) {}
    }
    /// <summary>A size computation overflows.</summary>
    public sealed class Overflow : QntException {
      internal Overflow(string m) : base(Status.OVERFLOW, m) {}
    }
    /// <summary>Invalid or missing quantization parameters.</summary>
    public sealed class InvalidQParams : QntException {
      internal InvalidQParams(string m) : base(Status.INVALID_QPARAMS, m) {}
    }
    /// <summary>No CUDA device (or module, or driver) for this call.</summary>
    public sealed class NoDevice : QntException {
      internal NoDevice(string m) : base(Status.NO_DEVICE, m) {}
    }
    /// <summary>A bug in qnt; please report it with the message.</summary>
    public sealed class Internal : QntException {
      internal Internal(string m) : base(Status.INTERNAL, m) {}
    }
    /// <summary>Serialized bytes are truncated, damaged or of another version.</summary>
    public sealed class CorruptData : QntException {
      internal CorruptData(string m) : base(Status.CORRUPT_DATA, m) {}
    }
    /// <summary>A status code this binding does not know (from a newer library).</summary>
    public sealed class Unknown : QntException {
      internal Unknown(int status, string m) : base(status, m) {}
    }
  }
}
