//! Errors carry the library's status and message; unknown statuses map to ErrorKind::Unknown.

use qnt::sys;
use qnt::{Context, DType, Error, ErrorKind, OpDesc, OpOption, Prepared, QParams, Tensor};
use std::ptr;

#[test]
fn errors_carry_the_library_message() {
    // The same failing call through the C API gives the same status and message.
    let err = QParams::per_tensor(DType::I8, f32::NAN, 0).unwrap_err();
    let mut out = ptr::null_mut();
    let status =
        unsafe { sys::qnt_qparams_create_per_tensor(DType::I8.to_raw(), f32::NAN, 0, &mut out) };
    assert_eq!(err.status(), status);
    assert_eq!(err.kind(), ErrorKind::InvalidQparams);
    assert_eq!(err.message(), qnt::last_error_message());
    assert!(err.message().contains("scale"), "{}", err.message());
    assert!(
        err.to_string().starts_with("QNT_ERR_INVALID_QPARAMS"),
        "{err}"
    );

    let ctx = Context::new().unwrap();
    let x = Tensor::zeros(DType::F32, &[2, 3], None).unwrap();
    let qp = QParams::per_tensor(DType::I8, 1.0, 0).unwrap();
    let mut y = Tensor::zeros(DType::I8, &[3, 2], Some(&qp)).unwrap();
    let err = ctx.quantize(&x, &mut y).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(!err.message().is_empty());

    // A quantized tensor without parameters.
    let mut bare = Tensor::zeros(DType::I8, &[2, 3], None).unwrap();
    assert_eq!(
        ctx.quantize(&x, &mut bare).unwrap_err().kind(),
        ErrorKind::InvalidQparams
    );

    // An option the op does not take is refused, never ignored.
    let desc = OpDesc::builder().stride(2, 2).build().unwrap();
    let w = Tensor::zeros(DType::I8, &[4, 3], Some(&qp)).unwrap();
    let err = Prepared::linear_dynamic(&ctx, &w, None, Some(&desc)).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(!err.message().is_empty());

    let mut d = OpDesc::new().unwrap();
    assert_eq!(
        d.set(OpOption::StrideH, 0).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(d.get(OpOption::StrideH).unwrap(), 1, "unchanged on failure");
}

#[test]
fn errors_raised_by_the_crate_say_what_is_wrong() {
    let err = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[2, 2], None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ShapeMismatch);
    assert!(err.message().contains("3 elements"), "{}", err.message());
    let t = Tensor::from_slice(&[1i8, 2], &[2], None).unwrap();
    assert_eq!(
        t.to_vec::<f32>().unwrap_err().kind(),
        ErrorKind::DtypeMismatch
    );
    assert_eq!(
        Tensor::from_bytes(DType::I4, &[3], &[0, 0, 0], None)
            .unwrap_err()
            .kind(),
        ErrorKind::ShapeMismatch
    );
    assert_eq!(
        QParams::per_axis(DType::I8, 0, &[1.0, 1.0], Some(&[0]))
            .unwrap_err()
            .kind(),
        ErrorKind::ShapeMismatch
    );
}

#[test]
fn every_status_maps_to_its_kind_and_unknown_ones_to_unknown() {
    for status in 1..=12 {
        let kind = ErrorKind::from_status(status);
        assert_ne!(kind, ErrorKind::Unknown, "{status}");
        assert_eq!(kind.status(), Some(status));
    }
    for status in [13, 99, -1, i32::MAX] {
        let e = Error::from_status(status);
        assert_eq!(e.kind(), ErrorKind::Unknown);
        assert_eq!(e.status(), status);
        assert_eq!(qnt::status_string(status), "unknown qnt_status");
    }
}

#[test]
fn library_facts() {
    qnt::abi_check().unwrap();
    assert_eq!(qnt::abi_version(), sys::QNT_ABI_VERSION);
    assert_eq!(qnt::version(), sys::QNT_VERSION_NUMBER);
    assert_eq!(
        qnt::version_string(),
        format!(
            "{}.{}.{}",
            sys::QNT_VERSION_MAJOR,
            sys::QNT_VERSION_MINOR,
            sys::QNT_VERSION_PATCH
        )
    );
    assert_eq!(DType::Ternary.range().unwrap(), (-1, 1));
    assert_eq!(DType::Binary.bits(), 1);
    let book = qnt::nf4_codebook();
    assert!(book.windows(2).all(|w| w[0] < w[1]));
    let ctx = Context::new().unwrap();
    assert!(ctx.num_threads().unwrap() >= 1);
    assert!(ctx.kernels().unwrap().contains("quantize.i8"));
    assert!(ctx.cpu_count().unwrap().logical >= 1);
    assert!(ctx.cache_size(4).is_err());
    let isa = ctx.isa().unwrap();
    assert_ne!(isa, qnt::Isa::Native);
    assert!(!isa.name().is_empty());
    // No CUDA device here, or a working one: either way the calls answer.
    let n = ctx.cuda_device_count().unwrap();
    if n == 0 {
        assert_eq!(
            ctx.cuda_compute_capability(0).unwrap_err().kind(),
            ErrorKind::NoDevice
        );
        let mut c2 = Context::new().unwrap();
        assert_eq!(
            unsafe { c2.set_cuda_stream(0, ptr::null_mut()) }
                .unwrap_err()
                .kind(),
            ErrorKind::NoDevice
        );
    }
    ctx.synchronize().unwrap();
    let features = ctx.cpu_features().unwrap();
    for f in features.iter() {
        assert!(features.contains(f));
        assert_ne!(f.name(), "invalid");
    }
}
