//! The safe crate against the C API called directly (through qnt::sys) on the same inputs: the
//! quantize, dequantize and linear results must be the same bits. Plus a few results checked
//! against values computed here from the header's rules.

mod common;

use common::{bits, Lcg};
use qnt::sys;
use qnt::{
    ActQuant, CalibMethod, Calibrator, Context, DType, Granularity, Isa, OpDesc, Prepared, QParams,
    Scheme, Tensor, WeightOnlyMode,
};
use std::ptr;

/// Raw C calls, for the comparisons.
mod c {
    use super::*;

    pub fn ok(s: sys::qnt_status) {
        assert_eq!(s, sys::QNT_OK as i32, "{}", qnt::last_error_message());
    }

    pub fn tensor(
        dtype: DType,
        shape: &[i64],
        qp: Option<&QParams>,
        data: Option<&[u8]>,
    ) -> *mut sys::qnt_tensor {
        let mut t = ptr::null_mut();
        let qp = qp.map_or(ptr::null(), QParams::as_ptr);
        unsafe {
            match data {
                Some(d) => ok(sys::qnt_tensor_create_from_data(
                    dtype.to_raw(),
                    shape.as_ptr(),
                    shape.len(),
                    qp,
                    d.as_ptr().cast(),
                    d.len(),
                    &mut t,
                )),
                None => ok(sys::qnt_tensor_create(
                    dtype.to_raw(),
                    shape.as_ptr(),
                    shape.len(),
                    qp,
                    &mut t,
                )),
            }
        }
        t
    }

    pub fn bytes(t: *mut sys::qnt_tensor) -> Vec<u8> {
        let mut n = 0;
        unsafe {
            ok(sys::qnt_tensor_byte_size(t, &mut n));
            let mut v = vec![0u8; n];
            ok(sys::qnt_tensor_copy_to(t, v.as_mut_ptr().cast(), n));
            v
        }
    }

