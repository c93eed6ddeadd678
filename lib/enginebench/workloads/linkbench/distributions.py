"""LinkBench's random distributions, as its Java code defines them (spec: linkbench.md §2-§3).

The shuffler is seeded through Java's LCG so the permutation is the one LinkBench uses; the
loader and the requesters only need to agree with each other, but matching LinkBench costs
nothing and makes ids comparable with its own runs.
"""
from __future__ import annotations

import math
import random
from functools import lru_cache
from importlib import resources

import numpy as np

SHUFFLE_GROUPS = 1024
NLINKS_SEED = 20343988438726021       # nlinks shuffler, also the "correlated" link accesses
UNCORR_SEED = 53238253823453           # uncorrelated link reads (and, by LinkBench's quirk, writes)
NODE_SEED = 4766565305853767165        # node reads, updates and deletes


class JavaRandom:
    """java.util.Random: the 48-bit LCG, enough of it for nextInt(bound)."""
    _MULT, _ADD, _MASK = 0x5DEECE66D, 0xB, (1 << 48) - 1

    def __init__(self, seed: int):
        self.seed = (seed ^ self._MULT) & self._MASK

    def _next(self, bits: int) -> int:
        self.seed = (self.seed * self._MULT + self._ADD) & self._MASK
        value = self.seed >> (48 - bits)
        return value - (1 << 32) if value >= 1 << 31 else value  # Java's (int) cast

    def next_int(self, bound: int) -> int:
        if bound <= 0:
            raise ValueError("bound must be positive")
        if bound & -bound == bound:
            return (bound * self._next(31)) >> 31
        while True:
            bits = self._next(31)
            val = bits % bound
            if bits - val + (bound - 1) < 1 << 31:
                return val


