//! The context (threads, kernel cap, machine facts) and the operators that run with it.

use crate::desc::{desc_ptr, OpDesc};
use crate::error::{check, create, out, Error, ErrorKind, Result};
use crate::qparams::QParams;
use crate::sys;
use crate::tensor::Tensor;
use crate::types::{CpuFeatures, DType, Granularity, Isa, Scheme, Tuning};
use std::ffi::{c_void, CStr};
use std::ptr::{self, NonNull};

/// Threads, a kernel cap and the machine's features (`qnt_context`); every operator runs with
/// one.
///
/// ```
/// let mut ctx = qnt::Context::new()?;
/// ctx.set_num_threads(2)?;
/// assert_eq!(ctx.num_threads()?, 2);
/// ctx.set_max_isa(qnt::Isa::Reference)?; // the scalar reference kernels: same bits, slower
/// assert_eq!(ctx.isa()?, qnt::Isa::Reference);
/// # Ok::<(), qnt::Error>(())
/// ```
#[derive(Debug)]
pub struct Context {
    raw: NonNull<sys::qnt_context>,
}

// SAFETY: the header: a context "may be used by several threads at once; its setters must not
// run while another thread uses the context". Every setter here takes `&mut self`, so it cannot
// run while any `&Context` is in use; the rest take `&self`.
unsafe impl Send for Context {}
// SAFETY: as above.
unsafe impl Sync for Context {}

/// The number of logical CPUs this process may run on, and of physical cores among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuCount {
    /// Logical CPUs.
    pub logical: i32,
    /// Physical cores (0 where the operating system does not say).
    pub physical: i32,
}

/// How well parameters represent a tensor: the result of quantizing it and dequantizing back
/// ([`Context::error_report`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorReport {
    /// Mean squared error.
    pub mse: f64,
    /// Signal-to-quantization-noise ratio in dB (+inf when the error is 0).
    pub sqnr_db: f64,
    /// Largest absolute error.
    pub max_abs_error: f64,
    /// Share of values whose quantization clipped.
    pub saturated_fraction: f64,
    /// Finite values measured.
    pub count: u64,
}

/// `qnt_quantize`, `qnt_dequantize`, `qnt_requantize`, `qnt_qrelu`.
type UnaryFn = unsafe extern "C" fn(
    *mut sys::qnt_context,
    *const sys::qnt_tensor,
    *mut sys::qnt_tensor,
) -> sys::qnt_status;

/// `qnt_linear_dynamic`, `qnt_qconv2d`.
type WeightsFn = unsafe extern "C" fn(
    *mut sys::qnt_context,
    *const sys::qnt_tensor,
    *const sys::qnt_tensor,
    *const sys::qnt_tensor,
    *const sys::qnt_op_desc,
    *mut sys::qnt_tensor,
) -> sys::qnt_status;

pub(crate) fn ctx_ptr(ctx: &Context) -> *mut sys::qnt_context {
    ctx.raw.as_ptr()
}

fn opt_tensor(t: Option<&Tensor<'_>>) -> *const sys::qnt_tensor {
    t.map_or(ptr::null(), Tensor::as_ptr)
}

impl Context {
    /// A context with the default threads (OpenMP's default) and no kernel cap.
    pub fn new() -> Result<Context> {
        // SAFETY: a valid out-pointer.
        let raw = create("context", |out| unsafe { sys::qnt_context_create(out) })?;
        Ok(Context { raw })
    }

    /// The raw handle, for the [`sys`](crate::sys) functions; it stays owned by `self`.
    pub fn as_ptr(&self) -> *mut sys::qnt_context {
        self.raw.as_ptr()
    }

    /// The threads ops may use: 1..=1024, or 0 for the default.
    pub fn set_num_threads(&mut self, n: usize) -> Result<()> {
        let n = i32::try_from(n).unwrap_or(i32::MAX);
        // SAFETY: a live handle held exclusively.
        check(unsafe { sys::qnt_context_set_num_threads(self.as_ptr(), n) })
    }

