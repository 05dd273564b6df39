package org.qnt;

/**
 * A failed qnt call: the library's status code and its message. Each status has its own subclass
 * ({@link ShapeMismatch}, {@link InvalidQParams}, ...); a status this binding does not know
 * arrives as {@link Unknown}, with its code.
 */
public class QntException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int status;

  /** An exception for {@code status} with the library's {@code message}. */
  public QntException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** The status code, one of {@link Status}'s values (or a newer one). */
  public int getStatus() {
    return status;
  }

  @Override
  public String toString() {
    return getClass().getName() + " (status " + status + "): " + getMessage();
  }

  /** The exception of a status code: its subclass, or {@link Unknown}. Called by the native code. */
  public static QntException of(int status, String message) {
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

  /** A value out of its domain (a bad enumeration value, a negative size, ...). */
  public static final class InvalidArgument extends QntException {
    private static final long serialVersionUID = 1L;
    InvalidArgument(String message) { super(Status.INVALID_ARGUMENT, message); }
  }

  /** A required handle is missing (a null or closed object was passed). */
  public static final class NullPointer extends QntException {
    private static final long serialVersionUID = 1L;
    NullPointer(String message) { super(Status.NULL_POINTER, message); }
  }

  /** An allocation failed. */
  public static final class OutOfMemory extends QntException {
    private static final long serialVersionUID = 1L;
    OutOfMemory(String message) { super(Status.OUT_OF_MEMORY, message); }
  }

  /** Valid, but not implemented for this case; the message says which. */
  public static final class Unsupported extends QntException {
    private static final long serialVersionUID = 1L;
    Unsupported(String message) { super(Status.UNSUPPORTED, message); }
  }

  /** Shapes, parameter counts or array lengths disagree. */
  public static final class ShapeMismatch extends QntException {
    private static final long serialVersionUID = 1L;
    ShapeMismatch(String message) { super(Status.SHAPE_MISMATCH, message); }
  }

  /** A tensor has the wrong dtype for this call. */
  public static final class DtypeMismatch extends QntException {
    private static final long serialVersionUID = 1L;
    DtypeMismatch(String message) { super(Status.DTYPE_MISMATCH, message); }
  }

  /** A buffer is too small. */
  public static final class BufferTooSmall extends QntException {
    private static final long serialVersionUID = 1L;
    BufferTooSmall(String message) { super(Status.BUFFER_TOO_SMALL, message); }
  }

  /** A size computation overflows. */
  public static final class Overflow extends QntException {
    private static final long serialVersionUID = 1L;
    Overflow(String message) { super(Status.OVERFLOW, message); }
  }

  /** Invalid or missing quantization parameters (a scale not finite and above 0, ...). */
  public static final class InvalidQParams extends QntException {
    private static final long serialVersionUID = 1L;
    InvalidQParams(String message) { super(Status.INVALID_QPARAMS, message); }
  }

  /** No CUDA device (or module, or driver) for this call. */
  public static final class NoDevice extends QntException {
    private static final long serialVersionUID = 1L;
    NoDevice(String message) { super(Status.NO_DEVICE, message); }
  }

  /** A bug in qnt; please report it with the message. */
  public static final class Internal extends QntException {
    private static final long serialVersionUID = 1L;
    Internal(String message) { super(Status.INTERNAL, message); }
  }

  /** Serialized bytes are truncated, damaged or of another version. */
  public static final class CorruptData extends QntException {
    private static final long serialVersionUID = 1L;
    CorruptData(String message) { super(Status.CORRUPT_DATA, message); }
  }

  /** A status code this binding does not know (from a newer library). */
  public static final class Unknown extends QntException {
    private static final long serialVersionUID = 1L;
    Unknown(int status, String message) { super(status, message); }
  }
}
