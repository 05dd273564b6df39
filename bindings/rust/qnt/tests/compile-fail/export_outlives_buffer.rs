// expect: E0597
// A DLPack export of a borrowing tensor cannot outlive the borrowed memory.
fn main() {
    let e;
    {
        let mut buf = vec![0u8; 4];
        let t = qnt::Tensor::wrap(&mut buf, &[4], None).unwrap();
        e = t.into_dlpack(true).unwrap();
    }
    drop(e);
}
