//! Prepared operators: constant weights validated, copied and packed once, then run many times.

use crate::context::{ctx_ptr, Context};
use crate::desc::{desc_ptr, OpDesc};
use crate::error::{check, create, out, Result};
use crate::qparams::QParams;
use crate::sys;
use crate::tensor::Tensor;
use crate::types::{Isa, PreparedKind};
use std::ptr::{self, NonNull};

/// An operator with constant weights (`qnt_prepared`), laid out for the best kernels of the
/// context it was made with. It keeps no reference to the tensors it was made from, and
/// [`run`](Prepared::run) gives exactly the result of the matching one-shot call.
///
/// ```
/// use qnt::{Context, DType, Granularity, Prepared, Tensor, WeightOnlyMode, OpDesc};
/// let ctx = Context::new()?;
/// // A [4, 64] f32 weight, quantized to int4 per block of 32 along its rows.
/// let w: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) / 100.0).collect();
/// let w = Tensor::from_slice(&w, &[4, 64], None)?;
/// let qp = ctx.calibrate_minmax(&w, DType::I4, qnt::Scheme::Symmetric,
///                               Granularity::PerBlock { axis: 1, block_size: 32 })?;
/// let mut wq = Tensor::zeros(DType::I4, &[4, 64], Some(&qp))?;
/// ctx.quantize(&w, &mut wq)?;
/// let desc = OpDesc::builder().weight_only_mode(WeightOnlyMode::Int8Act).build()?;
/// let layer = Prepared::linear_weight_only(&ctx, &wq, None, Some(&desc))?;
/// let x = Tensor::from_slice(&[0.5f32; 64], &[1, 64], None)?;
/// let mut y = Tensor::zeros(DType::F32, &[1, 4], None)?;
/// layer.run(&ctx, &x, &mut y)?;
/// assert_eq!(layer.kind()?, qnt::PreparedKind::LinearWeightOnly);
/// # Ok::<(), qnt::Error>(())
/// ```
#[derive(Debug)]
pub struct Prepared {
    raw: NonNull<sys::qnt_prepared>,
}

// SAFETY: the header: "A prepared operator is immutable: it may be run from many threads at
// once, each with its own output."
unsafe impl Send for Prepared {}
// SAFETY: as above; every method takes `&self` and only reads it.
unsafe impl Sync for Prepared {}

/// `qnt_prepared_create_{matmul, linear_dynamic, linear_weight_only, conv2d}`.
type CreateFn = unsafe extern "C" fn(
    *mut sys::qnt_context,
    *const sys::qnt_tensor,
    *const sys::qnt_tensor,
    *const sys::qnt_op_desc,
    *mut *mut sys::qnt_prepared,
) -> sys::qnt_status;

fn opt_tensor(t: Option<&Tensor<'_>>) -> *const sys::qnt_tensor {
    t.map_or(ptr::null(), Tensor::as_ptr)
}

fn opt_qparams(q: Option<&QParams>) -> *const sys::qnt_qparams {
    q.map_or(ptr::null(), QParams::as_ptr)
}

impl Prepared {
    fn make(call: impl FnOnce(*mut *mut sys::qnt_prepared) -> sys::qnt_status) -> Result<Prepared> {
        create("operator", call).map(|raw| Prepared { raw })
    }

    /// The constructors of the form (ctx, weights, bias, desc, out).
    fn from_weights(
        create_fn: CreateFn,
        ctx: &Context,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
    ) -> Result<Prepared> {
        // SAFETY: live handles and a valid out-pointer; the inputs are only read.
        Prepared::make(|out| unsafe {
            create_fn(
                ctx_ptr(ctx),
                w.as_ptr(),
                opt_tensor(bias),
                desc_ptr(desc),
                out,
            )
        })
    }

    /// The raw handle, for the [`sys`](crate::sys) functions; it stays owned by `self`.
    pub fn as_ptr(&self) -> *const sys::qnt_prepared {
        self.raw.as_ptr()
    }

    /// [`Context::qmatmul`] with a constant `b` (i8 or u8, `[K, N]`) and bias; run with `a` as
    /// x. `desc` must be `None` or have no option set.
    pub fn matmul(
        ctx: &Context,
        b: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
    ) -> Result<Prepared> {
        Prepared::from_weights(sys::qnt_prepared_create_matmul, ctx, b, bias, desc)
    }