    pub fn f32s(t: *mut sys::qnt_tensor) -> Vec<f32> {
        bytes(t)
            .chunks(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()
    }

    pub fn destroy(t: *mut sys::qnt_tensor) {
        unsafe { sys::qnt_tensor_destroy(t) }
    }
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn round_half_even(v: f32) -> f32 {
    let r = v.round();
    if (v - v.trunc()).abs() == 0.5 {
        2.0 * (v / 2.0).round()
    } else {
        r
    }
}

#[test]
fn quantize_and_dequantize_match_the_c_api_bit_for_bit() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(7);
    let (rows, cols) = (37i64, 131i64);
    let shape = [rows, cols];
    let x = rng.floats((rows * cols) as usize, 3.0, true);
    let xt = Tensor::from_slice(&x, &shape, None).unwrap();
    let cx = c::tensor(DType::F32, &shape, None, Some(&f32_bytes(&x)));
    let grans = [
        Granularity::PerTensor,
        Granularity::PerAxis { axis: 0 },
        Granularity::PerAxis { axis: -1 },
        Granularity::PerBlock {
            axis: 1,
            block_size: 32,
        },
        Granularity::PerBlock {
            axis: 0,
            block_size: 5,
        },
    ];
    let mut cases = 0;
    for dtype in [
        DType::I8,
        DType::U8,
        DType::I16,
        DType::U16,
        DType::I4,
        DType::U4,
        DType::Nf4,
        DType::Ternary,
        DType::Binary,
        DType::Log4,
        DType::Log8,
    ] {
        for scheme in [Scheme::Symmetric, Scheme::Affine] {
            for g in grans {
                let qp = match dtype {
                    DType::Nf4 | DType::Binary | DType::Ternary | DType::Log4 | DType::Log8 => {
                        if scheme == Scheme::Affine {
                            continue;
                        }
                        ctx.calibrate_codebook(&xt, dtype, g).unwrap()
                    }
                    _ => ctx.calibrate_minmax(&xt, dtype, scheme, g).unwrap(),
                };
                let mut q = Tensor::zeros(dtype, &shape, Some(&qp)).unwrap();
                ctx.quantize(&xt, &mut q).unwrap();
                let mut back = Tensor::zeros(DType::F32, &shape, None).unwrap();
                ctx.dequantize(&q, &mut back).unwrap();

                let cq = c::tensor(dtype, &shape, Some(&qp), None);
                let cback = c::tensor(DType::F32, &shape, None, None);
                unsafe {
                    c::ok(sys::qnt_quantize(ptr::null_mut(), cx, cq));
                    c::ok(sys::qnt_dequantize(ptr::null_mut(), cq, cback));
                }
                assert_eq!(
                    q.to_bytes().unwrap(),
                    c::bytes(cq),
                    "{dtype:?} {scheme:?} {g:?}"
                );
                assert_eq!(
                    bits(&back.to_vec::<f32>().unwrap()),
                    bits(&c::f32s(cback)),
                    "{dtype:?} {scheme:?} {g:?}"
                );
                c::destroy(cq);
                c::destroy(cback);
                cases += 1;
            }
        }
    }
    c::destroy(cx);
    assert!(cases >= 50, "{cases}");
}

#[test]
fn quantize_follows_the_header_rule() {
    // q = saturate(round_half_to_even(x / scale) + zero_point); NaN gives the zero point.
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(11);
    let x = rng.floats(4099, 40.0, true);
    let (scale, zp) = (0.37f32, 3);
    let qp = QParams::per_tensor(DType::I8, scale, zp).unwrap();
    let mut q = Tensor::zeros(DType::I8, &[4099], Some(&qp)).unwrap();
    ctx.quantize(&Tensor::from_slice(&x, &[4099], None).unwrap(), &mut q)
        .unwrap();
    let want: Vec<i8> = x
        .iter()
        .map(|&v| {
            if v.is_nan() {
                zp as i8
            } else {
                (round_half_even(v / scale) + zp as f32).clamp(-128.0, 127.0) as i8
            }
        })
        .collect();
    assert_eq!(q.to_vec::<i8>().unwrap(), want);
}

#[test]
fn every_kernel_cap_gives_the_same_bits() {
    let mut rng = Lcg(3);
    let x = rng.floats(10_000, 2.0, true);
    let xt = Tensor::from_slice(&x, &[100, 100], None).unwrap();
    let qp = QParams::per_axis(DType::U4, 0, &vec![0.05; 100], Some(&vec![7; 100])).unwrap();
    let mut results = Vec::new();
    for isa in [
        Isa::Reference,
        Isa::Avx2,
        Isa::Avx512,
        Isa::Avx512Vnni,
        Isa::Native,
    ] {
        let mut ctx = Context::new().unwrap();
        ctx.set_max_isa(isa).unwrap();
        let mut q = Tensor::zeros(DType::U4, &[100, 100], Some(&qp)).unwrap();
        ctx.quantize(&xt, &mut q).unwrap();
        results.push(q.to_bytes().unwrap());
    }
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}

fn int4_weights(
    ctx: &Context,
    rng: &mut Lcg,
    n: i64,
    k: i64,
    dtype: DType,
    scheme: Scheme,
    block: i64,
) -> Tensor<'static> {
    let w = rng.floats((n * k) as usize, 0.1, false);
    let wt = Tensor::from_slice(&w, &[n, k], None).unwrap();
    let g = Granularity::PerBlock {
        axis: 1,
        block_size: block,
    };
    let qp = if dtype == DType::Nf4 {
        ctx.calibrate_codebook(&wt, dtype, g).unwrap()
    } else {
        ctx.calibrate_minmax(&wt, dtype, scheme, g).unwrap()
    };
    let mut q = Tensor::zeros(dtype, &[n, k], Some(&qp)).unwrap();
    ctx.quantize(&wt, &mut q).unwrap();
    q
}

