//! Mixed precision by measured error: a format per tensor under a budget.

use crate::context::{ctx_ptr, Context};
use crate::error::{check, create, out, Error, ErrorKind, Result};
use crate::sys;
use crate::tensor::Tensor;
use crate::types::Budget;
use std::ffi::{CStr, CString};
use std::ptr::{self, NonNull};

/// A recommender (`qnt_recommender`): candidate formats ("i8", "i4.b128", "nf4.b64", "q4_k",
/// "ternary", "log4.b32", ...), tensors measured in each as they are added, and a choice per
/// tensor under a budget that explains itself in a table.
///
/// ```
/// use qnt::{Budget, Context, Recommender, Tensor};
/// let ctx = Context::new()?;
/// let mut rec = Recommender::new()?;
/// for f in ["i8", "i4.b32"] {
///     rec.add_format(f)?;
/// }
/// let w: Vec<f32> = (0..256).map(|i| ((i * 37 % 101) as f32 - 50.0) * 0.01).collect();
/// rec.add_tensor(&ctx, "fc", &Tensor::from_slice(&w, &[4, 64], None)?, None)?;
/// rec.run(Budget::MinSqnr, 20.0)?;
/// let c = rec.choice(0)?;
/// assert_eq!(c.format, "i4.b32"); // the cheaper format keeps 20 dB
/// assert!(rec.report()?.contains("fc"));
/// # Ok::<(), qnt::Error>(())
/// ```
#[derive(Debug)]
pub struct Recommender {
    raw: NonNull<sys::qnt_recommender>,
}

// SAFETY: the handle has no thread affinity. Not Sync: one thread at a time uses it.
unsafe impl Send for Recommender {}

/// One tensor's choice after [`Recommender::run`].
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The tensor's name.
    pub name: String,
    /// The chosen format's name, lower-cased.
    pub format: String,
    /// The bytes it takes in that format.
    pub bytes: u64,
    /// Its SQNR in dB (importance-weighted where importances were given); +inf when exact.
    pub sqnr_db: f64,
}

fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| Error::new(ErrorKind::InvalidArgument, format!("{what} holds a NUL byte")))
}

impl Recommender {
    /// An empty recommender.
    pub fn new() -> Result<Recommender> {
        // SAFETY: a valid out-pointer.
        create("recommender", |out| unsafe { sys::qnt_recommender_create(out) })
            .map(|raw| Recommender { raw })
    }

    /// Adds a candidate format, before the first tensor.
    pub fn add_format(&mut self, format: &str) -> Result<()> {
        let f = cstring(format, "format")?;
        // SAFETY: a live handle and a NUL-terminated string.
        check(unsafe { sys::qnt_recommender_add_format(self.raw.as_ptr(), f.as_ptr()) })
    }

    /// Measures `w` (f32; the last axis is the input channel) in every format, weighted by one
    /// importance per input channel where given.
    pub fn add_tensor(
        &mut self,
        ctx: &Context,
        name: &str,
        w: &Tensor<'_>,
        importance: Option<&[f32]>,
    ) -> Result<()> {
        let n = cstring(name, "name")?;
        let (p, len) = importance.map_or((ptr::null(), 0), |v| (v.as_ptr(), v.len()));
        // SAFETY: live handles; p holds len values or is null with len 0.
        check(unsafe {
            sys::qnt_recommender_add_tensor(ctx_ptr(ctx), self.raw.as_ptr(), n.as_ptr(), w.as_ptr(), p, len)
        })
    }

    /// Chooses a format per tensor under the budget.
    pub fn run(&mut self, budget: Budget, value: f64) -> Result<()> {
        // SAFETY: a live handle.
        check(unsafe { sys::qnt_recommender_run(self.raw.as_ptr(), budget.to_raw(), value) })
    }

    /// The number of tensors added.
    pub fn tensor_count(&self) -> Result<usize> {
        // SAFETY: a live handle and a valid out-pointer.
        out(|o| unsafe { sys::qnt_recommender_tensor_count(self.raw.as_ptr(), o) })
    }

    /// Tensor `index`'s choice after the last run.
    pub fn choice(&self, index: usize) -> Result<Choice> {
        let (mut name, mut format) = (ptr::null(), ptr::null());
        let (mut bytes, mut sqnr) = (0u64, 0f64);
        // SAFETY: a live handle and valid out-pointers; the strings live while self does and is
        // not run again (they are copied at once).
        unsafe {
            check(sys::qnt_recommender_choice(
                self.raw.as_ptr(),
                index,
                &mut name,
                &mut format,
                &mut bytes,
                &mut sqnr,
            ))?;
            Ok(Choice {
                name: CStr::from_ptr(name).to_string_lossy().into_owned(),
                format: CStr::from_ptr(format).to_string_lossy().into_owned(),
                bytes,
                sqnr_db: sqnr,
            })
        }
    }

    /// The last run's table: each tensor's choice and runner-up, then the totals.
    pub fn report(&self) -> Result<String> {
        let mut p = ptr::null();
        // SAFETY: a live handle; the string is copied at once.
        unsafe {
            check(sys::qnt_recommender_report(self.raw.as_ptr(), &mut p))?;
            Ok(CStr::from_ptr(p).to_string_lossy().into_owned())
        }
    }
}

impl Drop for Recommender {
    fn drop(&mut self) {
        // SAFETY: this owns the handle.
        unsafe { sys::qnt_recommender_destroy(self.raw.as_ptr()) }
    }
}
