//! Quantization parameters: scales and zero points of one dtype and granularity.

use crate::error::{check, create, out, Error, ErrorKind, Result};
use crate::sys;
use crate::types::{DType, Granularity, Scheme};
use std::ptr::{self, NonNull};

/// Immutable scales and zero points for one dtype and granularity (`qnt_qparams`).
///
/// Validated on creation: every scale finite and > 0, every zero point in the dtype's range (0
/// for NF4, binary and ternary). Without zero points every zero point is the symmetric one (0
/// for signed dtypes, 2^(bits-1) for unsigned ones).
///
/// ```
/// use qnt::{DType, QParams, Scheme};
/// let qp = QParams::per_tensor(DType::U8, 0.05, 128)?;
/// assert_eq!(qp.scheme()?, Scheme::Symmetric);
/// let rows = QParams::per_axis(DType::I8, 0, &[0.1, 0.2], None)?;
/// assert_eq!(rows.scales()?, vec![0.1, 0.2]);
/// # Ok::<(), qnt::Error>(())
/// ```
#[derive(Debug)]
pub struct QParams {
    raw: NonNull<sys::qnt_qparams>,
}

// SAFETY: the header: "Immutable scales and zero points ... Safe to share between threads";
// the handle is reference counted inside the library, and destroying one reference from any
// thread is allowed.
unsafe impl Send for QParams {}
// SAFETY: as above: immutable, every method only reads.
unsafe impl Sync for QParams {}

impl QParams {
    /// Takes ownership of a handle the library returned.
    pub(crate) fn from_handle(raw: NonNull<sys::qnt_qparams>) -> QParams {
        QParams { raw }
    }

    /// The raw handle, for the [`sys`](crate::sys) functions; it stays owned by `self`.
    pub fn as_ptr(&self) -> *const sys::qnt_qparams {
        self.raw.as_ptr()
    }

    /// One scale and zero point for the whole tensor.
    pub fn per_tensor(dtype: DType, scale: f32, zero_point: i32) -> Result<QParams> {
        // SAFETY: a valid out-pointer; the values are copied.
        create("qparams", |out| unsafe {
            sys::qnt_qparams_create_per_tensor(dtype.to_raw(), scale, zero_point, out)
        })
        .map(QParams::from_handle)
    }

    /// One scale (and zero point) per index along `axis`; a tensor using them needs
    /// `shape[axis] == scales.len()`. `zero_points`, when given, has one per scale.
    pub fn per_axis(
        dtype: DType,
        axis: i64,
        scales: &[f32],
        zero_points: Option<&[i32]>,
    ) -> Result<QParams> {
        let zp = zero_points_ptr(scales.len(), zero_points)?;
        // SAFETY: scales (and zero points) hold scales.len() values, which are copied.
        create("qparams", |out| unsafe {
            sys::qnt_qparams_create_per_axis(
                dtype.to_raw(),
                axis,
                scales.len(),
                scales.as_ptr(),
                zp,
                out,
            )
        })
        .map(QParams::from_handle)
    }

    /// Parameters per block of `block_size` elements along `axis`, laid out row-major over
    /// the tensor's shape with `shape[axis]` replaced by `ceil(shape[axis] / block_size)`.
    ///
    /// ```
    /// // A [2, 64] weight in blocks of 32 along its rows: 2 x 2 scales.
    /// let qp = qnt::QParams::per_block(qnt::DType::I4, 1, 32, &[0.1, 0.2, 0.3, 0.4], None)?;
    /// assert_eq!(qp.granularity()?, qnt::Granularity::PerBlock { axis: 1, block_size: 32 });
    /// # Ok::<(), qnt::Error>(())
    /// ```
    pub fn per_block(
        dtype: DType,
        axis: i64,
        block_size: i64,
        scales: &[f32],
        zero_points: Option<&[i32]>,
    ) -> Result<QParams> {
        let zp = zero_points_ptr(scales.len(), zero_points)?;
        // SAFETY: scales (and zero points) hold scales.len() values, which are copied.
        create("qparams", |out| unsafe {
            sys::qnt_qparams_create_per_block(
                dtype.to_raw(),
                axis,
                block_size,
                scales.len(),
                scales.as_ptr(),
                zp,
                out,
            )
        })
        .map(QParams::from_handle)
    }

    /// The dtype the parameters are for.
    pub fn dtype(&self) -> Result<DType> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_qparams_dtype(self.as_ptr(), v) })?;
        DType::from_library(v)
    }

    /// The granularity, with its axis (as given at creation) and block size.
    pub fn granularity(&self) -> Result<Granularity> {
        let (mut g, mut axis, mut block) = (0, 0i64, 0i64);
        // SAFETY: a live handle and valid out-pointers.
        unsafe {
            check(sys::qnt_qparams_granularity(self.as_ptr(), &mut g))?;
            check(sys::qnt_qparams_axis(self.as_ptr(), &mut axis))?;
            check(sys::qnt_qparams_block_size(self.as_ptr(), &mut block))?;
        }
        match g as u32 {
            sys::QNT_GRANULARITY_PER_TENSOR => Ok(Granularity::PerTensor),
            sys::QNT_GRANULARITY_PER_AXIS => Ok(Granularity::PerAxis { axis }),
            sys::QNT_GRANULARITY_PER_BLOCK => Ok(Granularity::PerBlock {
                axis,
                block_size: block,
            }),
            _ => Err(Error::new(
                ErrorKind::Unknown,
                format!("unknown granularity {g}"),
            )),
        }
    }

    /// Symmetric when every zero point is the dtype's symmetric one, else affine.
    pub fn scheme(&self) -> Result<Scheme> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_qparams_scheme(self.as_ptr(), v) })?;
        Scheme::from_library(v)
    }

    /// The number of scales (1 for per-tensor).
    pub fn scale_count(&self) -> Result<usize> {
        let mut n = 0;
        // SAFETY: a live handle and a valid out-pointer.
        check(unsafe { sys::qnt_qparams_scale_count(self.as_ptr(), &mut n) })?;
        Ok(n)
    }

    /// A copy of the scales.
    pub fn scales(&self) -> Result<Vec<f32>> {
        let mut v = vec![0f32; self.scale_count()?];
        // SAFETY: v holds scale_count values, the capacity passed.
        check(unsafe { sys::qnt_qparams_scales(self.as_ptr(), v.as_mut_ptr(), v.len()) })?;
        Ok(v)
    }

    /// A copy of the zero points.
    pub fn zero_points(&self) -> Result<Vec<i32>> {
        let mut v = vec![0i32; self.scale_count()?];
        // SAFETY: v holds scale_count values, the capacity passed.
        check(unsafe { sys::qnt_qparams_zero_points(self.as_ptr(), v.as_mut_ptr(), v.len()) })?;
        Ok(v)
    }
}

impl Drop for QParams {
    fn drop(&mut self) {
        // SAFETY: this owns one reference; tensors hold references of their own.
        unsafe { sys::qnt_qparams_destroy(self.raw.as_ptr()) }
    }
}

fn zero_points_ptr(count: usize, zero_points: Option<&[i32]>) -> Result<*const i32> {
    match zero_points {
        None => Ok(ptr::null()),
        Some(z) if z.len() == count => Ok(z.as_ptr()),
        Some(z) => Err(Error::new(
            ErrorKind::ShapeMismatch,
            format!("{} zero points for {} scales", z.len(), count),
        )),
    }
}