class InvertibleShuffler:
    """LinkBench's invertible permutation of [0, n): rotate each of G residue groups."""

    def __init__(self, seed: int, n: int, groups: int = SHUFFLE_GROUPS):
        groups = min(groups, n)
        self.n, self.groups = n, groups
        self.min_group = n // groups
        rng = JavaRandom(seed)
        self.params = np.array([abs(rng.next_int(self.min_group)) for _ in range(groups)], dtype=np.int64)
        self.rounded_down = (n // groups) * groups
        self.rounded_up = n if n == self.rounded_down else self.rounded_down + groups
        self.big = n % groups  # groups numbered below this have one more member

    def _apply(self, i, inverse: bool):
        i = np.asarray(i, dtype=np.int64)
        group = i % self.groups
        big = group < self.big
        rotate = self.params[group]
        if inverse:
            rotate = np.where(big, self.min_group + 1 - rotate, self.min_group - rotate)
        j = i + self.groups * rotate
        wrapped = np.where(big, j % self.rounded_up, j % self.rounded_down)
        wrapped = np.where(wrapped >= self.n, group, wrapped)
        return np.where(j < self.n, j, wrapped)

    def permute(self, i):
        return self._apply(i, False)

    def invert(self, i):
        return self._apply(i, True)

    def permute_one(self, i: int) -> int:
        group = i % self.groups
        j = i + self.groups * int(self.params[group])
        if j < self.n:
            return j
        result = j % (self.rounded_up if group < self.big else self.rounded_down)
        return group if result >= self.n else result


@lru_cache(maxsize=1)
def nlinks_cdf() -> tuple[np.ndarray, np.ndarray]:
    """(values, cumulative fraction) of the `nlinks` section of LinkBench's Distribution.dat."""
    text = resources.files("enginebench.workloads").joinpath("data/linkbench_nlinks_cdf.txt").read_text()
    rows = [line.split() for line in text.splitlines() if line and not line.startswith("#")]
    values = np.array([int(v) for v, _ in rows], dtype=np.int64)
    cumulative = np.array([float(c) for _, c in rows]) / 100.0
    return values, cumulative


class LinkCounts:
    """Out-degree of each id1, from the nlinks CDF through the shuffler (rank 0 = highest)."""

    def __init__(self, startid1: int, maxid1: int, link_type_count: int, max_degree: int | None = None):
        self.start, self.n, self.k = startid1, maxid1 - startid1, link_type_count
        self.max_degree = max_degree
        self.shuffler = InvertibleShuffler(NLINKS_SEED, self.n)
        self.values, self.cumulative = nlinks_cdf()

    def total(self, id1s) -> np.ndarray:
        rank = self.shuffler.invert(np.asarray(id1s, dtype=np.int64) - self.start)
        u = 1.0 - rank / self.n
        idx = np.minimum(np.searchsorted(self.cumulative, u, side="left"), len(self.values) - 1)
        totals = self.values[idx]
        return totals if self.max_degree is None else np.minimum(totals, self.max_degree)

    def per_type(self, totals) -> np.ndarray:
        """Links of each type, shape (len(totals), k). LinkBench's split (ID2Chooser.calcLinkCount)
        gives type i `t//k + 1` links when i < t - t//k: kept as published, so 2 links become 3."""
        totals = np.asarray(totals, dtype=np.int64)
        base = totals // self.k
        left_over = totals - base
        types = np.arange(self.k)
        return base[:, None] + (types[None, :] < left_over[:, None])

    def of(self, id1: int, link_type_index: int) -> int:
        return int(self.per_type(self.total([id1]))[0, link_type_index])


class Zipf:
    """Gray et al. (1994) Zipf over ranks [0, n), as LinkBench's ZipfDistribution."""

    def __init__(self, n: int, theta: float):
        self.n, self.theta = n, theta
        if theta < 1 and n >= 100000:
            zetan = n ** (1 - theta) / (1 - theta) + 0.58 - 1 / (1 - theta)
        else:
            # Summed in order, one term at a time, as the native runner sums it (numpy's pairwise
            # sum would differ in the last bits).
            zetan = 0.0
            for k in range(1, n + 1):
                zetan += float(k) ** -theta
        self.zetan = zetan
        self.alpha = 1 / (1 - theta)
        self.eta = (1 - (2 / n) ** (1 - theta)) / (1 - (1 + 2 ** -theta) / zetan)
        self.second = 1 + 0.5 ** theta

    def rank(self, p: float) -> int:
        pz = p * self.zetan
        if pz < 1:
            return 0
        if pz < self.second:
            return 1
        return min(int(self.n * (self.eta * p - self.eta + 1) ** self.alpha), self.n - 1)


class AccessChooser:
    """One id1 access class: Zipf (or uniform) rank, shuffled, optionally blended with a second
    class (LinkBench's 99.5% "uncorrelated" blend)."""

    def __init__(self, start: int, n: int, seed: int, theta: float | None):
        self.start, self.n = start, n
        self.zipf = Zipf(n, theta) if theta is not None else None
        self.shuffler = InvertibleShuffler(seed, n)

    def choose(self, rng: random.Random) -> int:
        rank = self.zipf.rank(rng.random()) if self.zipf else rng.randrange(self.n)
        return self.start + self.shuffler.permute_one(rank)


class BlendedChooser:
    def __init__(self, uncorrelated: AccessChooser, correlated: AccessChooser, blend_pct: float):
        self.uncorrelated, self.correlated, self.blend = uncorrelated, correlated, blend_pct / 100.0

    def choose(self, rng: random.Random) -> int:
        return (self.uncorrelated if rng.random() < self.blend else self.correlated).choose(rng)


def lognormal_size(rng: random.Random, median: float, sigma: float, cap: int) -> int:
    """round(exp(N(0,1)*sigma + ln(median))) clamped to [0, cap]."""
    return max(0, min(cap, round(math.exp(rng.gauss(0.0, 1.0) * sigma + math.log(median)))))


def geometric_multiget(rng: random.Random, p: float = 0.382, cap: int = 127) -> int:
    """MULTIGET size: 1 + ceil(ln(1-u)/ln(1-p)), capped (LinkBench's off-by-one kept: 2..127)."""
    u = rng.random()
    if u == 0:
        return 1
    return min(cap, 1 + math.ceil(math.log(1 - u) / math.log(1 - p)))


class MotifData:
    """LinkBench's MotifDataGenerator: 128-byte chunks, each fresh random bytes with probability
    `uniqueness`, otherwise a copy of a window of a 512-byte motif (so data compresses as FB's)."""
    CHUNK, MOTIF = 128, 512

    def __init__(self, rng: random.Random, start: int, end: int, uniqueness: float):
        self.start, self.end, self.uniqueness = start, end, uniqueness
        self.motif = bytes(rng.randint(start, end) for _ in range(self.MOTIF))
        span = end - start + 1
        # Map uniform random bytes onto [start, end] in C (bytes.translate), not byte by byte.
        self._to_range = bytes(start + (b * span) // 256 for b in range(256))

    def _fresh(self, rng: random.Random, length: int) -> bytes:
        return rng.randbytes(length).translate(self._to_range)

    def make(self, rng: random.Random, length: int) -> bytes:
        parts = []
        remaining = length
        while remaining > 0:
            size = min(self.CHUNK, remaining)
            if rng.random() < self.uniqueness:
                parts.append(self._fresh(rng, size))
            else:
                offset = rng.randrange(self.MOTIF - size + 1)
                parts.append(self.motif[offset:offset + size])
            remaining -= size
        return b"".join(parts)
