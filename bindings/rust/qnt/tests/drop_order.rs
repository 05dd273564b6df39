//! Handles dropped in every order are safe: each holds what it needs (the header: "a handle that
//! depends on another holds its own reference to it"). scripts/test-rust.sh runs this file again
//! under valgrind's memcheck.

use qnt::{
    CalibMethod, Calibrator, Context, DType, Granularity, OpDesc, Prepared, QParams, Scheme,
    Tensor, WeightOnlyMode,
};
use std::any::Any;
use std::sync::Mutex;

/// The tests of this file count the library's live handles, so they run one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Every permutation of 0..n (Heap's algorithm).
fn permutations(n: usize) -> Vec<Vec<usize>> {
    fn go(k: usize, a: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
        if k <= 1 {
            out.push(a.clone());
            return;
        }
        for i in 0..k {
            go(k - 1, a, out);
            let j = if k % 2 == 0 { i } else { 0 };
            a.swap(j, k - 1);
        }
    }
    let mut out = Vec::new();
    go(n, &mut (0..n).collect(), &mut out);
    out
}

#[test]
fn handles_dropped_in_every_order() {
    let _serial = serial();
    let orders = permutations(6);
    assert_eq!(orders.len(), 720);
    let base = qnt::live_handles().unwrap();
    for (i, order) in orders.iter().enumerate() {
        let ctx = Context::new().unwrap();
        let qp = QParams::per_block(DType::I4, 1, 16, &[0.1, 0.2, 0.3, 0.4], None).unwrap();
        let w = Tensor::from_bytes(DType::I4, &[2, 32], &[0x21; 32], Some(&qp)).unwrap();
        let desc = OpDesc::builder()
            .weight_only_mode(WeightOnlyMode::Int8Act)
            .build()
            .unwrap();
        let layer = Prepared::linear_weight_only(&ctx, &w, None, Some(&desc)).unwrap();
        let mut cal = Calibrator::new(
            CalibMethod::Entropy,
            DType::I8,
            Scheme::Symmetric,
            Granularity::PerTensor,
        )
        .unwrap();
        cal.observe(
            &ctx,
            &Tensor::from_slice(&[i as f32, -1.0], &[2], None).unwrap(),
        )
        .unwrap();
        let from_tensor = w.qparams().unwrap().unwrap();
        let mut handles: Vec<Option<Box<dyn Any>>> = vec![
            Some(Box::new(ctx)),
            Some(Box::new(qp)),
            Some(Box::new(w)),
            Some(Box::new(desc)),
            Some(Box::new(cal)),
            Some(Box::new(from_tensor)),
        ];
        // Drop all but the operator in this order, using the operator half way.
        for (step, &h) in order.iter().enumerate() {
            handles[h] = None;
            if step == 2 {
                let ctx = Context::new().unwrap();
                let x = Tensor::from_slice(&[1.0f32; 32], &[1, 32], None).unwrap();
                let mut y = Tensor::zeros(DType::F32, &[1, 2], None).unwrap();
                layer.run(&ctx, &x, &mut y).unwrap();
            }
        }
        // The operator outlives everything it was made from.
        let x = Tensor::from_slice(&[1.0f32; 32], &[1, 32], None).unwrap();
        let mut y = Tensor::zeros(DType::F32, &[1, 2], None).unwrap();
        layer.run(&Context::new().unwrap(), &x, &mut y).unwrap();
        assert!(y.to_vec::<f32>().unwrap().iter().all(|v| v.is_finite()));
        drop((x, y, layer));
        assert_eq!(
            qnt::live_handles().unwrap(),
            base,
            "order {order:?} left handles alive"
        );
    }
}

#[test]
fn dlpack_exports_outlive_their_tensors_and_borrowed_memory_stays_borrowed() {
    let _serial = serial();
    // An owned tensor's export keeps its storage after the tensor is gone.
    let t = Tensor::from_slice(&[1.5f32, -2.0, 3.0], &[3], None).unwrap();
    let exported = t.into_dlpack(false).unwrap();
    assert_eq!(exported.shape(), &[3]);
    let back = Tensor::from_dlpack(exported, None).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![1.5, -2.0, 3.0]);
    drop(back);

    // An export of a borrowing tensor, dropped before or after the tensor.
    let mut buf = vec![7i8; 8];
    {
        let mut t = Tensor::wrap(&mut buf, &[2, 4], None).unwrap();
        let e = t.to_dlpack(true).unwrap();
        assert!(e.is_versioned());
        drop(e);
        t.as_mut_slice::<i8>().unwrap()[0] = 1;
    }
    {
        let t = Tensor::wrap(&mut buf, &[2, 4], None).unwrap();
        let e = t.into_dlpack(true).unwrap();
        let again = Tensor::from_dlpack(e, None).unwrap();
        assert_eq!(again.to_vec::<i8>().unwrap()[..2], [1, 7]);
    }
    assert_eq!(buf[0], 1);

    // A failed import releases the export (qnt refuses qparams of another dtype).
    let t = Tensor::from_slice(&[1u8, 2], &[2], None).unwrap();
    let e = t.into_dlpack(false).unwrap();
    let qp = QParams::per_tensor(DType::I8, 1.0, 0).unwrap();
    assert!(Tensor::from_dlpack(e, Some(&qp)).is_err());
}

#[test]
fn parameters_and_calibrators_outlive_what_made_them() {
    let _serial = serial();
    let ctx = Context::new().unwrap();
    let x = Tensor::from_slice(&[0.5f32, -1.0, 2.0, 0.25], &[2, 2], None).unwrap();
    let qp = ctx
        .calibrate_minmax(
            &x,
            DType::U8,
            Scheme::Affine,
            Granularity::PerAxis { axis: 0 },
        )
        .unwrap();
    let q = {
        let mut q = Tensor::zeros(DType::U8, &[2, 2], Some(&qp)).unwrap();
        ctx.quantize(&x, &mut q).unwrap();
        q
    };
    drop(qp);
    drop(ctx);
    drop(x);
    let again = q.qparams().unwrap().unwrap();
    drop(q);
    assert_eq!(again.scale_count().unwrap(), 2);
    let bytes = {
        let mut c = Calibrator::new(
            CalibMethod::MinMax,
            DType::I8,
            Scheme::Symmetric,
            Granularity::PerTensor,
        )
        .unwrap();
        c.observe(
            &Context::new().unwrap(),
            &Tensor::from_slice(&[3.0f32], &[1], None).unwrap(),
        )
        .unwrap();
        c.serialize().unwrap()
    };
    let mut c = Calibrator::deserialize(&bytes).unwrap();
    c.reset().unwrap();
    assert_eq!(c.counts().unwrap().finite, 0);
}
