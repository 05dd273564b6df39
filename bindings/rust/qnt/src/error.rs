//! Errors: every fallible call returns [`Result<T>`](Result), whose error carries the library's
//! status code and its message.

use crate::sys;
use std::ffi::CStr;
use std::fmt;

/// What kind of failure an [`Error`] is; one kind per `qnt_status` of the header.
///
/// A status this crate does not know (from a newer library) maps to [`ErrorKind::Unknown`];
/// [`Error::status`] still gives its number.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// A value is out of its domain (a bad enumeration value, a negative size, ...).
    InvalidArgument,
    /// A required pointer or handle is null (the safe API never passes one).
    NullPointer,
    /// An allocation failed.
    OutOfMemory,
    /// Valid, but not implemented for this case; the message says which.
    Unsupported,
    /// Shapes (or parameter counts) disagree.
    ShapeMismatch,
    /// A tensor has the wrong dtype for this call.
    DtypeMismatch,
    /// A buffer or capacity is short.
    BufferTooSmall,
    /// A size computation overflows (element count, byte size).
    Overflow,
    /// A scale that is not finite and > 0, a zero point out of range, missing parameters, ...
    InvalidQparams,
    /// No CUDA device (or module, or driver) for this call.
    NoDevice,
    /// A bug in qnt; please report it with the message.
    Internal,
    /// A serialized buffer is truncated, damaged or of another version.
    CorruptData,
    /// A status code this version of the crate does not know.
    Unknown,
}

impl ErrorKind {
    /// The kind of a `qnt_status` (never called with `QNT_OK`).
    pub fn from_status(status: sys::qnt_status) -> ErrorKind {
        match status as u32 {
            sys::QNT_ERR_INVALID_ARGUMENT => ErrorKind::InvalidArgument,
            sys::QNT_ERR_NULL_POINTER => ErrorKind::NullPointer,
            sys::QNT_ERR_OUT_OF_MEMORY => ErrorKind::OutOfMemory,
            sys::QNT_ERR_UNSUPPORTED => ErrorKind::Unsupported,
            sys::QNT_ERR_SHAPE_MISMATCH => ErrorKind::ShapeMismatch,
            sys::QNT_ERR_DTYPE_MISMATCH => ErrorKind::DtypeMismatch,
            sys::QNT_ERR_BUFFER_TOO_SMALL => ErrorKind::BufferTooSmall,
            sys::QNT_ERR_OVERFLOW => ErrorKind::Overflow,
            sys::QNT_ERR_INVALID_QPARAMS => ErrorKind::InvalidQparams,
            sys::QNT_ERR_NO_DEVICE => ErrorKind::NoDevice,
            sys::QNT_ERR_INTERNAL => ErrorKind::Internal,
            sys::QNT_ERR_CORRUPT_DATA => ErrorKind::CorruptData,
            _ => ErrorKind::Unknown,
        }
    }

    /// The status code of this kind (`None` for [`ErrorKind::Unknown`]).
    pub fn status(self) -> Option<sys::qnt_status> {
        let s = match self {
            ErrorKind::InvalidArgument => sys::QNT_ERR_INVALID_ARGUMENT,
            ErrorKind::NullPointer => sys::QNT_ERR_NULL_POINTER,
            ErrorKind::OutOfMemory => sys::QNT_ERR_OUT_OF_MEMORY,
            ErrorKind::Unsupported => sys::QNT_ERR_UNSUPPORTED,
            ErrorKind::ShapeMismatch => sys::QNT_ERR_SHAPE_MISMATCH,
            ErrorKind::DtypeMismatch => sys::QNT_ERR_DTYPE_MISMATCH,
            ErrorKind::BufferTooSmall => sys::QNT_ERR_BUFFER_TOO_SMALL,
            ErrorKind::Overflow => sys::QNT_ERR_OVERFLOW,
            ErrorKind::InvalidQparams => sys::QNT_ERR_INVALID_QPARAMS,
            ErrorKind::NoDevice => sys::QNT_ERR_NO_DEVICE,
            ErrorKind::Internal => sys::QNT_ERR_INTERNAL,
            ErrorKind::CorruptData => sys::QNT_ERR_CORRUPT_DATA,
            ErrorKind::Unknown => return None,
        };
        Some(s as sys::qnt_status)
    }
}

