// A small deterministic generator for the store tests (SplitMix32 style).
export class SplitMix {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    this.s = (this.s + 0x9e3779b9) >>> 0;
    let z = this.s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  }
  /** 0 <= x < n */
  int(n: number): number {
    return n <= 1 ? 0 : this.next() % n;
  }
}