    /// The threads ops will use (never 0).
    pub fn num_threads(&self) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_context_num_threads(self.as_ptr(), v) })?;
        Ok(v as usize)
    }

    /// Caps the kernels at `isa` ([`Isa::Native`] removes the cap). Every kernel set gives the
    /// same bits.
    pub fn set_max_isa(&mut self, isa: Isa) -> Result<()> {
        // SAFETY: a live handle held exclusively.
        check(unsafe { sys::qnt_context_set_max_isa(self.as_ptr(), isa.to_raw()) })
    }

    /// Sets the tuning mode (since 0.11): kernel parameters chosen per shape by measurement,
    /// kept in the process's table ([`tuning_export`], [`tuning_import`]). Results never change.
    pub fn set_tuning(&mut self, mode: Tuning) -> Result<()> {
        // SAFETY: a live handle held exclusively.
        check(unsafe { sys::qnt_context_set_tuning(self.as_ptr(), mode.to_raw()) })
    }

    /// The tuning mode.
    pub fn tuning(&self) -> Result<Tuning> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_context_tuning(self.as_ptr(), v) })?;
        Tuning::from_library(v)
    }

    /// The kernel set in use: the cap applied to what the machine runs.
    pub fn isa(&self) -> Result<Isa> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_context_isa(self.as_ptr(), v) })?;
        Isa::from_library(v)
    }

    /// The kernels chosen, one `family.dtype.run=set` line each.
    pub fn kernels(&self) -> Result<&str> {
        let mut p = ptr::null();
        // SAFETY: the string lives until the context is destroyed or re-capped, which needs
        // `&mut self` and so cannot happen while the returned borrow lives.
        check(unsafe { sys::qnt_context_kernels(self.as_ptr(), &mut p) })?;
        Ok(unsafe { CStr::from_ptr(p) }.to_str().unwrap_or(""))
    }

    /// The CPU features (CPU and OS support both).
    pub fn cpu_features(&self) -> Result<CpuFeatures> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_context_cpu_features(self.as_ptr(), v) })?;
        Ok(CpuFeatures(v))
    }

    /// Logical CPUs and physical cores.
    pub fn cpu_count(&self) -> Result<CpuCount> {
        let (mut logical, mut physical) = (0, 0);
        // SAFETY: a live handle and valid out-pointers.
        check(unsafe { sys::qnt_context_cpu_count(self.as_ptr(), &mut logical, &mut physical) })?;
        Ok(CpuCount { logical, physical })
    }

    /// The size in bytes of the level-1 data, level-2 or level-3 cache (0 where unknown).
    pub fn cache_size(&self, level: i32) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_context_cache_size(self.as_ptr(), level, v) })?;
        Ok(v)
    }

    /// The number of CUDA devices qnt can use (0 without the CUDA module, driver or a device).
    pub fn cuda_device_count(&self) -> Result<i32> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_context_cuda_device_count(self.as_ptr(), v) })?;
        Ok(v)
    }

    /// The compute capability `(major, minor)` of a CUDA device.
    pub fn cuda_compute_capability(&self, device: i32) -> Result<(i32, i32)> {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: a live handle and valid out-pointers.
        check(unsafe {
            sys::qnt_context_cuda_compute_capability(self.as_ptr(), device, &mut major, &mut minor)
        })?;
        Ok((major, minor))
    }

    /// EXPERIMENTAL (as in the header). Binds the context to a CUDA device and stream.
    ///
    /// # Safety
    /// `stream` must be null (the default stream) or a `cudaStream_t` of that device that stays
    /// alive while the context uses it.
    pub unsafe fn set_cuda_stream(&mut self, device: i32, stream: *mut c_void) -> Result<()> {
        check(sys::qnt_context_set_cuda_stream(
            self.as_ptr(),
            device,
            stream,
        ))
    }

    /// Waits for the device work submitted through the context and returns its first
    /// asynchronous error; at once `Ok` for a context that ran none.
    pub fn synchronize(&self) -> Result<()> {
        // SAFETY: a live handle.
        check(unsafe { sys::qnt_context_synchronize(self.as_ptr()) })
    }

    /// The element-wise ops of the form (ctx, x, y).
    fn unary(&self, op: UnaryFn, x: &Tensor<'_>, y: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe { op(self.as_ptr(), x.as_ptr(), y.as_mut_ptr()) })
    }

    /// The ops of the form (ctx, x, w, bias, desc, y).
    fn with_weights(
        &self,
        op: WeightsFn,
        x: &Tensor<'_>,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
        y: &mut Tensor<'_>,
    ) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe {
            op(
                self.as_ptr(),
                x.as_ptr(),
                w.as_ptr(),
                opt_tensor(bias),
                desc_ptr(desc),
                y.as_mut_ptr(),
            )
        })
    }

    /// `y = quantize(x)`: `x` f32, `y` quantized with its parameters (ONNX QuantizeLinear).
    pub fn quantize(&self, x: &Tensor<'_>, y: &mut Tensor<'_>) -> Result<()> {
        self.unary(sys::qnt_quantize, x, y)
    }

    /// `y = dequantize(q)`: `q` quantized with its parameters, `y` f32.
    pub fn dequantize(&self, q: &Tensor<'_>, y: &mut Tensor<'_>) -> Result<()> {
        self.unary(sys::qnt_dequantize, q, y)
    }

    /// `dst = quantize(dequantize(src))` with each side's own parameters.
    pub fn requantize(&self, src: &Tensor<'_>, dst: &mut Tensor<'_>) -> Result<()> {
        self.unary(sys::qnt_requantize, src, dst)
    }

    /// Min-max calibration with PyTorch's formulas over the f32 tensor `x`, one group per
    /// parameter of `granularity`.
    pub fn calibrate_minmax(
        &self,
        x: &Tensor<'_>,
        dtype: DType,
        scheme: Scheme,
        granularity: Granularity,
    ) -> Result<QParams> {
        let (g, axis, block) = granularity.to_raw();
        // SAFETY: live handles and a valid out-pointer.
        create("qparams", |out| unsafe {
            sys::qnt_calibrate_minmax(
                self.as_ptr(),
                x.as_ptr(),
                dtype.to_raw(),
                scheme.to_raw(),
                g,
                axis,
                block,
                out,
            )
        })
        .map(QParams::from_handle)
    }

    /// As [`calibrate_minmax`](Context::calibrate_minmax) with PyTorch's custom quant_min and
    /// quant_max in place of the dtype's range.
    pub fn calibrate_minmax_range(
        &self,
        x: &Tensor<'_>,
        dtype: DType,
        scheme: Scheme,
        granularity: Granularity,
        quant_min: i32,
        quant_max: i32,
    ) -> Result<QParams> {
        let (g, axis, block) = granularity.to_raw();
        // SAFETY: live handles and a valid out-pointer.
        create("qparams", |out| unsafe {
            sys::qnt_calibrate_minmax_range(
                self.as_ptr(),
                x.as_ptr(),
                dtype.to_raw(),
                scheme.to_raw(),
                g,
                axis,
                block,
                quant_min,
                quant_max,
                out,
            )
        })
        .map(QParams::from_handle)
    }

    /// Scales for the codebook dtypes (NF4 absmax, binary mean |x|, ternary absmean, log absmax).
    pub fn calibrate_codebook(
        &self,
        x: &Tensor<'_>,
        dtype: DType,
        granularity: Granularity,
    ) -> Result<QParams> {
        let (g, axis, block) = granularity.to_raw();
        // SAFETY: live handles and a valid out-pointer.
        create("qparams", |out| unsafe {
            sys::qnt_calibrate_codebook(
                self.as_ptr(),
                x.as_ptr(),
                dtype.to_raw(),
                g,
                axis,
                block,
                out,
            )
        })
        .map(QParams::from_handle)
    }

    /// `qp` with every scale a power of two (since 0.11): without `x` the power of two at or
    /// above each scale; with `x`, of the powers of two either side, the one with the smaller
    /// squared error on the group's values of `x`.
    pub fn pow2_scales(&self, qp: &QParams, x: Option<&Tensor<'_>>) -> Result<QParams> {
        let xp = x.map_or(std::ptr::null(), |t| t.as_ptr());
        // SAFETY: live handles (or null for x) and a valid out-pointer.
        create("qparams", |out| unsafe {
            sys::qnt_qparams_pow2_scales(self.as_ptr(), qp.as_ptr(), xp, out)
        })
        .map(QParams::from_handle)
    }

    /// How well `qp` represents `x`: quantized and dequantized back, in double precision.
    pub fn error_report(&self, x: &Tensor<'_>, qp: &QParams) -> Result<ErrorReport> {
        let mut r = sys::qnt_error_report {
            mse: 0.0,
            sqnr_db: 0.0,
            max_abs_error: 0.0,
            saturated_fraction: 0.0,
            count: 0,
        };
        // SAFETY: r is a whole qnt_error_report of the size passed.
        check(unsafe {
            sys::qnt_error_report_compute(
                self.as_ptr(),
                x.as_ptr(),
                qp.as_ptr(),
                &mut r,
                std::mem::size_of::<sys::qnt_error_report>(),
            )
        })?;
        Ok(ErrorReport {
            mse: r.mse,
            sqnr_db: r.sqnr_db,
            max_abs_error: r.max_abs_error,
            saturated_fraction: r.saturated_fraction,
            count: r.count,
        })
    }

    /// Quantized matrix product (ONNX MatMulInteger and QLinearMatMul): `a` `[..., M, K]` and
    /// `b` `[K, N]` i8 or u8; `y`'s dtype picks the mode (i32 accumulators, requantized i8/u8,
    /// or f32).
    pub fn qmatmul(
        &self,
        a: &Tensor<'_>,
        b: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        y: &mut Tensor<'_>,
    ) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe {
            sys::qnt_qmatmul(
                self.as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
                opt_tensor(bias),
                y.as_mut_ptr(),
            )
        })
    }

    /// Binary matrix product by XOR and popcount: `a` binary `[M, K]` times `b` binary `[N, K]`
    /// (values -1 and +1); `y` i32 `[M, N]` (the exact sums) or f32 (scaled by the rows'
    /// scales: `a` and `b` then need qparams).
    pub fn binary_matmul(&self, a: &Tensor<'_>, b: &Tensor<'_>, y: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe { sys::qnt_binary_matmul(self.as_ptr(), a.as_ptr(), b.as_ptr(), y.as_mut_ptr()) })
    }

    /// ONNX DynamicQuantizeLinear: a new u8 tensor of `x`'s shape with per-tensor parameters
    /// computed from `x` (read them with [`Tensor::qparams`]).
    pub fn dynamic_quantize_linear(&self, x: &Tensor<'_>) -> Result<Tensor<'static>> {
        // SAFETY: live handles and a valid out-pointer; the result is a new owned tensor.
        create("tensor", |out| unsafe {
            sys::qnt_dynamic_quantize_linear(self.as_ptr(), x.as_ptr(), out)
        })
        .map(Tensor::from_handle)
    }

    /// Dynamically quantized linear layer: `x` f32 `[..., K]`, `w` i8 `[N, K]`, optional f32
    /// bias `[N]`, `y` f32 `[..., N]`.
    pub fn linear_dynamic(
        &self,
        x: &Tensor<'_>,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
        y: &mut Tensor<'_>,
    ) -> Result<()> {
        self.with_weights(sys::qnt_linear_dynamic, x, w, bias, desc, y)
    }

    /// Weight-only quantized linear layer, exact f32 mode: `x` f32 `[..., K]`, `w` quantized
    /// `[N, K]` (int4 per block, NF4, ...), optional f32 bias, `y` f32 `[..., N]`.
    pub fn linear_weight_only(
        &self,
        x: &Tensor<'_>,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        y: &mut Tensor<'_>,
    ) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe {
            sys::qnt_linear_weight_only(
                self.as_ptr(),
                x.as_ptr(),
                w.as_ptr(),
                opt_tensor(bias),
                y.as_mut_ptr(),
            )
        })
    }

    /// Quantized 2-D convolution (ONNX QLinearConv and ConvInteger); geometry, layout and ReLU
    /// from `desc`.
    pub fn qconv2d(
        &self,
        x: &Tensor<'_>,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
        y: &mut Tensor<'_>,
    ) -> Result<()> {
        self.with_weights(sys::qnt_qconv2d, x, w, bias, desc, y)
    }

    /// Quantized addition of two tensors of one shape, each with per-tensor parameters.
    pub fn qadd(
        &self,
        a: &Tensor<'_>,
        b: &Tensor<'_>,
        desc: Option<&OpDesc>,
        y: &mut Tensor<'_>,
    ) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe {
            sys::qnt_qadd(
                self.as_ptr(),
                a.as_ptr(),
                b.as_ptr(),
                desc_ptr(desc),
                y.as_mut_ptr(),
            )
        })
    }

    /// Quantized ReLU: `y = max(x, zero_point)`.
    pub fn qrelu(&self, x: &Tensor<'_>, y: &mut Tensor<'_>) -> Result<()> {
        self.unary(sys::qnt_qrelu, x, y)
    }

    /// ReLU with an upper bound (ReLU6 with `upper = 6.0`).
    pub fn qrelu_clamp(&self, x: &Tensor<'_>, upper: f32, y: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe { sys::qnt_qrelu_clamp(self.as_ptr(), x.as_ptr(), upper, y.as_mut_ptr()) })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: this owns the handle; tensors and operators hold no reference to it.
        unsafe { sys::qnt_context_destroy(self.raw.as_ptr()) }
    }
}

