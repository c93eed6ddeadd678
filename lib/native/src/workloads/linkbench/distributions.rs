//! LinkBench's random distributions, as its Java code defines them (spec: linkbench.md §2-§3),
//! ported from lib/enginebench/workloads/linkbench/distributions.py with the same results for
//! the same seeds (lib/tests checks the two against each other).
use std::sync::OnceLock;

use crate::pyrandom::{round_half_even, Random};

pub const SHUFFLE_GROUPS: i64 = 1024;
pub const NLINKS_SEED: i64 = 20343988438726021; // nlinks shuffler, also the "correlated" link accesses
pub const UNCORR_SEED: i64 = 53238253823453; // uncorrelated link reads (and, by LinkBench's quirk, writes)
pub const NODE_SEED: i64 = 4766565305853767165; // node reads, updates and deletes

/// java.util.Random: the 48-bit LCG, enough of it for nextInt(bound).
pub struct JavaRandom {
    seed: u64,
}

impl JavaRandom {
    const MULT: u64 = 0x5DEECE66D;
    const ADD: u64 = 0xB;
    const MASK: u64 = (1 << 48) - 1;

    pub fn new(seed: i64) -> Self {
        JavaRandom { seed: (seed as u64 ^ Self::MULT) & Self::MASK }
    }

    fn next(&mut self, bits: u32) -> i32 {
        self.seed = (self.seed.wrapping_mul(Self::MULT).wrapping_add(Self::ADD)) & Self::MASK;
        (self.seed >> (48 - bits)) as u32 as i32
    }

    pub fn next_int(&mut self, bound: i32) -> i32 {
        assert!(bound > 0, "bound must be positive");
        if bound & -bound == bound {
            return ((bound as i64 * self.next(31) as i64) >> 31) as i32;
        }
        loop {
            let bits = self.next(31);
            let val = bits % bound;
            if (bits as i64) - (val as i64) + (bound as i64 - 1) < (1i64 << 31) {
                return val;
            }
        }
    }
}

/// LinkBench's invertible permutation of [0, n): rotate each of G residue groups.
pub struct InvertibleShuffler {
    n: i64,
    groups: i64,
    min_group: i64,
    params: Vec<i64>,
    rounded_down: i64,
    rounded_up: i64,
    big: i64,
}

impl InvertibleShuffler {
    pub fn new(seed: i64, n: i64) -> Self {
        let groups = SHUFFLE_GROUPS.min(n);
        let min_group = n / groups;
        let mut rng = JavaRandom::new(seed);
        let params = (0..groups).map(|_| (rng.next_int(min_group as i32) as i64).abs()).collect();
        let rounded_down = (n / groups) * groups;
        let rounded_up = if n == rounded_down { n } else { rounded_down + groups };
        InvertibleShuffler { n, groups, min_group, params, rounded_down, rounded_up, big: n % groups }
    }

    fn apply(&self, i: i64, inverse: bool) -> i64 {
        let group = i % self.groups;
        let big = group < self.big;
        let mut rotate = self.params[group as usize];
        if inverse {
            rotate = if big { self.min_group + 1 - rotate } else { self.min_group - rotate };
        }
        let j = i + self.groups * rotate;
        if j < self.n {
            return j;
        }
        let wrapped = if big { j % self.rounded_up } else { j % self.rounded_down };
        if wrapped >= self.n { group } else { wrapped }
    }

    pub fn permute(&self, i: i64) -> i64 {
        self.apply(i, false)
    }

    pub fn invert(&self, i: i64) -> i64 {
        self.apply(i, true)
    }
}

/// (values, cumulative fraction) of the `nlinks` section of LinkBench's Distribution.dat,
/// carried as data in the Python package (one copy for both runners).
pub fn nlinks_cdf() -> &'static (Vec<i64>, Vec<f64>) {
    static CDF: OnceLock<(Vec<i64>, Vec<f64>)> = OnceLock::new();
    CDF.get_or_init(|| {
        let text = include_str!("nlinks_cdf.txt");
        let mut values = Vec::new();
        let mut cumulative = Vec::new();
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let mut parts = line.split_whitespace();
            values.push(parts.next().unwrap().parse::<i64>().unwrap());
            cumulative.push(parts.next().unwrap().parse::<f64>().unwrap() / 100.0);
        }
        (values, cumulative)
    })
}

/// Out-degree of each id1, from the nlinks CDF through the shuffler (rank 0 = highest).
pub struct LinkCounts {
    start: i64,
    n: i64,
    k: i64,
    max_degree: Option<i64>,
    shuffler: InvertibleShuffler,
}

impl LinkCounts {
    pub fn new(startid1: i64, maxid1: i64, link_type_count: i64, max_degree: Option<i64>) -> Self {
        let n = maxid1 - startid1;
        LinkCounts { start: startid1, n, k: link_type_count, max_degree, shuffler: InvertibleShuffler::new(NLINKS_SEED, n) }
    }

    pub fn total(&self, id1: i64) -> i64 {
        let (values, cumulative) = nlinks_cdf();
        let rank = self.shuffler.invert(id1 - self.start);
        let u = 1.0 - rank as f64 / self.n as f64;
        let idx = cumulative.partition_point(|c| *c < u).min(values.len() - 1);
        let total = values[idx];
        self.max_degree.map(|m| total.min(m)).unwrap_or(total)
    }

