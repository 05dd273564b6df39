//! Safe Rust bindings to **qnt**, a quantization library for neural-network inference: int8,
//! int4, NF4, binary and ternary quantization with ONNX semantics, calibration (min-max,
//! percentile, entropy, MSE, adaptive; streaming and mergeable), and quantized operators (int8
//! GEMM, dynamic, static and weight-only linear layers, convolution, add, ReLU), with every
//! fast kernel giving the bits of its reference kernel.
//!
//! The raw C ABI is [`sys`] (the `qnt-sys` crate). This crate wraps every handle in an owning
//! type with `Drop`, returns [`Result`] from every fallible call with the library's message in
//! the [`Error`], and ties borrowed memory to a lifetime, so that it cannot be misused without
//! writing `unsafe`.
//!
//! # Quick start
//!
//! ```
//! use qnt::{Context, DType, Granularity, Scheme, Tensor};
//!
//! let ctx = Context::new()?;
//! // A [2, 64] weight matrix.
//! let w: Vec<f32> = (0..128).map(|i| ((i * 7919 % 200) as f32 - 100.0) / 400.0).collect();
//! let x = Tensor::from_slice(&w, &[2, 64], None)?;
//!
//! // int4 per block of 32 along the rows, min-max calibrated.
//! let qp = ctx.calibrate_minmax(&x, DType::I4, Scheme::Symmetric,
//!                               Granularity::PerBlock { axis: 1, block_size: 32 })?;
//! let mut q = Tensor::zeros(DType::I4, &[2, 64], Some(&qp))?;
//! ctx.quantize(&x, &mut q)?;
//! assert_eq!(q.byte_size()?, 64); // two int4 values a byte
//!
//! let mut back = Tensor::zeros(DType::F32, &[2, 64], None)?;
//! ctx.dequantize(&q, &mut back)?;
//! let report = ctx.error_report(&x, &qp)?;
//! assert!(report.sqnr_db > 15.0);
//! # Ok::<(), qnt::Error>(())
//! ```
//!
//! # Threads
//!
//! [`Context`], [`QParams`], [`Prepared`], [`OpDesc`] and [`Tensor`] are `Send + Sync`, as
//! the header's thread-safety notes allow (each `unsafe impl` says why); setters take
//! `&mut self`. A [`Calibrator`] is `Send` but not `Sync`: use one per thread and
//! [`merge`](Calibrator::merge) them.
//!
//! # Linking
//!
//! `qnt-sys`'s build script finds libqnt through pkg-config (`qnt.pc`), or `QNT_DIR` (an
//! install prefix), or `QNT_LIB_DIR`; the `static` feature links `libqnt.a`.

#![warn(missing_docs)]

pub use qnt_sys as sys;

mod calibrator;
mod context;
mod desc;
mod error;
mod prepared;
mod qparams;
mod recommend;
mod tensor;
mod types;

pub use calibrator::{CalibCounts, Calibrator};
pub use context::{
    conv2d_output_shape, ternary_export, ternary_import, ternary_layout_size, tuning_clear,
    tuning_export, tuning_import, Context, CpuCount,
    ErrorReport, TernaryLayout,
};
pub use desc::{OpDesc, OpDescBuilder};
pub use error::{last_error_message, live_handles, status_string, Error, ErrorKind, Result};
pub use prepared::Prepared;
pub use qparams::QParams;
pub use recommend::{Choice, Recommender};
pub use tensor::{DlPack, Element, Tensor};
pub use types::{
    abi_check, abi_version, build_info, nf4_codebook, version, version_string, ActQuant,
    Budget, CalibMethod, CalibOption, CpuFeature, CpuFeatures, DType, DeviceType, Granularity, Isa, Layout,
    OpOption, PreparedKind, Scheme, Tuning, WeightOnlyMode,
};