#[test]
fn weight_only_linear_matches_the_c_api_bit_for_bit() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(5);
    for (m, n, k) in [(1i64, 33i64, 129i64), (4, 64, 256), (9, 31, 127)] {
        for (dtype, scheme, block) in [
            (DType::I4, Scheme::Symmetric, 32),
            (DType::U4, Scheme::Affine, 128),
            (DType::Nf4, Scheme::Symmetric, 64),
        ] {
            let w = int4_weights(&ctx, &mut rng, n, k, dtype, scheme, block);
            let bias = rng.floats(n as usize, 1.0, false);
            let bias_t = Tensor::from_slice(&bias, &[n], None).unwrap();
            let x = rng.floats((m * k) as usize, 1.0, true);
            let xt = Tensor::from_slice(&x, &[m, k], None).unwrap();
            let cx = c::tensor(DType::F32, &[m, k], None, Some(&f32_bytes(&x)));
            for mode in [
                WeightOnlyMode::F32,
                WeightOnlyMode::Int8Act,
                WeightOnlyMode::Int8Block,
            ] {
                let desc = OpDesc::builder().weight_only_mode(mode).build().unwrap();
                let layer =
                    Prepared::linear_weight_only(&ctx, &w, Some(&bias_t), Some(&desc)).unwrap();
                let mut y = Tensor::zeros(DType::F32, &[m, n], None).unwrap();
                layer.run(&ctx, &xt, &mut y).unwrap();

                let cy = c::tensor(DType::F32, &[m, n], None, None);
                unsafe {
                    let mut cd = ptr::null_mut();
                    c::ok(sys::qnt_op_desc_create(&mut cd));
                    c::ok(sys::qnt_op_desc_set(
                        cd,
                        sys::QNT_OP_WEIGHT_ONLY_MODE as i32,
                        i64::from(mode.to_raw()),
                    ));
                    let mut op = ptr::null_mut();
                    c::ok(sys::qnt_prepared_create_linear_weight_only(
                        ctx.as_ptr(),
                        w.as_ptr(),
                        bias_t.as_ptr(),
                        cd,
                        &mut op,
                    ));
                    c::ok(sys::qnt_prepared_run(ptr::null_mut(), op, cx, cy));
                    sys::qnt_prepared_destroy(op);
                    sys::qnt_op_desc_destroy(cd);
                }
                assert_eq!(
                    bits(&y.to_vec::<f32>().unwrap()),
                    bits(&c::f32s(cy)),
                    "{dtype:?} {mode:?} {m}x{n}x{k}"
                );
                if mode == WeightOnlyMode::F32 {
                    // The one-shot call is the same operator.
                    let mut y1 = Tensor::zeros(DType::F32, &[m, n], None).unwrap();
                    ctx.linear_weight_only(&xt, &w, Some(&bias_t), &mut y1)
                        .unwrap();
                    assert_eq!(
                        bits(&y1.to_vec::<f32>().unwrap()),
                        bits(&y.to_vec::<f32>().unwrap())
                    );
                }
                c::destroy(cy);
            }
            c::destroy(cx);
        }
    }
}

