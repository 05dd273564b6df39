// expect: E0597
// A tensor that borrows memory cannot outlive it.
fn main() {
    let t;
    {
        let mut buf = vec![0f32; 4];
        t = qnt::Tensor::wrap(&mut buf, &[4], None).unwrap();
    }
    drop(t);
}
