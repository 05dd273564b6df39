//! Streaming calibration: observe batches, merge shards, compute parameters.

use crate::context::{ctx_ptr, Context};
use crate::error::{check, create, out, Result};
use crate::qparams::QParams;
use crate::sys;
use crate::tensor::Tensor;
use crate::types::{CalibMethod, CalibOption, DType, Granularity, Scheme};
use std::ffi::c_void;
use std::ptr::{self, NonNull};

/// A streaming calibrator (`qnt_calibrator`): it observes f32 batches one at a time and
/// computes parameters from everything it saw. Statistics merge and serialize, and results never
/// depend on how the data was split into batches or shards.
///
/// ```
/// use qnt::{CalibMethod, Calibrator, Context, DType, Granularity, Scheme, Tensor};
/// let ctx = Context::new()?;
/// let mut cal = Calibrator::new(CalibMethod::MinMax, DType::I8, Scheme::Symmetric,
///                               Granularity::PerTensor)?;
/// for batch in [[0.5f32, -1.0], [2.54, 0.0]] {
///     cal.observe(&ctx, &Tensor::from_slice(&batch, &[2], None)?)?;
/// }
/// let qp = cal.compute(&ctx)?;
/// assert_eq!(qp.scales()?, vec![2.54f32 / 127.5]);
/// assert_eq!(cal.counts()?.finite, 4);
/// # Ok::<(), qnt::Error>(())
/// ```
///
/// A calibrator is `Send` but not `Sync`: one thread at a time uses it.
///
/// ```compile_fail,E0277
/// fn shared<T: Sync>(_: &T) {}
/// let cal = qnt::Calibrator::new(qnt::CalibMethod::MinMax, qnt::DType::I8,
///                                qnt::Scheme::Symmetric, qnt::Granularity::PerTensor).unwrap();
/// shared(&cal);
/// ```
#[derive(Debug)]
pub struct Calibrator {
    raw: NonNull<sys::qnt_calibrator>,
}

// SAFETY: the handle has no thread affinity; moving it to another thread is fine.
// Not Sync: the header says a calibrator is "not safe to use from several threads at once"
// (use one per thread and merge), so `&Calibrator` must not be shared.
unsafe impl Send for Calibrator {}

/// How many values a calibrator has seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CalibCounts {
    /// Finite values observed.
    pub finite: u64,
    /// NaN values skipped.
    pub nan: u64,
    /// Infinite values skipped.
    pub inf: u64,
}

impl Calibrator {
    fn from_handle(raw: NonNull<sys::qnt_calibrator>) -> Calibrator {
        Calibrator { raw }
    }

    /// A calibrator for `method` producing parameters of an integer `dtype` (i8, u8, i16, u16,
    /// i4, u4, i32), `scheme` and granularity per tensor or per axis.
    pub fn new(
        method: CalibMethod,
        dtype: DType,
        scheme: Scheme,
        granularity: Granularity,
    ) -> Result<Calibrator> {
        let (g, axis, _) = granularity.to_raw();
        // SAFETY: a valid out-pointer.
        create("calibrator", |out| unsafe {
            sys::qnt_calibrator_create(
                method.to_raw(),
                dtype.to_raw(),
                scheme.to_raw(),
                g,
                axis,
                out,
            )
        })
        .map(Calibrator::from_handle)
    }

    /// Recreates a calibrator from [`serialize`](Calibrator::serialize)'s bytes; damaged or
    /// foreign bytes are [`ErrorKind::CorruptData`](crate::ErrorKind::CorruptData).
    pub fn deserialize(bytes: &[u8]) -> Result<Calibrator> {
        // SAFETY: bytes holds bytes.len() bytes; valid out-pointer.
        create("calibrator", |out| unsafe {
            sys::qnt_calibrator_deserialize(bytes.as_ptr().cast::<c_void>(), bytes.len(), out)
        })
        .map(Calibrator::from_handle)
    }

    /// The raw handle, for the [`sys`](crate::sys) functions; it stays owned by `self`.
    pub fn as_ptr(&self) -> *const sys::qnt_calibrator {
        self.raw.as_ptr()
    }

    /// Sets an option, before the first batch.
    pub fn set_option(&mut self, option: CalibOption, value: f64) -> Result<()> {
        // SAFETY: a live handle held exclusively.
        check(unsafe { sys::qnt_calibrator_set_option(self.raw.as_ptr(), option.to_raw(), value) })
    }

    /// Folds one f32 batch into the statistics (unchanged on failure).
    pub fn observe(&mut self, ctx: &Context, x: &Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; the calibrator is held exclusively.
        check(unsafe { sys::qnt_calibrator_observe(ctx_ptr(ctx), self.raw.as_ptr(), x.as_ptr()) })
    }

    /// Computes parameters from everything observed.
    pub fn compute(&self, ctx: &Context) -> Result<QParams> {
        // SAFETY: live handles and a valid out-pointer.
        create("qparams", |out| unsafe {
            sys::qnt_calibrator_compute(ctx_ptr(ctx), self.as_ptr(), out)
        })
        .map(QParams::from_handle)
    }

    /// For [`CalibMethod::Adaptive`] after compute: the method whose result was kept; otherwise
    /// the method itself.
    pub fn chosen_method(&self) -> Result<CalibMethod> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_calibrator_chosen_method(self.as_ptr(), v) })?;
        CalibMethod::from_library(v)
    }

    /// Forgets everything observed (options stay).
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: a live handle held exclusively.
        check(unsafe { sys::qnt_calibrator_reset(self.raw.as_ptr()) })
    }

    /// Folds `other`'s statistics into `self` (`other` is unchanged). Both need the same
    /// settings; moving average cannot be merged.
    pub fn merge(&mut self, other: &Calibrator) -> Result<()> {
        // SAFETY: two distinct live handles (the borrows cannot alias).
        check(unsafe { sys::qnt_calibrator_merge(self.raw.as_ptr(), other.as_ptr()) })
    }

    /// The values observed and skipped.
    pub fn counts(&self) -> Result<CalibCounts> {
        let mut c = CalibCounts::default();
        // SAFETY: a live handle and valid out-pointers.
        check(unsafe {
            sys::qnt_calibrator_counts(self.as_ptr(), &mut c.finite, &mut c.nan, &mut c.inf)
        })?;
        Ok(c)
    }

    /// The settings and statistics as bytes (a versioned little-endian format with a
    /// checksum), for [`deserialize`](Calibrator::deserialize) here or on another machine.
    pub fn serialize(&self) -> Result<Vec<u8>> {
        let mut size = 0usize;
        // SAFETY: a size query (null buffer, capacity 0).
        check(unsafe {
            sys::qnt_calibrator_serialize(self.as_ptr(), ptr::null_mut(), 0, &mut size)
        })?;
        let mut buf = vec![0u8; size];
        // SAFETY: buf holds `size` bytes, the capacity passed.
        check(unsafe {
            sys::qnt_calibrator_serialize(
                self.as_ptr(),
                buf.as_mut_ptr().cast::<c_void>(),
                buf.len(),
                &mut size,
            )
        })?;
        buf.truncate(size);
        Ok(buf)
    }
}

impl Drop for Calibrator {
    fn drop(&mut self) {
        // SAFETY: this owns the handle.
        unsafe { sys::qnt_calibrator_destroy(self.raw.as_ptr()) }
    }
}