/// The output shape of [`Context::qconv2d`] for these `x` and `w` and options.
///
/// ```
/// use qnt::{DType, OpDesc, Tensor};
/// let x = Tensor::zeros(DType::U8, &[1, 3, 32, 32], None)?;
/// let w = Tensor::zeros(DType::I8, &[8, 3, 3, 3], None)?;
/// let desc = OpDesc::builder().stride(2, 2).padding(1, 1, 1, 1).build()?;
/// assert_eq!(qnt::conv2d_output_shape(&x, &w, Some(&desc))?, [1, 8, 16, 16]);
/// # Ok::<(), qnt::Error>(())
/// ```
pub fn conv2d_output_shape(
    x: &Tensor<'_>,
    w: &Tensor<'_>,
    desc: Option<&OpDesc>,
) -> Result<[i64; 4]> {
    let mut shape = [0i64; 4];
    // SAFETY: live handles; shape holds 4 values, the capacity passed.
    check(unsafe {
        sys::qnt_conv2d_output_shape(
            x.as_ptr(),
            w.as_ptr(),
            desc_ptr(desc),
            shape.as_mut_ptr(),
            shape.len(),
        )
    })?;
    Ok(shape)
}

/// Ternary weights in bitnet.cpp's layouts (`qnt_ternary_layout`): I2_S, TL1 and TL2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TernaryLayout {
    /// bitnet.cpp's I2_S: 128-weight blocks of 2-bit codes, the float32 scale after them.
    I2S,
    /// bitnet.cpp's TL1: pair indices, tiled by `(bm, bk, bmm)`.
    Tl1 {
        /// bm, bk and bmm of the shape's kernel_config.ini section.
        tiling: [i64; 3],
    },
    /// bitnet.cpp's TL2: triple magnitudes and sign bits, tiled by `(bm, bk, bmm)`.
    Tl2 {
        /// bm, bk and bmm of the shape's kernel_config.ini section.
        tiling: [i64; 3],
    },
}