#[test]
fn dynamic_and_static_linear_and_qmatmul_match_the_c_api() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(9);
    let (m, n, k) = (5i64, 24i64, 70i64);
    let wf = rng.floats((n * k) as usize, 0.5, false);
    let wq = QParams::per_axis(DType::I8, 0, &vec![0.004; n as usize], None).unwrap();
    let mut w = Tensor::zeros(DType::I8, &[n, k], Some(&wq)).unwrap();
    ctx.quantize(&Tensor::from_slice(&wf, &[n, k], None).unwrap(), &mut w)
        .unwrap();
    let x = rng.floats((m * k) as usize, 2.0, false);
    let xt = Tensor::from_slice(&x, &[m, k], None).unwrap();
    let cx = c::tensor(DType::F32, &[m, k], None, Some(&f32_bytes(&x)));

    // Dynamic linear, per-row activations, fused ReLU: one-shot, prepared and raw C.
    let desc = OpDesc::builder()
        .act_quant(ActQuant::PerRow)
        .fuse_relu(true)
        .build()
        .unwrap();
    let mut y = Tensor::zeros(DType::F32, &[m, n], None).unwrap();
    ctx.linear_dynamic(&xt, &w, None, Some(&desc), &mut y)
        .unwrap();
    let layer = Prepared::linear_dynamic(&ctx, &w, None, Some(&desc)).unwrap();
    let mut y2 = Tensor::zeros(DType::F32, &[m, n], None).unwrap();
    layer.run(&ctx, &xt, &mut y2).unwrap();
    let cy = c::tensor(DType::F32, &[m, n], None, None);
    unsafe {
        c::ok(sys::qnt_linear_dynamic(
            ptr::null_mut(),
            cx,
            w.as_ptr(),
            ptr::null(),
            desc.as_ptr(),
            cy,
        ))
    };
    let want = bits(&c::f32s(cy));
    assert_eq!(bits(&y.to_vec::<f32>().unwrap()), want);
    assert_eq!(bits(&y2.to_vec::<f32>().unwrap()), want);
    c::destroy(cy);

    // Static linear u8 -> u8, and qmatmul with the weight transposed: both are the C API's.
    let xq = QParams::per_tensor(DType::U8, 0.02, 120).unwrap();
    let yq = QParams::per_tensor(DType::U8, 0.05, 100).unwrap();
    let mut xu = Tensor::zeros(DType::U8, &[m, k], Some(&xq)).unwrap();
    ctx.quantize(&xt, &mut xu).unwrap();
    let st = Prepared::linear_static(&ctx, &w, None, &xq, Some(&yq), None).unwrap();
    let mut ys = Tensor::zeros(DType::U8, &[m, n], Some(&yq)).unwrap();
    st.run(&ctx, &xu, &mut ys).unwrap();
    let cys = c::tensor(DType::U8, &[m, n], Some(&yq), None);
    unsafe {
        let mut op = ptr::null_mut();
        c::ok(sys::qnt_prepared_create_linear_static(
            ptr::null_mut(),
            w.as_ptr(),
            ptr::null(),
            xq.as_ptr(),
            yq.as_ptr(),
            ptr::null(),
            &mut op,
        ));
        c::ok(sys::qnt_prepared_run(ptr::null_mut(), op, xu.as_ptr(), cys));
        sys::qnt_prepared_destroy(op);
    }
    assert_eq!(ys.to_bytes().unwrap(), c::bytes(cys));
    c::destroy(cys);

    let wt: Vec<i8> = {
        let wv = w.to_vec::<i8>().unwrap();
        (0..k)
            .flat_map(|kk| (0..n).map(move |nn| (nn, kk)))
            .map(|(nn, kk)| wv[(nn * k + kk) as usize])
            .collect()
    };
    let b = Tensor::from_slice(
        &wt,
        &[k, n],
        Some(&QParams::per_tensor(DType::I8, 0.004, 0).unwrap()),
    )
    .unwrap();
    let mut acc = Tensor::zeros(DType::I32, &[m, n], None).unwrap();
    ctx.qmatmul(&xu, &b, None, &mut acc).unwrap();
    let prepared = Prepared::matmul(&ctx, &b, None, None).unwrap();
    let mut acc2 = Tensor::zeros(DType::I32, &[m, n], None).unwrap();
    prepared.run(&ctx, &xu, &mut acc2).unwrap();
    // acc = sum (x - zx) * (w - 0), computed here in i64.
    let xv = xu.to_vec::<u8>().unwrap();
    let want: Vec<i32> = (0..m)
        .flat_map(|i| (0..n).map(move |j| (i, j)))
        .map(|(i, j)| {
            (0..k)
                .map(|kk| {
                    (i64::from(xv[(i * k + kk) as usize]) - 120)
                        * i64::from(wt[(kk * n + j) as usize])
                })
                .sum::<i64>() as i32
        })
        .collect();
    assert_eq!(acc.to_vec::<i32>().unwrap(), want);
    assert_eq!(acc2.to_vec::<i32>().unwrap(), want);
    c::destroy(cx);
}