    /// Links of each type. LinkBench's split (ID2Chooser.calcLinkCount) gives type i
    /// `t//k + 1` links when i < t - t//k: kept as published, so 2 links become 3.
    pub fn per_type(&self, total: i64) -> Vec<i64> {
        let base = total / self.k;
        let left_over = total - base;
        (0..self.k).map(|i| base + (i < left_over) as i64).collect()
    }

    pub fn of(&self, id1: i64, type_index: usize) -> i64 {
        self.per_type(self.total(id1))[type_index]
    }
}

/// Gray et al. (1994) Zipf over ranks [0, n), as LinkBench's ZipfDistribution.
pub struct Zipf {
    n: i64,
    pub zetan: f64,
    alpha: f64,
    eta: f64,
    second: f64,
}

impl Zipf {
    pub fn new(n: i64, theta: f64) -> Self {
        let zetan = if theta < 1.0 && n >= 100_000 {
            (n as f64).powf(1.0 - theta) / (1.0 - theta) + 0.58 - 1.0 / (1.0 - theta)
        } else {
            let mut total = 0.0;
            for k in 1..=n {
                total += (k as f64).powf(-theta);
            }
            total
        };
        let eta = (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - (1.0 + 2f64.powf(-theta)) / zetan);
        Zipf { n, zetan, alpha: 1.0 / (1.0 - theta), eta, second: 1.0 + 0.5f64.powf(theta) }
    }

    pub fn rank(&self, p: f64) -> i64 {
        let pz = p * self.zetan;
        if pz < 1.0 {
            return 0;
        }
        if pz < self.second {
            return 1;
        }
        ((self.n as f64 * (self.eta * p - self.eta + 1.0).powf(self.alpha)) as i64).min(self.n - 1)
    }
}

/// One id1 access class: Zipf (or uniform) rank, shuffled.
pub struct AccessChooser {
    start: i64,
    n: i64,
    zipf: Option<Zipf>,
    shuffler: InvertibleShuffler,
}

impl AccessChooser {
    pub fn new(start: i64, n: i64, seed: i64, theta: Option<f64>) -> Self {
        AccessChooser { start, n, zipf: theta.map(|t| Zipf::new(n, t)), shuffler: InvertibleShuffler::new(seed, n) }
    }

    pub fn choose(&self, rng: &mut Random) -> i64 {
        let rank = match &self.zipf {
            Some(z) => z.rank(rng.random()),
            None => rng.randrange(0, self.n),
        };
        self.start + self.shuffler.permute(rank)
    }
}

/// LinkBench's 99.5% "uncorrelated" blend of two access classes.
pub struct BlendedChooser {
    pub uncorrelated: std::sync::Arc<AccessChooser>,
    pub correlated: AccessChooser,
    pub blend: f64,
}

impl BlendedChooser {
    pub fn choose(&self, rng: &mut Random) -> i64 {
        if rng.random() < self.blend { self.uncorrelated.choose(rng) } else { self.correlated.choose(rng) }
    }
}

/// round(exp(N(0,1)*sigma + ln(median))) clamped to [0, cap].
pub fn lognormal_size(rng: &mut Random, median: f64, sigma: f64, cap: i64) -> usize {
    let x = round_half_even((rng.gauss(0.0, 1.0) * sigma + median.ln()).exp());
    (x.min(cap as f64).max(0.0)) as usize
}

/// MULTIGET size: 1 + ceil(ln(1-u)/ln(1-p)), capped (LinkBench's off-by-one kept: 2..127).
pub fn geometric_multiget(rng: &mut Random) -> i64 {
    const P: f64 = 0.382;
    const CAP: i64 = 127;
    let u = rng.random();
    if u == 0.0 {
        return 1;
    }
    CAP.min(1 + ((1.0 - u).ln() / (1.0 - P).ln()).ceil() as i64)
}

/// LinkBench's MotifDataGenerator: 128-byte chunks, each fresh random bytes with probability
/// `uniqueness`, otherwise a copy of a window of a 512-byte motif (so data compresses as FB's).
pub struct MotifData {
    uniqueness: f64,
    motif: Vec<u8>,
    to_range: [u8; 256],
}

impl MotifData {
    const CHUNK: usize = 128;
    const MOTIF: usize = 512;

    pub fn new(rng: &mut Random, start: i64, end: i64, uniqueness: f64) -> Self {
        let motif = (0..Self::MOTIF).map(|_| rng.randint(start, end) as u8).collect();
        let span = end - start + 1;
        let mut to_range = [0u8; 256];
        for (b, slot) in to_range.iter_mut().enumerate() {
            *slot = (start + (b as i64 * span) / 256) as u8;
        }
        MotifData { uniqueness, motif, to_range }
    }

    pub fn make(&self, rng: &mut Random, length: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(length);
        let mut remaining = length;
        while remaining > 0 {
            let size = remaining.min(Self::CHUNK);
            if rng.random() < self.uniqueness {
                out.extend(rng.randbytes(size).into_iter().map(|b| self.to_range[b as usize]));
            } else {
                let offset = rng.randrange(0, (Self::MOTIF - size + 1) as i64) as usize;
                out.extend_from_slice(&self.motif[offset..offset + size]);
            }
            remaining -= size;
        }
        out
    }
}