impl TernaryLayout {
    fn raw(self) -> (sys::qnt_ternary_layout, Option<sys::qnt_ternary_tiling>) {
        let tiling = |t: [i64; 3]| sys::qnt_ternary_tiling { bm: t[0], bk: t[1], bmm: t[2] };
        match self {
            TernaryLayout::I2S => (sys::QNT_TERNARY_I2_S as i32, None),
            TernaryLayout::Tl1 { tiling: t } => (sys::QNT_TERNARY_TL1 as i32, Some(tiling(t))),
            TernaryLayout::Tl2 { tiling: t } => (sys::QNT_TERNARY_TL2 as i32, Some(tiling(t))),
        }
    }
}

/// The process's tuning table as text (`qnt_tuning_export`), for [`tuning_import`] in a later run.
pub fn tuning_export() -> Result<String> {
    let mut size = 0usize;
    // SAFETY: a null buffer of capacity 0 asks the size.
    check(unsafe { sys::qnt_tuning_export(std::ptr::null_mut(), 0, &mut size) })?;
    let mut buf = vec![0u8; size];
    // SAFETY: buf holds size bytes.
    check(unsafe { sys::qnt_tuning_export(buf.as_mut_ptr().cast(), buf.len(), &mut size) })?;
    buf.truncate(size.saturating_sub(1));
    String::from_utf8(buf).map_err(|_| Error::new(ErrorKind::Internal, "the tuning table is not UTF-8"))
}

