//! CPython's `random.Random`, bit for bit: the Mersenne Twister MT19937 with CPython's seeding
//! (an int's 32-bit words, or a string's bytes followed by their SHA-512, through
//! init_by_array) and CPython's derivations (random(), getrandbits, randbelow, gauss,
//! randbytes). The workloads were first written in Python: with CPython's generator a seed
//! still gives the operations it gave then, so runs recorded before and after compare.
use sha2::{Digest, Sha512};

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

#[derive(Clone)]
pub struct Random {
    mt: [u32; N],
    index: usize,
    gauss_next: Option<f64>,
}

impl Random {
    fn init_genrand(seed: u32) -> Random {
        let mut mt = [0u32; N];
        mt[0] = seed;
        for i in 1..N {
            mt[i] = 1_812_433_253u32.wrapping_mul(mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_add(i as u32);
        }
        Random { mt, index: N, gauss_next: None }
    }

    fn init_by_array(key: &[u32]) -> Random {
        let mut r = Random::init_genrand(19_650_218);
        let mt = &mut r.mt;
        let (mut i, mut j) = (1usize, 0usize);
        let length = key.len().max(1);
        for _ in 0..N.max(length) {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_664_525))
                .wrapping_add(key.get(j).copied().unwrap_or(0))
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
            if j >= length {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            mt[i] = (mt[i] ^ (mt[i - 1] ^ (mt[i - 1] >> 30)).wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                mt[0] = mt[N - 1];
                i = 1;
            }
        }
        mt[0] = 0x8000_0000;
        r
    }

    /// random.Random(n) for a non-negative int that fits 128 bits.
    pub fn from_int(n: u128) -> Random {
        let mut key = Vec::new();
        let mut rest = n;
        while rest > 0 {
            key.push(rest as u32);
            rest >>= 32;
        }
        if key.is_empty() {
            key.push(0);
        }
        Random::init_by_array(&key)
    }

    /// random.Random(s) for a str (seed version 2: the bytes, then their SHA-512, as one
    /// big-endian integer).
    pub fn from_str(s: &str) -> Random {
        let mut bytes = s.as_bytes().to_vec();
        bytes.extend_from_slice(&Sha512::digest(s.as_bytes()));
        // The big-endian integer's 32-bit words, least significant first.
        let mut key = Vec::with_capacity(bytes.len() / 4 + 1);
        let mut end = bytes.len();
        while end > 0 {
            let start = end.saturating_sub(4);
            let mut word = 0u32;
            for &b in &bytes[start..end] {
                word = (word << 8) | b as u32;
            }
            key.push(word);
            end = start;
        }
        while key.len() > 1 && *key.last().unwrap() == 0 {
            key.pop();
        }
        Random::init_by_array(&key)
    }

    fn generate(&mut self) {
        let mt = &mut self.mt;
        for kk in 0..N {
            let y = (mt[kk] & UPPER_MASK) | (mt[(kk + 1) % N] & LOWER_MASK);
            mt[kk] = mt[(kk + M) % N] ^ (y >> 1) ^ if y & 1 == 1 { MATRIX_A } else { 0 };
        }
        self.index = 0;
    }

    #[inline]
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.generate();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// random(): 53 random bits in [0, 1).
    #[inline]
    pub fn random(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// getrandbits(k) for k <= 64.
    pub fn getrandbits(&mut self, k: u32) -> u64 {
        if k == 0 {
            return 0;
        }
        if k <= 32 {
            return (self.next_u32() >> (32 - k)) as u64;
        }
        let low = self.next_u32() as u64;
        let high = (self.next_u32() >> (64 - k)) as u64;
        low | (high << 32)
    }

    /// _randbelow(n): uniform in [0, n), by rejection over n's bit length.
    pub fn randbelow(&mut self, n: u64) -> u64 {
        let k = 64 - n.leading_zeros();
        let mut r = self.getrandbits(k);
        while r >= n {
            r = self.getrandbits(k);
        }
        r
    }

    /// randrange(start, stop).
    pub fn randrange(&mut self, start: i64, stop: i64) -> i64 {
        start + self.randbelow((stop - start) as u64) as i64
    }

    /// randint(a, b): both ends included.
    pub fn randint(&mut self, a: i64, b: i64) -> i64 {
        self.randrange(a, b + 1)
    }

    pub fn choice<'a, T>(&mut self, seq: &'a [T]) -> &'a T {
        &seq[self.randbelow(seq.len() as u64) as usize]
    }

    /// gauss(mu, sigma), with CPython's cached second value.
    pub fn gauss(&mut self, mu: f64, sigma: f64) -> f64 {
        let z = match self.gauss_next.take() {
            Some(z) => z,
            None => {
                let x2pi = self.random() * std::f64::consts::TAU;
                let g2rad = (-2.0 * (1.0 - self.random()).ln()).sqrt();
                self.gauss_next = Some(x2pi.sin() * g2rad);
                x2pi.cos() * g2rad
            }
        };
        mu + z * sigma
    }

    /// expovariate(lambd): -log(1 - random()) / lambd.
    pub fn expovariate(&mut self, lambd: f64) -> f64 {
        -(1.0 - self.random()).ln() / lambd
    }

    /// uniform(a, b): a + (b - a) * random().
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// randbytes(n): getrandbits(8n) as n little-endian bytes.
    pub fn randbytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 4);
        let mut bits = n * 8;
        while bits > 0 {
            let mut word = self.next_u32();
            if bits < 32 {
                word >>= 32 - bits;
            }
            out.extend_from_slice(&word.to_le_bytes());
            bits = bits.saturating_sub(32);
        }
        out.truncate(n);
        out
    }
}

/// Python's round(): halves to even.
pub fn round_half_even(x: f64) -> f64 {
    x.round_ties_even()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Values printed by CPython 3.11: random.Random(1).random(), getrandbits(20), ...
    #[test]
    fn int_seed_matches_cpython() {
        let mut r = Random::from_int(1);
        assert_eq!(r.random(), 0.13436424411240122);
        assert_eq!(r.random(), 0.8474337369372327);
    }

    // random.Random('1/nodes'): random(), getrandbits(20), randrange(10**6), gauss(0, 1) twice,
    // randbytes(7).hex(), randint(5, 9), as CPython 3.11 printed them.
    #[test]
    fn str_seed_matches_cpython() {
        let mut r = Random::from_str("1/nodes");
        assert_eq!(r.random(), 0.8236205827445615);
        assert_eq!(r.getrandbits(20), 233573);
        assert_eq!(r.randrange(0, 1_000_000), 664083);
        assert_eq!(r.gauss(0.0, 1.0), 0.2470347171751741);
        assert_eq!(r.gauss(0.0, 1.0), 1.5216415545498911);
        let hex: String = r.randbytes(7).iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "03b112e13a13c8");
        assert_eq!(r.randint(5, 9), 6);
    }
}
