//! Shared helpers of the integration tests.
#![allow(dead_code)]

/// A reproducible generator (64-bit LCG).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next_u32(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    /// Uniform in [-1, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next_u32() as f32 / 2147483648.0) - 1.0
    }

    /// `n` values in [-scale, scale), with NaN, infinities, signed zeros, ties and huge values
    /// sprinkled in when `edges` is set.
    pub fn floats(&mut self, n: usize, scale: f32, edges: bool) -> Vec<f32> {
        let specials = [
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            0.25,
            -0.75,
            1e30,
            -1e30,
            f32::MIN_POSITIVE,
        ];
        (0..n)
            .map(|i| {
                if edges && i % 7 == 3 {
                    specials[(self.next_u32() as usize) % specials.len()]
                } else {
                    self.unit() * scale
                }
            })
            .collect()
    }
}

/// The f32 values as their bits, so that NaNs compare equal and -0.0 differs from 0.0.
pub fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}
