// expect: E0277
// A calibrator is not Sync: it cannot be shared between threads.
fn main() {
    let cal = qnt::Calibrator::new(qnt::CalibMethod::MinMax, qnt::DType::I8,
                                   qnt::Scheme::Symmetric, qnt::Granularity::PerTensor).unwrap();
    std::thread::scope(|s| {
        s.spawn(|| drop(cal.counts()));
        s.spawn(|| drop(cal.counts()));
    });
}