/// A failed call: the status code, its kind, and the message that says what was wrong.
///
/// ```
/// // A scale must be finite and > 0.
/// let err = qnt::QParams::per_tensor(qnt::DType::I8, -1.0, 0).unwrap_err();
/// assert_eq!(err.kind(), qnt::ErrorKind::InvalidQparams);
/// assert!(!err.message().is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    status: sys::qnt_status,
    message: String,
}

impl Error {
    /// The error of a failed library call: `status`, with the message the library left for
    /// this thread (`qnt_last_error_message`). Call it right after the failing call.
    pub fn from_status(status: sys::qnt_status) -> Error {
        Error {
            kind: ErrorKind::from_status(status),
            status,
            message: last_error_message(),
        }
    }

    /// An error raised by this crate before calling the library (a slice of the wrong length,
    /// say), with the status the library would have given.
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let status = kind
            .status()
            .unwrap_or(sys::QNT_ERR_INTERNAL as sys::qnt_status);
        Error {
            kind,
            status,
            message: message.into(),
        }
    }

    /// The kind of failure.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The `qnt_status` code, as the C API returned it.
    pub fn status(&self) -> sys::qnt_status {
        self.status
    }

    /// The library's message: what was wrong, and with which argument.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", status_string(self.status), self.message)
    }
}

impl std::error::Error for Error {}

/// The result of every fallible call of this crate.
pub type Result<T> = std::result::Result<T, Error>;

/// `Ok(())` for `QNT_OK`, else the error with the library's message.
pub(crate) fn check(status: sys::qnt_status) -> Result<()> {
    if status == sys::QNT_OK as sys::qnt_status {
        Ok(())
    } else {
        Err(Error::from_status(status))
    }
}

/// Calls `call` with a default-initialized output and returns the output when it succeeds (a
/// getter of the C API).
pub(crate) fn out<T: Default>(call: impl FnOnce(*mut T) -> sys::qnt_status) -> Result<T> {
    let mut value = T::default();
    check(call(&mut value))?;
    Ok(value)
}

/// Calls `call` with a null handle output and returns the handle it created (a constructor of
/// the C API); a success with no handle is an internal error.
pub(crate) fn create<T>(
    what: &str,
    call: impl FnOnce(*mut *mut T) -> sys::qnt_status,
) -> Result<std::ptr::NonNull<T>> {
    let mut raw = std::ptr::null_mut();
    check(call(&mut raw))?;
    std::ptr::NonNull::new(raw).ok_or_else(|| {
        Error::new(
            ErrorKind::Internal,
            format!("the library returned no {what}"),
        )
    })
}

/// A static name for a status code (`"QNT_ERR_SHAPE_MISMATCH: shapes disagree"`); unknown
/// values give `"unknown qnt_status"`.
///
/// ```
/// assert!(qnt::status_string(5).starts_with("QNT_ERR_SHAPE_MISMATCH"));
/// ```
pub fn status_string(status: sys::qnt_status) -> &'static str {
    // SAFETY: the library returns a static, never-null, UTF-8 string.
    unsafe { static_str(sys::qnt_status_string(status)) }
}

/// The message of the last call that failed on this thread (`""` if none has). [`Error`]
/// already carries it; this is for callers of the raw [`sys`](crate::sys) functions.
pub fn last_error_message() -> String {
    // SAFETY: never null; valid until the next failing call on this thread, and copied here.
    unsafe { CStr::from_ptr(sys::qnt_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

/// The number of library handles alive in this process (`qnt_live_handles`): every context,
/// parameters reference, tensor, descriptor, prepared operator and calibrator created and not yet
/// dropped, whichever language made it. Exact only while no other thread creates or drops one.
///
/// ```
/// let before = qnt::live_handles()?;
/// let ctx = qnt::Context::new()?;
/// assert_eq!(qnt::live_handles()?, before + 1);
/// drop(ctx);
/// assert_eq!(qnt::live_handles()?, before);
/// # Ok::<(), qnt::Error>(())
/// ```
pub fn live_handles() -> Result<u64> {
    // SAFETY: a valid out-pointer.
    out(|n| unsafe { sys::qnt_live_handles(n) })
}

/// A `'static` str from one of the library's static strings.
///
/// # Safety
/// `p` must be a non-null, NUL-terminated string that lives as long as the process.
pub(crate) unsafe fn static_str(p: *const std::os::raw::c_char) -> &'static str {
    CStr::from_ptr(p).to_str().unwrap_or("(not UTF-8)")
}