    /// [`Context::linear_dynamic`] with a constant i8 `w` `[N, K]` and f32 bias; `desc` may set
    /// the activation quantization, reduce_range and fused ReLU.
    pub fn linear_dynamic(
        ctx: &Context,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
    ) -> Result<Prepared> {
        Prepared::from_weights(sys::qnt_prepared_create_linear_dynamic, ctx, w, bias, desc)
    }

    /// A statically quantized linear layer: `w` i8 or u8 `[N, K]`, the input's per-tensor
    /// parameters `x_qparams`, the output's (`None` for an f32 output), an i32 or f32 bias;
    /// `desc` may set only the fused ReLU. See the header for the exact arithmetic.
    pub fn linear_static(
        ctx: &Context,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        x_qparams: &QParams,
        y_qparams: Option<&QParams>,
        desc: Option<&OpDesc>,
    ) -> Result<Prepared> {
        // SAFETY: live handles and a valid out-pointer; the inputs are only read.
        Prepared::make(|out| unsafe {
            sys::qnt_prepared_create_linear_static(
                ctx_ptr(ctx),
                w.as_ptr(),
                opt_tensor(bias),
                x_qparams.as_ptr(),
                opt_qparams(y_qparams),
                desc_ptr(desc),
                out,
            )
        })
    }

    /// [`Context::linear_weight_only`] with a constant `w` and f32 bias; `desc` may choose the
    /// [`WeightOnlyMode`](crate::WeightOnlyMode) (the int8-activation mode exists only in this
    /// prepared form).
    pub fn linear_weight_only(
        ctx: &Context,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
    ) -> Result<Prepared> {
        Prepared::from_weights(
            sys::qnt_prepared_create_linear_weight_only,
            ctx,
            w,
            bias,
            desc,
        )
    }

    /// [`Context::qconv2d`] with a constant `w` and bias and the geometry, layout and ReLU of
    /// `desc`.
    pub fn conv2d(
        ctx: &Context,
        w: &Tensor<'_>,
        bias: Option<&Tensor<'_>>,
        desc: Option<&OpDesc>,
    ) -> Result<Prepared> {
        Prepared::from_weights(sys::qnt_prepared_create_conv2d, ctx, w, bias, desc)
    }

    /// [`Context::binary_matmul`] with a constant `b` (binary `[N, K]`); run with `a` as x.
    /// `desc` must be `None` or have no option set.
    pub fn binary_matmul(ctx: &Context, b: &Tensor<'_>, desc: Option<&OpDesc>) -> Result<Prepared> {
        // SAFETY: live handles and a valid out-pointer; the inputs are only read.
        Prepared::make(|out| unsafe {
            sys::qnt_prepared_create_binary_matmul(ctx_ptr(ctx), b.as_ptr(), desc_ptr(desc), out)
        })
    }

    /// Runs the operator on `x`, writing `y` (`y` is untouched on failure). Results never
    /// depend on the context's threads.
    pub fn run(&self, ctx: &Context, x: &Tensor<'_>, y: &mut Tensor<'_>) -> Result<()> {
        // SAFETY: live handles; y is borrowed exclusively.
        check(unsafe {
            sys::qnt_prepared_run(ctx_ptr(ctx), self.as_ptr(), x.as_ptr(), y.as_mut_ptr())
        })
    }

    /// Which operator this is.
    pub fn kind(&self) -> Result<PreparedKind> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_prepared_kind_of(self.as_ptr(), v) })?;
        PreparedKind::from_library(v)
    }

    /// The bytes held for packed weights, bias and precomputed values.
    pub fn packed_size(&self) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_prepared_packed_size(self.as_ptr(), v) })?;
        Ok(v)
    }

    /// The kernel set the operator was prepared for.
    pub fn isa(&self) -> Result<Isa> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_prepared_isa(self.as_ptr(), v) })?;
        Isa::from_library(v)
    }
}

impl Drop for Prepared {
    fn drop(&mut self) {
        // SAFETY: this owns the handle.
        unsafe { sys::qnt_prepared_destroy(self.raw.as_ptr()) }
    }
}