#[test]
fn conv_add_relu_requantize_and_dynamic_quantize() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(13);
    let xq = QParams::per_tensor(DType::U8, 0.1, 10).unwrap();
    let xv: Vec<u8> = (0..2 * 3 * 8 * 8)
        .map(|_| (rng.next_u32() % 256) as u8)
        .collect();
    let x = Tensor::from_slice(&xv, &[2, 3, 8, 8], Some(&xq)).unwrap();
    let wv: Vec<i8> = (0..4 * 3 * 3 * 3)
        .map(|_| (rng.next_u32() % 255) as i8)
        .collect();
    let w = Tensor::from_slice(
        &wv,
        &[4, 3, 3, 3],
        Some(&QParams::per_tensor(DType::I8, 0.02, 0).unwrap()),
    )
    .unwrap();
    let desc = OpDesc::builder()
        .padding(1, 1, 1, 1)
        .stride(2, 2)
        .build()
        .unwrap();
    let shape = qnt::conv2d_output_shape(&x, &w, Some(&desc)).unwrap();
    assert_eq!(shape, [2, 4, 4, 4]);
    let mut y = Tensor::zeros(DType::I32, &shape, None).unwrap();
    ctx.qconv2d(&x, &w, None, Some(&desc), &mut y).unwrap();
    let conv = Prepared::conv2d(&ctx, &w, None, Some(&desc)).unwrap();
    let mut y2 = Tensor::zeros(DType::I32, &shape, None).unwrap();
    conv.run(&ctx, &x, &mut y2).unwrap();
    assert_eq!(y.to_vec::<i32>().unwrap(), y2.to_vec::<i32>().unwrap());
    // Output (0, 0, 0, 0): the window rows -1..=1, cols -1..=1, padding = the zero point 10.
    let mut acc = 0i64;
    for c in 0..3i64 {
        for kh in 0..3i64 {
            for kw in 0..3i64 {
                let (ih, iw) = (kh - 1, kw - 1);
                let xval = if ih < 0 || iw < 0 {
                    10
                } else {
                    i64::from(xv[(c * 64 + ih * 8 + iw) as usize])
                };
                acc += (xval - 10) * i64::from(wv[(c * 9 + kh * 3 + kw) as usize]);
            }
        }
    }
    assert_eq!(i64::from(y.to_vec::<i32>().unwrap()[0]), acc);

    // add, relu, relu6, requantize
    let a = Tensor::from_slice(&[0u8, 10, 20, 255], &[4], Some(&xq)).unwrap();
    let bq = QParams::per_tensor(DType::U8, 0.2, 0).unwrap();
    let b = Tensor::from_slice(&[5u8, 5, 5, 5], &[4], Some(&bq)).unwrap();
    let yq = QParams::per_tensor(DType::U8, 0.1, 10).unwrap();
    let mut s = Tensor::zeros(DType::U8, &[4], Some(&yq)).unwrap();
    ctx.qadd(&a, &b, None, &mut s).unwrap();
    // (q - 10) * 0.1 + 1.0, back with scale 0.1 and zero point 10
    assert_eq!(s.to_vec::<u8>().unwrap(), vec![10, 20, 30, 255]);
    let mut r = Tensor::zeros(DType::U8, &[4], Some(&xq)).unwrap();
    ctx.qrelu(&a, &mut r).unwrap();
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![10, 10, 20, 255]);
    ctx.qrelu_clamp(&a, 6.0, &mut r).unwrap();
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![10, 10, 20, 70]);
    let mut re = Tensor::zeros(DType::U8, &[4], Some(&bq)).unwrap();
    ctx.requantize(&a, &mut re).unwrap();
    // [-1.0, 0.0, 1.0, 24.5] at scale 0.2 and zero point 0: -5 clamps to 0; 24.5 / 0.2 gives 122.
    assert_eq!(re.to_vec::<u8>().unwrap(), vec![0, 0, 5, 122]);

    let d = ctx
        .dynamic_quantize_linear(&Tensor::from_slice(&[-1.0f32, 0.0, 3.0], &[3], None).unwrap())
        .unwrap();
    let dq = d.qparams().unwrap().expect("parameters");
    assert_eq!(dq.scales().unwrap(), vec![4.0f32 / 255.0]);
    assert_eq!(dq.zero_points().unwrap(), vec![64]);
    assert_eq!(d.to_vec::<u8>().unwrap(), vec![0, 64, 255]);
}

