// YCSB's ZipfianGenerator (Gray et al., "Quickly generating billion-record synthetic
// databases"), as in YCSB core: ranks 0..n-1, rank 0 the most popular, theta = 0.99 by default.
// Ranks map to key indexes through a fixed bijective scramble so that popular keys are spread
// over the key space instead of being the first keys inserted.

export function zeta(n, theta) {
  let sum = 0;
  for (let i = 1; i <= n; i++) sum += 1 / Math.pow(i, theta);
  return sum;
}

export class Zipfian {
  /**
   * @param {number} n number of items (ranks 0..n-1)
   * @param {number} theta skew (YCSB's zipfian constant, 0.99)
   * @param {import('./rng.mjs').SplitMix64} rng
   */
  constructor(n, theta, rng) {
    if (!(n >= 1)) throw new RangeError('Zipfian needs n >= 1');
    this.n = n;
    this.theta = theta;
    this.rng = rng;
    this.zetan = zeta(n, theta);
    this.zeta2 = zeta(2, theta);
    this.alpha = 1 / (1 - theta);
    this.eta = (1 - Math.pow(2 / n, 1 - theta)) / (1 - this.zeta2 / this.zetan);
    this.half = 1 + Math.pow(0.5, theta);
  }

  /** Next rank in [0, n). */
  next() {
    const u = this.rng.nextDouble();
    const uz = u * this.zetan;
    if (uz < 1) return 0;
    if (uz < this.half) return this.n > 1 ? 1 : 0;
    const r = Math.floor(this.n * Math.pow(this.eta * u - this.eta + 1, this.alpha));
    return r >= this.n ? this.n - 1 : r;
  }
}

// Scramble: index = (rank * P) mod n, P = 2654435761 (a prime near 2^32 / golden ratio); a
// bijection on [0, n) whenever n is not a multiple of P (n < 2^32, so only n == P fails).
export const SCRAMBLE_PRIME = 2654435761;

/** (a * b) mod n for a, b, n < 2^32, exact in doubles (16-bit split of b). */
export function mulmod(a, b, n) {
  const bh = Math.floor(b / 65536), bl = b % 65536;
  return (((a * bh) % n) * 65536 + a * bl) % n;
}

export function scramble(rank, n) {
  return mulmod(rank, SCRAMBLE_PRIME % n, n);
}
