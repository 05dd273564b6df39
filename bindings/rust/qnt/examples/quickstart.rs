//! The Rust version of examples/c/quickstart.c: what the machine can do, then one weight matrix
//! quantized three ways (int8 per output channel, int4 per block of 32, NF4 per block of 64),
//! dequantized, and compared with the original.
//!
//! Run: cargo run --example quickstart

use qnt::{Context, CpuFeature, DType, Granularity, QParams, Scheme, Tensor};

const ROWS: usize = 256;
const COLS: usize = 512;

/// A reproducible weight matrix: Gaussian (Box-Muller over a small LCG), a few outliers.
fn weights() -> Vec<f32> {
    let mut state: u64 = 42;
    let mut uniform01 = move || {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((state >> 11) as f64 + 0.5) / 9007199254740992.0
    };
    let mut w: Vec<f32> = (0..ROWS * COLS)
        .map(|_| {
            let r = (-2.0 * uniform01().ln()).sqrt();
            let t = std::f64::consts::TAU * uniform01();
            (0.02 * r * t.cos()) as f32
        })
        .collect();
    for v in w.iter_mut().step_by(997) {
        *v *= 8.0; // outliers, as real weights have
    }
    w
}

fn sqnr_db(reference: &[f32], got: &[f32]) -> f64 {
    let (mut signal, mut noise) = (0.0f64, 0.0f64);
    for (&r, &g) in reference.iter().zip(got) {
        signal += f64::from(r) * f64::from(r);
        noise += (f64::from(r) - f64::from(g)).powi(2);
    }
    if noise == 0.0 {
        f64::INFINITY
    } else {
        10.0 * (signal / noise).log10()
    }
}

/// Quantizes x with qp, dequantizes, prints one row of the table.
fn report(
    label: &str,
    ctx: &Context,
    x: &Tensor,
    w: &[f32],
    dtype: DType,
    qp: &QParams,
) -> qnt::Result<()> {
    let shape = [ROWS as i64, COLS as i64];
    let mut q = Tensor::zeros(dtype, &shape, Some(qp))?;
    let mut y = Tensor::zeros(DType::F32, &shape, None)?;
    ctx.quantize(x, &mut q)?;
    ctx.dequantize(&q, &mut y)?;
    let back = y.to_vec::<f32>()?;
    let qbytes = q.byte_size()?;
    // A float32 scale per group, plus an int32 zero point when the scheme is affine.
    let param_bytes = qp.scale_count()? * if qp.scheme()? == Scheme::Affine { 8 } else { 4 };
    let f32_bytes = 4 * ROWS * COLS;
    println!(
        "  {:<26} {:>7} + {:>5} bytes  saves {:>6} bytes ({:>5.2}x smaller)  SQNR {:>6.2} dB",
        label,
        qbytes,
        param_bytes,
        f32_bytes - qbytes - param_bytes,
        f32_bytes as f64 / (qbytes + param_bytes) as f64,
        sqnr_db(w, &back)
    );
    Ok(())
}

fn main() -> qnt::Result<()> {
    qnt::abi_check()?;
    print!("qnt {}\n{}", qnt::version_string(), qnt::build_info());

    let ctx = Context::new()?;
    let count = ctx.cpu_count()?;
    println!(
        "\nmachine: {} logical CPUs, {} physical cores, {} threads for ops",
        count.logical,
        count.physical,
        ctx.num_threads()?
    );
    let features: Vec<&str> = ctx.cpu_features()?.iter().map(CpuFeature::name).collect();
    println!("  CPU features: {}", features.join(" "));
    let caches: Vec<String> = (1..=3)
        .map(|level| {
            ctx.cache_size(level)
                .map(|b| format!("L{level} {} KiB", b / 1024))
        })
        .collect::<qnt::Result<_>>()?;
    println!("  caches: {}", caches.join(" "));
    let cuda = ctx.cuda_device_count()?;
    print!("  CUDA devices: {cuda}");
    if cuda > 0 {
        let (major, minor) = ctx.cuda_compute_capability(0)?;
        print!(" (device 0: compute capability {major}.{minor})");
    }

    let w = weights();
    let x = Tensor::from_slice(&w, &[ROWS as i64, COLS as i64], None)?;
    println!(
        "\n\nweight matrix [{ROWS}, {COLS}] f32: {} bytes",
        4 * ROWS * COLS
    );

    let qp = ctx.calibrate_minmax(
        &x,
        DType::I8,
        Scheme::Symmetric,
        Granularity::PerAxis { axis: 0 },
    )?;
    report("int8, per output channel", &ctx, &x, &w, DType::I8, &qp)?;
    let block32 = Granularity::PerBlock {
        axis: 1,
        block_size: 32,
    };
    let qp = ctx.calibrate_minmax(&x, DType::I4, Scheme::Symmetric, block32)?;
    report("int4, per block of 32", &ctx, &x, &w, DType::I4, &qp)?;
    let qp = ctx.calibrate_minmax(&x, DType::U4, Scheme::Affine, block32)?;
    report("uint4 affine, block of 32", &ctx, &x, &w, DType::U4, &qp)?;
    let qp = ctx.calibrate_codebook(
        &x,
        DType::Nf4,
        Granularity::PerBlock {
            axis: 1,
            block_size: 64,
        },
    )?;
    report("NF4, per block of 64", &ctx, &x, &w, DType::Nf4, &qp)?;
    Ok(())
}
