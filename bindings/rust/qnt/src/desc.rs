//! Operator options: an [`OpDesc`], built with [`OpDescBuilder`].

use crate::error::{check, create, out, Result};
use crate::sys;
use crate::types::{ActQuant, Layout, OpOption, WeightOnlyMode};
use std::ptr::{self, NonNull};

/// The options of an operator (`qnt_op_desc`): enum keys with `i64` values, every key at its
/// default until set. An op refuses a descriptor in which a key it does not take was set, so an
/// option is never silently ignored.
///
/// ```
/// use qnt::{Layout, OpDesc, OpOption};
/// let desc = OpDesc::builder().stride(2, 2).padding(1, 1, 1, 1).layout(Layout::Nhwc).build()?;
/// assert_eq!(desc.get(OpOption::StrideH)?, 2);
/// assert_eq!(desc.get(OpOption::Groups)?, 1); // a default
/// assert!(OpDesc::builder().groups(0).build().is_err()); // out of the key's range
/// # Ok::<(), qnt::Error>(())
/// ```
#[derive(Debug)]
pub struct OpDesc {
    raw: NonNull<sys::qnt_op_desc>,
}

// SAFETY: the header: a descriptor is "safe to share between threads for reading"; `set`
// takes `&mut self`, so it never runs while an op reads the descriptor.
unsafe impl Send for OpDesc {}
// SAFETY: as above.
unsafe impl Sync for OpDesc {}

impl OpDesc {
    /// A descriptor with every option at its default.
    pub fn new() -> Result<OpDesc> {
        // SAFETY: a valid out-pointer.
        let raw = create("descriptor", |out| unsafe { sys::qnt_op_desc_create(out) })?;
        Ok(OpDesc { raw })
    }

    /// A builder, which sets its options in [`OpDescBuilder::build`].
    pub fn builder() -> OpDescBuilder {
        OpDescBuilder {
            options: Vec::new(),
        }
    }

    /// The raw handle, for the [`sys`](crate::sys) functions; it stays owned by `self`.
    pub fn as_ptr(&self) -> *const sys::qnt_op_desc {
        self.raw.as_ptr()
    }

    /// Sets one option; an unknown key or a value out of the key's range is an error, and the
    /// descriptor is then unchanged.
    pub fn set(&mut self, key: OpOption, value: i64) -> Result<()> {
        // SAFETY: a live handle we hold exclusively.
        check(unsafe { sys::qnt_op_desc_set(self.raw.as_ptr(), key.to_raw(), value) })
    }

    /// One option's value (its default when it was not set).
    pub fn get(&self, key: OpOption) -> Result<i64> {
        // SAFETY: a live handle and a valid out-pointer.
        let v = out(|v| unsafe { sys::qnt_op_desc_get(self.as_ptr(), key.to_raw(), v) })?;
        Ok(v)
    }
}

impl Drop for OpDesc {
    fn drop(&mut self) {
        // SAFETY: this owns the handle.
        unsafe { sys::qnt_op_desc_destroy(self.raw.as_ptr()) }
    }
}

pub(crate) fn desc_ptr(desc: Option<&OpDesc>) -> *const sys::qnt_op_desc {
    desc.map_or(ptr::null(), OpDesc::as_ptr)
}

/// Builds an [`OpDesc`]: each method records one or more options, and
/// [`build`](OpDescBuilder::build) creates the descriptor and sets them in order, returning the
/// library's error for the first value it refuses.
#[derive(Clone, Debug, Default)]
pub struct OpDescBuilder {
    options: Vec<(OpOption, i64)>,
}

impl OpDescBuilder {
    /// Any option by key.
    pub fn option(mut self, key: OpOption, value: i64) -> Self {
        self.options.push((key, value));
        self
    }

    /// Convolution strides (>= 1; default 1).
    pub fn stride(self, h: i64, w: i64) -> Self {
        self.option(OpOption::StrideH, h)
            .option(OpOption::StrideW, w)
    }

    /// Convolution padding (>= 0; default 0); padded positions act as x's zero point.
    pub fn padding(self, top: i64, left: i64, bottom: i64, right: i64) -> Self {
        self.option(OpOption::PadTop, top)
            .option(OpOption::PadLeft, left)
            .option(OpOption::PadBottom, bottom)
            .option(OpOption::PadRight, right)
    }

    /// Convolution dilations (>= 1; default 1).
    pub fn dilation(self, h: i64, w: i64) -> Self {
        self.option(OpOption::DilationH, h)
            .option(OpOption::DilationW, w)
    }

    /// Convolution groups (>= 1; default 1; groups == C == M is depthwise).
    pub fn groups(self, groups: i64) -> Self {
        self.option(OpOption::Groups, groups)
    }

    /// A ReLU fused into the output (default off).
    pub fn fuse_relu(self, on: bool) -> Self {
        self.option(OpOption::FuseRelu, i64::from(on))
    }

    /// How the dynamic linear layer quantizes its activations (default per tensor).
    pub fn act_quant(self, how: ActQuant) -> Self {
        self.option(OpOption::ActQuant, i64::from(how.to_raw()))
    }

    /// Activations quantized to [0, 127] (PyTorch's reduce_range; default off).
    pub fn reduce_range(self, on: bool) -> Self {
        self.option(OpOption::ReduceRange, i64::from(on))
    }

    /// The convolution's activation layout (default NCHW).
    pub fn layout(self, layout: Layout) -> Self {
        self.option(OpOption::Layout, i64::from(layout.to_raw()))
    }

    /// The weight-only linear layer's mode (default exact f32).
    pub fn weight_only_mode(self, mode: WeightOnlyMode) -> Self {
        self.option(OpOption::WeightOnlyMode, i64::from(mode.to_raw()))
    }

    /// Creates the descriptor and sets the options.
    pub fn build(self) -> Result<OpDesc> {
        let mut desc = OpDesc::new()?;
        for (key, value) in self.options {
            desc.set(key, value)?;
        }
        Ok(desc)
    }
}
