// expect: E0499
// While a tensor borrows a buffer, the buffer cannot be borrowed again.
fn main() {
    let mut buf = vec![0i8; 4];
    let t = qnt::Tensor::wrap(&mut buf, &[4], None).unwrap();
    buf[0] = 1;
    drop(t);
}
