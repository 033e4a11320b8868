// Deterministic random numbers shared by every runner (JS here, C++ in bench/native/):
// SplitMix64 (Steele, Lea, Flood 2014), computed on two 32-bit halves so it needs no BigInt
// in the hot path. A double in [0, 1) takes the top 53 bits of the output.

const TWO_POW_32 = 4294967296;
const TWO_POW_53 = 9007199254740992;

// 64-bit product of two u32, as [hi, lo] u32 halves (exact, via 16-bit limbs).
function mul32(a, b, out) {
  const a0 = a & 0xffff, a1 = a >>> 16, b0 = b & 0xffff, b1 = b >>> 16;
  const p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  const mid = (p00 >>> 16) + (p01 & 0xffff) + (p10 & 0xffff);
  out[1] = (((mid & 0xffff) << 16) | (p00 & 0xffff)) >>> 0;
  out[0] = (p11 + (p01 >>> 16) + (p10 >>> 16) + (mid >>> 16)) >>> 0;
}

const tmp = [0, 0];
// (hi, lo) * (bh, bl) mod 2^64 -> tmp
function mul64(hi, lo, bh, bl) {
  mul32(lo, bl, tmp);
  tmp[0] = (tmp[0] + Math.imul(hi, bl) + Math.imul(lo, bh)) >>> 0;
}

export class SplitMix64 {
  /** @param {number|bigint} seed 64-bit seed (a number must be a safe integer) */
  constructor(seed) {
    const s = BigInt.asUintN(64, BigInt(seed));
    this.hi = Number(s >> 32n) >>> 0;
    this.lo = Number(s & 0xffffffffn) >>> 0;
    this.outHi = 0;
    this.outLo = 0;
  }

  /** Advances; the 64-bit output is left in outHi/outLo. */
  step() {
    // state += 0x9E3779B97F4A7C15
    const lo = (this.lo + 0x7f4a7c15) >>> 0;
    this.hi = (this.hi + 0x9e3779b9 + (lo < this.lo ? 1 : 0)) >>> 0;
    this.lo = lo;
    let zh = this.hi, zl = this.lo;
    // z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
    zl = (zl ^ ((zl >>> 30) | (zh << 2))) >>> 0;
    zh = (zh ^ (zh >>> 30)) >>> 0;
    mul64(zh, zl, 0xbf58476d, 0x1ce4e5b9);
    zh = tmp[0]; zl = tmp[1];
    // z = (z ^ (z >> 27)) * 0x94D049BB133111EB
    zl = (zl ^ ((zl >>> 27) | (zh << 5))) >>> 0;
    zh = (zh ^ (zh >>> 27)) >>> 0;
    mul64(zh, zl, 0x94d049bb, 0x133111eb);
    zh = tmp[0]; zl = tmp[1];
    // z ^ (z >> 31)
    this.outLo = (zl ^ ((zl >>> 31) | (zh << 1))) >>> 0;
    this.outHi = (zh ^ (zh >>> 31)) >>> 0;
  }

  /** Next output as a BigInt (tests, seeds). */
  nextBigInt() {
    this.step();
    return (BigInt(this.outHi) << 32n) | BigInt(this.outLo);
  }

  /** Next output's low 32 bits. */
  nextU32() {
    this.step();
    return this.outLo;
  }

  /** Uniform double in [0, 1): the top 53 bits of the next output. */
  nextDouble() {
    this.step();
    return (this.outHi * 2097152 + (this.outLo >>> 11)) / TWO_POW_53;
  }

  /** Uniform integer in [0, n), n <= 2^32: floor(nextDouble() * n). */
  nextBelow(n) {
    return Math.floor(this.nextDouble() * n);
  }
}

/** Fisher-Yates shuffle in place, driven by SplitMix64 (j = nextBelow(i + 1), i from the end). */
export function shuffle(arr, rng) {
  for (let i = arr.length - 1; i > 0; i--) {
    const j = rng.nextBelow(i + 1);
    const t = arr[i]; arr[i] = arr[j]; arr[j] = t;
  }
  return arr;
}

export { TWO_POW_32 };