#[test]
fn calibrators_merge_and_serialize_to_the_one_pass_result() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(17);
    let batches: Vec<Vec<f32>> = (0..4).map(|_| rng.floats(3000, 4.0, true)).collect();
    for method in [
        CalibMethod::MinMax,
        CalibMethod::Percentile,
        CalibMethod::Entropy,
        CalibMethod::Mse,
        CalibMethod::Adaptive,
    ] {
        let make = || {
            Calibrator::new(
                method,
                DType::I8,
                Scheme::Affine,
                Granularity::PerAxis { axis: 1 },
            )
            .unwrap()
        };
        let mut one = make();
        let (mut left, mut right) = (make(), make());
        for (i, b) in batches.iter().enumerate() {
            let t = Tensor::from_slice(b, &[1000, 3], None).unwrap();
            one.observe(&ctx, &t).unwrap();
            if i % 2 == 0 {
                left.observe(&ctx, &t).unwrap()
            } else {
                right.observe(&ctx, &t).unwrap()
            }
        }
        let right = Calibrator::deserialize(&right.serialize().unwrap()).unwrap();
        left.merge(&right).unwrap();
        let (a, b) = (one.compute(&ctx).unwrap(), left.compute(&ctx).unwrap());
        assert_eq!(
            bits(&a.scales().unwrap()),
            bits(&b.scales().unwrap()),
            "{method:?}"
        );
        assert_eq!(a.zero_points().unwrap(), b.zero_points().unwrap());
        assert_eq!(one.counts().unwrap(), left.counts().unwrap());
        assert_eq!(left.chosen_method().is_ok(), true);
    }
    let mut damaged = Calibrator::new(
        CalibMethod::Mse,
        DType::I8,
        Scheme::Symmetric,
        Granularity::PerTensor,
    )
    .unwrap()
    .serialize()
    .unwrap();
    let last = damaged.len() - 1;
    damaged[last] ^= 1;
    assert_eq!(
        Calibrator::deserialize(&damaged).unwrap_err().kind(),
        qnt::ErrorKind::CorruptData
    );
}

