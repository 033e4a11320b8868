// Sample key sets, generated in the page from a seed (no network): each is an endless
// stream, so the insert workload keeps drawing new keys from the same distribution.

export type KeyKind = 'utf8' | 'number';

export interface DataSet {
  name: string;
  kind: KeyKind;
  /** The next new key (never one it returned before). */
  next(): string | number;
}

export interface DataSetInfo {
  id: string;
  label: string;
  kind: KeyKind;
  about: string;
  make(seed: number): DataSet;
}

/** mulberry32: a small seeded PRNG, enough for sample data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WORDS = (
  'river stone garden light market paper window silver forest engine harbor signal north ' +
  'winter summer bridge castle valley ocean island mountain station library museum theater ' +
  'network kernel memory cache vector tensor matrix compiler parser server client cluster ' +
  'storage index query planner buffer journal ledger sensor camera mobile desktop cloud ' +
  'painter singer writer doctor teacher farmer sailor pilot dancer hunter baker tailor ' +
  'red blue green golden black white amber crimson violet ' +
  'apple orange lemon cherry melon pepper ginger honey butter coffee tea bread ' +
  'history science physics biology chemistry economics politics music cinema football ' +
  'tennis cricket chess poetry language grammar algebra geometry statistics'
).split(' ');

const PLACES = (
  'Paris London Berlin Madrid Rome Vienna Prague Warsaw Lisbon Dublin Oslo Helsinki Athens ' +
  'Cairo Lagos Nairobi Tokyo Osaka Seoul Beijing Shanghai Delhi Mumbai Jakarta Manila Sydney ' +
  'Auckland Toronto Montreal Chicago Boston Denver Seattle Houston Mexico_City Lima Bogota ' +
  'Santiago Buenos_Aires Sao_Paulo Munich Hamburg Lyon Milan Naples Seville Porto Krakow'
).split(' ');

const FIRST = (
  'John Mary James Anna Peter Maria Thomas Sofia David Elena Paul Laura Mark Clara ' +
  'George Alice Henry Emma Charles Julia Louis Marta Victor Irene Oscar Nora Hugo Ines'
).split(' ');
const LAST = (
  'Smith Johnson Brown Miller Davis Garcia Martin Muller Schmidt Rossi Silva Santos ' +
  'Kowalski Nowak Novak Jensen Hansen Larsen Dubois Moreau Fischer Weber Wagner Becker'
).split(' ');
const DOMAINS = [
  'github.com', 'en.wikipedia.org', 'de.wikipedia.org', 'stackoverflow.com', 'www.example.com',
  'docs.python.org', 'developer.mozilla.org', 'news.ycombinator.com', 'www.reddit.com',
  'www.youtube.com', 'medium.com', 'www.npmjs.com', 'crates.io', 'pypi.org', 'gitlab.com',
  'www.bbc.co.uk', 'www.nytimes.com', 'arxiv.org', 'shop.example.org', 'blog.example.net',
];

function pick<T>(r: () => number, a: readonly T[]): T {
  return a[Math.floor(r() * a.length)]!;
}
function cap(s: string): string {
  return s[0]!.toUpperCase() + s.slice(1);
}

/** Unique strings from a generator that may repeat: repeats get a counter suffix. */
function uniqueStrings(name: string, gen: () => string): DataSet {
  const seen = new Map<string, number>();
  return {
    name,
    kind: 'utf8',
    next() {
      const s = gen();
      const n = seen.get(s);
      if (n === undefined) {
        seen.set(s, 1);
        return s;
      }
      seen.set(s, n + 1);
      const t = `${s}_${n + 1}`;
      seen.set(t, 1);
      return t;
    },
  };
}

function urls(seed: number): DataSet {
  const r = rng(seed);
  return uniqueStrings('urls', () => {
    const d = pick(r, DOMAINS);
    const scheme = r() < 0.85 ? 'https://' : 'http://';
    switch (Math.floor(r() * 5)) {
      case 0: return `${scheme}${d}/${pick(r, WORDS)}${pick(r, WORDS)}/${pick(r, WORDS)}-${pick(r, WORDS)}`;
      case 1: return `${scheme}${d}/wiki/${cap(pick(r, WORDS))}_${pick(r, WORDS)}`;
      case 2: return `${scheme}${d}/${2005 + Math.floor(r() * 20)}/${String(1 + Math.floor(r() * 12)).padStart(2, '0')}/${pick(r, WORDS)}-${pick(r, WORDS)}-${pick(r, WORDS)}`;
      case 3: return `${scheme}${d}/questions/${Math.floor(r() * 80_000_000)}/${pick(r, WORDS)}-${pick(r, WORDS)}`;
      default: return `${scheme}${d}/products/${pick(r, WORDS)}?id=${Math.floor(r() * 1_000_000)}`;
    }
  });
}