/// Adds a table [`tuning_export`] wrote to the process's (all or nothing).
pub fn tuning_import(text: &str) -> Result<()> {
    let c = std::ffi::CString::new(text)
        .map_err(|_| Error::new(ErrorKind::CorruptData, "the tuning table holds a NUL byte"))?;
    // SAFETY: a NUL-terminated string.
    check(unsafe { sys::qnt_tuning_import(c.as_ptr()) })
}

/// Empties the process's tuning table.
pub fn tuning_clear() {
    // SAFETY: no arguments; never fails.
    unsafe { sys::qnt_tuning_clear() }
}

/// The bytes of a ternary `[rows, cols]` tensor in `layout` (`qnt_ternary_layout_size`).
pub fn ternary_layout_size(layout: TernaryLayout, rows: i64, cols: i64) -> Result<usize> {
    let (l, t) = layout.raw();
    let tp = t.as_ref().map_or(std::ptr::null(), |t| t as *const sys::qnt_ternary_tiling);
    let mut n = 0usize;
    // SAFETY: tp is null or points at a live tiling; n is a valid out-pointer.
    check(unsafe { sys::qnt_ternary_layout_size(l, rows, cols, tp, &mut n) })?;
    Ok(n)
}

/// A ternary `[rows, cols]` tensor as the bytes of `layout` (`qnt_ternary_export`); I2_S needs
/// per-tensor qparams (its scale).
pub fn ternary_export(w: &Tensor<'_>, layout: TernaryLayout) -> Result<Vec<u8>> {
    let shape = w.shape()?;
    if shape.len() != 2 {
        // the C call names the error
        let mut empty = [0u8; 1];
        let (l, t) = layout.raw();
        let tp = t.as_ref().map_or(std::ptr::null(), |t| t as *const sys::qnt_ternary_tiling);
        // SAFETY: live handle; empty holds 1 byte, the capacity passed.
        check(unsafe { sys::qnt_ternary_export(l, w.as_ptr(), tp, empty.as_mut_ptr().cast(), 1) })?;
        return Ok(Vec::new());
    }
    let n = ternary_layout_size(layout, shape[0], shape[1])?;
    let mut out = vec![0u8; n];
    let (l, t) = layout.raw();
    let tp = t.as_ref().map_or(std::ptr::null(), |t| t as *const sys::qnt_ternary_tiling);
    // SAFETY: live handle; out holds n bytes, the capacity passed.
    check(unsafe { sys::qnt_ternary_export(l, w.as_ptr(), tp, out.as_mut_ptr().cast(), out.len()) })?;
    Ok(out)
}

/// The ternary `[rows, cols]` tensor that `data` holds in `layout` (`qnt_ternary_import`);
/// `scale` is TL1's and TL2's (I2_S carries its own).
pub fn ternary_import(
    data: &[u8],
    layout: TernaryLayout,
    rows: i64,
    cols: i64,
    scale: f32,
) -> Result<Tensor<'static>> {
    let (l, t) = layout.raw();
    let tp = t.as_ref().map_or(std::ptr::null(), |t| t as *const sys::qnt_ternary_tiling);
    // SAFETY: data is read for its length; the result is a new owned tensor.
    create("tensor", |out| unsafe {
        sys::qnt_ternary_import(l, data.as_ptr().cast(), data.len(), rows, cols, tp, scale, out)
    })
    .map(Tensor::from_handle)
}