#[test]
fn a_prepared_operator_runs_from_many_threads_at_once() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(23);
    let w = int4_weights(&ctx, &mut rng, 48, 96, DType::I4, Scheme::Symmetric, 32);
    let layer = Prepared::linear_weight_only(&ctx, &w, None, None).unwrap();
    let x: Vec<Vec<f32>> = (0..4).map(|_| rng.floats(96, 1.0, false)).collect();
    let serial: Vec<Vec<u32>> = x
        .iter()
        .map(|xv| {
            let mut y = Tensor::zeros(DType::F32, &[1, 48], None).unwrap();
            layer
                .run(
                    &ctx,
                    &Tensor::from_slice(xv, &[1, 96], None).unwrap(),
                    &mut y,
                )
                .unwrap();
            bits(&y.to_vec::<f32>().unwrap())
        })
        .collect();
    let parallel: Vec<Vec<u32>> = std::thread::scope(|s| {
        let handles: Vec<_> = x
            .iter()
            .map(|xv| {
                let (layer, ctx) = (&layer, &ctx);
                s.spawn(move || {
                    let mut y = Tensor::zeros(DType::F32, &[1, 48], None).unwrap();
                    layer
                        .run(
                            ctx,
                            &Tensor::from_slice(xv, &[1, 96], None).unwrap(),
                            &mut y,
                        )
                        .unwrap();
                    bits(&y.to_vec::<f32>().unwrap())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(serial, parallel);
}

/// Device tensors: the CPU through the device constructors, copies between tensors, and a clear
/// error for CUDA on a machine without a device (the GPU suite in C++ covers the device side).
#[test]
fn device_tensors_and_copies() {
    use qnt::{DeviceType, ErrorKind};
    let ctx = Context::new().unwrap();
    let src = Tensor::from_slice(&[1.0f32, -2.0, 3.5, 0.25], &[2, 2], None).unwrap();
    let mut dst = Tensor::zeros_on(DType::F32, &[2, 2], None, DeviceType::Cpu, 0).unwrap();
    dst.copy_from_tensor(&ctx, &src).unwrap();
    assert_eq!(dst.to_vec::<f32>().unwrap(), vec![1.0, -2.0, 3.5, 0.25]);
    let mut wrong = Tensor::zeros(DType::I32, &[2, 2], None).unwrap();
    assert_eq!(
        wrong.copy_from_tensor(&ctx, &src).unwrap_err().kind(),
        ErrorKind::DtypeMismatch
    );
    if ctx.cuda_device_count().unwrap() == 0 {
        let e = Tensor::zeros_on(DType::F32, &[2], None, DeviceType::Cuda, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NoDevice);
        assert!(e.message().contains("no CUDA device"), "{}", e.message());
    }
}

/// f16 activations: quantize from f16 gives the bits of quantizing its widened f32 values.
#[test]
fn f16_quantize_matches_f32() {
    let ctx = Context::new().unwrap();
    // 1.0, -2.0, 0.5, 65504 as binary16, and their f32 values.
    let halves: [u16; 4] = [0x3C00, 0xC000, 0x3800, 0x7BFF];
    let floats = [1.0f32, -2.0, 0.5, 65504.0];
    let bytes: Vec<u8> = halves.iter().flat_map(|h| h.to_le_bytes()).collect();
    let xh = Tensor::from_bytes(DType::F16, &[4], &bytes, None).unwrap();
    let xf = Tensor::from_slice(&floats, &[4], None).unwrap();
    let qp = QParams::per_tensor(DType::I8, 0.05, 3).unwrap();
    let mut yh = Tensor::zeros(DType::I8, &[4], Some(&qp)).unwrap();
    let mut yf = Tensor::zeros(DType::I8, &[4], Some(&qp)).unwrap();
    ctx.quantize(&xh, &mut yh).unwrap();
    ctx.quantize(&xf, &mut yf).unwrap();
    assert_eq!(yh.to_bytes().unwrap(), yf.to_bytes().unwrap());
}

#[test]
fn binary_matmul_counts_agreements() {
    let ctx = Context::new().unwrap();
    let mut rng = Lcg(29);
    let (m, n, k) = (3usize, 5usize, 77usize);
    let a_bits: Vec<u8> = (0..m * k).map(|_| (rng.next_u32() & 1) as u8).collect();
    let b_bits: Vec<u8> = (0..n * k).map(|_| (rng.next_u32() & 1) as u8).collect();
    let pack = |v: &[u8]| {
        let mut out = vec![0u8; (v.len() + 7) / 8];
        for (i, &b) in v.iter().enumerate() {
            out[i / 8] |= b << (i % 8);
        }
        out
    };
    let a = Tensor::from_bytes(DType::Binary, &[m as i64, k as i64], &pack(&a_bits), None).unwrap();
    let b = Tensor::from_bytes(DType::Binary, &[n as i64, k as i64], &pack(&b_bits), None).unwrap();
    let mut y = Tensor::zeros(DType::I32, &[m as i64, n as i64], None).unwrap();
    ctx.binary_matmul(&a, &b, &mut y).unwrap();
    let got = y.to_vec::<i32>().unwrap();
    for i in 0..m {
        for j in 0..n {
            let want: i32 = (0..k)
                .map(|e| (2 * i32::from(a_bits[i * k + e]) - 1) * (2 * i32::from(b_bits[j * k + e]) - 1))
                .sum();
            assert_eq!(got[i * n + j], want);
        }
    }
    let prepared = Prepared::binary_matmul(&ctx, &b, None).unwrap();
    let mut y2 = Tensor::zeros(DType::I32, &[m as i64, n as i64], None).unwrap();
    prepared.run(&ctx, &a, &mut y2).unwrap();
    assert_eq!(y2.to_vec::<i32>().unwrap(), got);
}

#[test]
fn ternary_layouts_round_trip() {
    let mut rng = Lcg(31);
    let (rows, cols) = (64i64, 416i64);
    let n = (rows * cols) as usize;
    let mut bytes = vec![0u8; n / 4];
    for i in 0..n {
        let v = (rng.next_u32() % 3) as u8; // codes 0, 1, 3: values 0, 1, -1
        let code = [0u8, 1, 3][v as usize];
        bytes[i / 4] |= code << (2 * (i % 4));
    }
    let qp = QParams::per_tensor(DType::Ternary, 0.5, 0).unwrap();
    let w = Tensor::from_bytes(DType::Ternary, &[rows, cols], &bytes, Some(&qp)).unwrap();
    for layout in [
        qnt::TernaryLayout::Tl1 { tiling: [64, 32, 32] },
        qnt::TernaryLayout::Tl2 { tiling: [64, 192, 32] },
    ] {
        let data = qnt::ternary_export(&w, layout).unwrap();
        assert_eq!(data.len(), qnt::ternary_layout_size(layout, rows, cols).unwrap());
        let back = qnt::ternary_import(&data, layout, rows, cols, 0.5).unwrap();
        assert_eq!(back.to_bytes().unwrap(), bytes);
    }
    let w2 = Tensor::from_bytes(DType::Ternary, &[2, 64], &bytes[..32], Some(&qp)).unwrap();
    let i2 = qnt::ternary_export(&w2, qnt::TernaryLayout::I2S).unwrap();
    assert_eq!(i2.len(), 64);
    let back = qnt::ternary_import(&i2, qnt::TernaryLayout::I2S, 2, 64, 0.0).unwrap();
    assert_eq!(back.to_bytes().unwrap(), &bytes[..32]);
}


#[test]
fn log_codes_and_power_of_two_scales() {
    let ctx = Context::new().unwrap();
    // Scale 2: 2 -> m = 7, 1 -> 6, -0.5 -> sign | 5, 0 -> 0; 1.41421366 (just above sqrt 2
    // times 1) rounds up to the top level in the log domain.
    let x = [2.0f32, 1.0, -0.5, 0.0, 1.414_213_7, 1.414_213_5];
    let qp = QParams::per_tensor(DType::Log4, 2.0, 0).unwrap();
    assert_eq!(qp.scheme().unwrap(), Scheme::Log2);
    let xt = Tensor::from_slice(&x, &[6], None).unwrap();
    let mut q = Tensor::zeros(DType::Log4, &[6], Some(&qp)).unwrap();
    ctx.quantize(&xt, &mut q).unwrap();
    assert_eq!(q.to_bytes().unwrap(), vec![0x67, 0x0D, 0x67]);
    let mut back = Tensor::zeros(DType::F32, &[6], None).unwrap();
    ctx.dequantize(&q, &mut back).unwrap();
    assert_eq!(back.to_vec::<f32>().unwrap(), vec![2.0, 1.0, -0.5, 0.0, 2.0, 1.0]);

    let w: Vec<f32> = (0..64).map(|i| (i as f32 - 31.5) * 0.013).collect();
    let wt = Tensor::from_slice(&w, &[4, 16], None).unwrap();
    let free = ctx
        .calibrate_minmax(&wt, DType::I8, Scheme::Symmetric, Granularity::PerAxis { axis: 0 })
        .unwrap();
    for p2 in [
        ctx.pow2_scales(&free, None).unwrap(),
        ctx.pow2_scales(&free, Some(&wt)).unwrap(),
    ] {
        for s in p2.scales().unwrap() {
            assert_eq!(s, 2f32.powi(s.log2().round() as i32), "{s}");
        }
    }
}

#[test]
fn tuning_keeps_the_bits_and_its_table_round_trips() {
    let plain = Context::new().unwrap();
    let mut tuned = Context::new().unwrap();
    tuned.set_tuning(qnt::Tuning::Measure).unwrap();
    assert_eq!(tuned.tuning().unwrap(), qnt::Tuning::Measure);
    let (m, k, n) = (40i64, 96i64, 72i64);
    let a: Vec<u8> = (0..m * k).map(|i| (i * 7 % 251) as u8).collect();
    let b: Vec<u8> = (0..k * n).map(|i| (i * 13 % 253) as u8).collect();
    let qa = QParams::per_tensor(DType::U8, 0.1, 128).unwrap();
    let qb = QParams::per_tensor(DType::I8, 0.1, 0).unwrap();
    let at = Tensor::from_bytes(DType::U8, &[m, k], &a, Some(&qa)).unwrap();
    let bt = Tensor::from_bytes(DType::I8, &[k, n], &b, Some(&qb)).unwrap();
    let mut y0 = Tensor::zeros(DType::I32, &[m, n], None).unwrap();
    let mut y1 = Tensor::zeros(DType::I32, &[m, n], None).unwrap();
    plain.qmatmul(&at, &bt, None, &mut y0).unwrap();
    tuned.qmatmul(&at, &bt, None, &mut y1).unwrap();
    assert_eq!(y0.to_vec::<i32>().unwrap(), y1.to_vec::<i32>().unwrap());
    let table = qnt::tuning_export().unwrap();
    assert!(table.starts_with("qnt-tuning 1\n"), "{table}");
    qnt::tuning_clear();
    qnt::tuning_import(&table).unwrap();
    assert_eq!(qnt::tuning_export().unwrap(), table);
    assert!(qnt::tuning_import("not a table").is_err());
}