function titles(seed: number): DataSet {
  const r = rng(seed);
  return uniqueStrings('titles', () => {
    switch (Math.floor(r() * 7)) {
      case 0: return `List_of_${pick(r, WORDS)}s_in_${pick(r, PLACES)}`;
      case 1: return `${pick(r, FIRST)}_${pick(r, LAST)}${r() < 0.3 ? `_(${pick(r, WORDS)})` : ''}`;
      case 2: return `${pick(r, ['Battle', 'Siege', 'Treaty', 'University', 'History'])}_of_${pick(r, PLACES)}`;
      case 3: return `${1800 + Math.floor(r() * 225)}_in_${cap(pick(r, WORDS))}`;
      case 4: return `${pick(r, PLACES)}_(${pick(r, WORDS)})`;
      case 5: return `${cap(pick(r, WORDS))}_${pick(r, WORDS)}`;
      default: return `${cap(pick(r, WORDS))}`;
    }
  });
}

function dense(): DataSet {
  let i = 0;
  return { name: 'dense', kind: 'number', next: () => i++ };
}

function sparse(seed: number): DataSet {
  const r = rng(seed);
  const seen = new Set<number>();
  return {
    name: 'sparse',
    kind: 'number',
    next() {
      for (;;) {
        const v = Math.floor(r() * 4294967296);
        if (!seen.has(v)) {
          seen.add(v);
          return v;
        }
      }
    },
  };
}

/** A 20-bit partition id ‖ a 32-bit counter per partition (the paper's "partitioned"). */
function partitioned(seed: number): DataSet {
  const r = rng(seed);
  const parts: { id: number; n: number }[] = [];
  const used = new Set<number>();
  while (parts.length < 64) {
    const id = 1 + Math.floor(r() * 1_000_000);
    if (!used.has(id)) {
      used.add(id);
      parts.push({ id, n: 0 });
    }
  }
  return {
    name: 'partitioned',
    kind: 'number',
    next() {
      // Skewed: low partitions get more keys.
      const p = parts[Math.floor(parts.length * r() * r())]!;
      return p.id * 4294967296 + p.n++;
    },
  };
}

export const DATASETS: readonly DataSetInfo[] = [
  { id: 'urls', label: 'URLs', kind: 'utf8', about: 'web addresses: long shared prefixes (scheme, host, path)', make: urls },
  { id: 'titles', label: 'Wikipedia-like titles', kind: 'utf8', about: 'article titles: short, many share their first bytes (List_of_…, 19xx_in_…)', make: titles },
  { id: 'dense', label: 'dense integers', kind: 'number', about: '0, 1, 2, …: every integer present', make: dense },
  { id: 'sparse', label: 'sparse integers', kind: 'number', about: 'random 32-bit integers', make: sparse },
  { id: 'partitioned', label: 'partitioned integers', kind: 'number', about: '64 partitions (random 20-bit id) × a dense counter each', make: partitioned },
];

/** Fisher-Yates, seeded. */
export function shuffle<T>(a: T[], r: () => number): T[] {
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    const t = a[i]!;
    a[i] = a[j]!;
    a[j] = t;
  }
  return a;
}

/** Keys pasted or uploaded: one per line; integers only → number keys. Returns the keys and what was dropped. */
export function parseKeys(text: string): { kind: KeyKind; keys: (string | number)[]; dropped: number } {
  const lines = text.split(/\r?\n/);
  const seen = new Set<string>();
  const out: string[] = [];
  let dropped = 0;
  const enc = new TextEncoder();
  for (const raw of lines) {
    const line = raw.replace(/\s+$/, '');
    if (line === '') continue;
    // (a lone surrogate is not a utf8 key: the build threw and the page stayed 'loading')
    if (seen.has(line) || enc.encode(line).length > 1024 || /[\ud800-\udbff](?![\udc00-\udfff])|(?:^|[^\ud800-\udbff])[\udc00-\udfff]/.test(line)) {
      dropped++;
      continue;
    }
    seen.add(line);
    out.push(line);
  }
  const ints = out.length > 0 && out.every((s) => /^-?\d{1,15}$/.test(s));
  if (ints) {
    const nums = new Set<number>();
    const keys: number[] = [];
    for (const s of out) {
      const v = Number(s);
      if (nums.has(v)) dropped++;
      else {
        nums.add(v);
        keys.push(v);
      }
    }
    return { kind: 'number', keys, dropped };
  }
  return { kind: 'utf8', keys: out, dropped };
}
