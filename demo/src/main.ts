// The demo page: build a tree from sample or your own keys with a chosen layout
// configuration, run workloads on it, and watch the node layouts change.
import {
  init,
  InspectableMap,
  inspectNode,
  inspectTree,
  nodeDump,
  pageImage,
  type AdaptreeWasm,
  type BTreeStats,
  type LayoutName,
  type TreeView,
} from 'adaptree';
import { Charts, WORKLOAD_COLORS } from './charts';
import { DATASETS, parseKeys, type DataSet, type KeyKind } from './datasets';
import { renderInspector } from './inspector';
import { ABOUT, COLORS, CONFIGS, NAMES, SHORT } from './layouts';
import { TreeDrawing } from './tree-view';

const $ = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

/** Every value is 8 bytes, so dense keys can use fully dense leaves (equal-size values). */
const VALUE = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]);
/** Inserts add new keys until the tree holds this many times the keys it was built with
 * (then they overwrite existing keys), so that the tree stays drawable. */
const GROWTH = 2;
const SAMPLE_MS = 500;

const WORKLOADS = [
  { id: 'insert', label: 'inserts', about: 'new keys from the same data set, until the tree has twice its keys; then overwrites' },
  { id: 'lookup-uniform', label: 'point lookups (uniform)', about: 'get() of random present keys' },
  { id: 'lookup-zipf', label: 'point lookups (zipf)', about: 'get(), a few hot keys asked most (zipf 0.99)' },
  { id: 'scan', label: 'scans', about: 'range scans from a random key' },
  { id: 'mix', label: 'mix (slider)', about: 'scans and point lookups in the ratio of the slider' },
] as const;
type WorkloadId = (typeof WORKLOADS)[number]['id'];
const WORKLOAD_LABELS: Record<string, string> = Object.fromEntries(WORKLOADS.map((w) => [w.id, w.label]));

interface State {
  wasm: AdaptreeWasm;
  map: InspectableMap<string | number, Uint8Array> | null;
  kind: KeyKind;
  keys: (string | number)[];
  source: DataSet | null;
  sourceLabel: string;
  running: WorkloadId | null;
  runTime: number;
  tree: TreeView | null;
  stats: BTreeStats | null;
  selected: number;
  renders: number;
  lastOps: number;
  /** Keys the tree was built with. */
  built: number;
}

let S: State;
let charts: Charts;
let drawing: TreeDrawing;

// ----------------------------------------------------------------------------- zipf

class Zipf {
  readonly cdf: Float64Array;
  constructor(readonly n: number, s = 0.99) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) this.cdf[i] = sum += 1 / Math.pow(i + 1, s);
    for (let i = 0; i < n; i++) this.cdf[i]! /= sum;
  }
  /** An index into the key array: rank by inverse CDF, spread over the keys by a fixed permutation. */
  next(): number {
    const u = Math.random();
    let lo = 0, hi = this.n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.cdf[mid]! < u) lo = mid + 1;
      else hi = mid;
    }
    return (lo * 2147483647) % this.n;
  }
}
let zipf: Zipf | null = null;

// ----------------------------------------------------------------------------- building

function status(text: string): void {
  $('load-status').textContent = text;
}

async function build(kind: KeyKind, keys: (string | number)[], source: DataSet | null, label: string): Promise<void> {
  stop();
  document.body.dataset.state = 'loading';
  S.map?.free();
  S.map = null;
  S.selected = -1;
  drawing.select(-1);
  S.lastOps = 0;
  showOps();
  $('inspector').innerHTML = '<p class="hint">Click a node in the tree above.</p>';
  const layout = ($<HTMLSelectElement>('layout').value || 'adaptive') as LayoutName;
  // (one map type for both kinds: each map holds the keys of its `kind` only, which the key
  // types' check of an encoding against K = string | number cannot see)
  const map = new InspectableMap<string | number, Uint8Array>(null, { keys: kind as never, values: 'bytes', layout });
  S.map = map;
  S.kind = kind;
  S.keys = [];
  S.source = source;
  S.sourceLabel = label;
  S.runTime = 0;
  zipf = null;
  charts.reset();
  // The time shown is setMany's alone: the pauses between chunks (the page redraws, a large
  // text box with it) took 60-80 times as long for a 1M-key upload (a probe, session 30).
  let ms = 0;
  const CHUNK = 5000;
  for (let i = 0; i < keys.length; i += CHUNK) {
    const part = keys.slice(i, i + CHUNK);
    try {
      const entries = part.map((k) => [k, VALUE] as [string | number, Uint8Array]);
      const t0 = performance.now();
      map.setMany(entries);
      ms += performance.now() - t0;
    } catch (e) {
      // Said on the page (it stayed 'loading' with the previous tree's figures, session 23),
      // and the page shows the map it now holds: it kept the previous tree's drawing and figures
      // while S.map was the new map, and a click on a drawn node threw or showed another tree's
      // page (a probe, session 33: a 1015-byte key under `baseline`, which takes 1011).
      status(`cannot insert these keys: ${(e as Error).message} (in the chunk of ${part.length.toLocaleString()} from key ${(i + 1).toLocaleString()}; the tree holds the ${S.keys.length.toLocaleString()} keys before it)`);
      S.built = S.keys.length;
      render(true);
      charts.add(0, S.stats!.layouts);
      document.body.dataset.state = 'idle';
      return;
    }
    for (const k of part) S.keys.push(k);
    status(`inserting… ${S.keys.length.toLocaleString()} of ${keys.length.toLocaleString()}`);
    await new Promise((r) => setTimeout(r, 0));
    if (S.map !== map) return; // another build started
  }
  S.built = S.keys.length;
  status(`${keys.length.toLocaleString()} ${label} inserted (setMany, ${CHUNK.toLocaleString()} at a time) in ${ms.toFixed(0)} ms (layout: ${layout})`);
  render(true);
  charts.add(0, S.stats!.layouts);
  document.body.dataset.state = 'idle';
}

async function loadSample(): Promise<void> {
  const info = DATASETS.find((d) => d.id === $<HTMLSelectElement>('dataset').value) ?? DATASETS[0]!;
  const n = Number($<HTMLSelectElement>('size').value);
  const source = info.make(42);
  const keys: (string | number)[] = new Array(n);
  for (let i = 0; i < n; i++) keys[i] = source.next();
  await build(info.kind, keys, source, info.label);
}

/** The own keys the tree was last built from: a change of layout builds them again (the text
 * box may have been emptied since, or hold an upload's preview only). */
let ownKeys: { kind: KeyKind; keys: (string | number)[]; label: string } | null = null;
/** An uploaded file's text, when too large to show in the text box. */
let uploaded: string | null = null;
/** Uploads longer than this stay out of the text box (redrawing it took seconds a chunk). */
const SHOWN_UPLOAD = 1 << 20;

async function loadOwn(text?: string): Promise<void> {
  const { kind, keys, dropped } = parseKeys(text ?? uploaded ?? $<HTMLTextAreaElement>('paste').value);
  if (keys.length === 0) {
    status('no keys: paste or upload one key per line');
    return;
  }
  const label = `own keys (${kind === 'number' ? 'integers' : 'strings'}${dropped ? `; ${dropped} left out: duplicates, over 1 KiB, or lone surrogates` : ''})`;
  ownKeys = { kind, keys, label };
  await build(kind, keys, null, label);
}

// ----------------------------------------------------------------------------- workloads

let timer: ReturnType<typeof setTimeout> | undefined;
let sampleOps = 0, runStart = 0;
/** What the last redraw took (ms): a large tree's inspectTree takes seconds. */
let renderMs = 0;
/** Work time (ms) in the current sample. */
let sampleMs = 0;

function oneOp(w: WorkloadId, map: InspectableMap<string | number, Uint8Array>, scanLen: number, mix: number): number {
  const keys = S.keys;
  switch (w) {
    case 'insert':
      if (S.source !== null && keys.length < GROWTH * S.built) {
        const k = S.source.next();
        map.set(k, VALUE);
        keys.push(k);
      } else {
        map.set(keys[Math.floor(Math.random() * keys.length)]!, VALUE);
      }
      return 1;
    case 'lookup-uniform':
      map.get(keys[Math.floor(Math.random() * keys.length)]!);
      return 1;
    case 'lookup-zipf':
      map.get(keys[zipf!.next()]!);
      return 1;
    case 'scan':
    case 'mix': {
      if (w === 'mix' && Math.random() * 100 >= mix) {
        map.get(keys[Math.floor(Math.random() * keys.length)]!);
        return 1;
      }
      let n = 0;
      for (const _ of map.entries({ gte: keys[Math.floor(Math.random() * keys.length)]!, limit: scanLen })) n++;
      return n >= 0 ? 1 : 0;
    }
  }
}

function tick(): void {
  const w = S.running, map = S.map;
  if (w === null || map === null) return;
  const scanLen = Number($<HTMLSelectElement>('scan-length').value);
  const mix = Number($<HTMLInputElement>('mix').value);
  const t0 = performance.now();
  const step = w === 'scan' || w === 'mix' ? 4 : 256;
  let now = t0;
  while (now - t0 < 30) {
    for (let i = 0; i < step; i++) sampleOps += oneOp(w, map, scanLen, mix);
    now = performance.now();
  }
  sampleMs += now - t0;
  // A sample lasts SAMPLE_MS of work and at least 4 redraws' time: on a tree of 40k nodes a
  // redraw took 3 s, and redrawing after every 30 ms of work left no time for a click on stop
  // (a new-user probe, session 23: stop answered after 59 s). ops/s is over the work only.
  if (sampleMs >= Math.max(SAMPLE_MS, 4 * renderMs)) {
    S.runTime += sampleMs / 1000;
    S.lastOps = sampleOps / (sampleMs / 1000);
    const r0 = performance.now();
    render(false);
    charts.add(+S.runTime.toFixed(2), S.stats!.layouts, w, S.lastOps);
    showOps();
    renderMs = performance.now() - r0;
    sampleOps = 0;
    sampleMs = 0;
    // (a pause as long as the redraw: input and painting get their turn)
    timer = setTimeout(tick, Math.min(renderMs, 1000));
    return;
  }
  timer = setTimeout(tick, 0);
}

function run(w: WorkloadId): void {
  // (not while a tree is being built: the workload ran beside the build, whose end then set the
  // page idle under it; a probe, session 30)
  if (S.map === null || S.keys.length === 0 || document.body.dataset.state === 'loading') return;
  stop();
  if (w === 'lookup-zipf' && (zipf === null || zipf.n !== S.keys.length)) zipf = new Zipf(S.keys.length);
  S.running = w;
  document.body.dataset.state = 'running';
  document.body.dataset.workload = w;
  for (const b of document.querySelectorAll<HTMLButtonElement>('#workloads button')) b.classList.toggle('active', b.dataset.workload === w);
  $<HTMLButtonElement>('stop').disabled = false;
  runStart = performance.now();
  sampleOps = 0;
  sampleMs = 0;
  S.lastOps = 0;
  showOps();
  timer = setTimeout(tick, 0);
}

function stop(): void {
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  const was = S.running;
  S.running = null;
  for (const b of document.querySelectorAll<HTMLButtonElement>('#workloads button')) b.classList.remove('active');
  $<HTMLButtonElement>('stop').disabled = true;
  if (was !== null && S.map !== null) {
    void runStart;
    render(true);
    showOps(was);
    document.body.dataset.state = 'idle';
  }
}

function fmtOps(x: number): string {
  return x >= 1e6 ? `${(x / 1e6).toFixed(2)} M` : x >= 1e3 ? `${(x / 1e3).toFixed(1)} k` : x.toFixed(0);
}

function showOps(stopped?: WorkloadId): void {
  const w = S.running ?? stopped;
  $('ops').textContent = S.lastOps > 0 ? `${fmtOps(S.lastOps)} ops/s` : '–';
  $('ops').dataset.ops = String(Math.round(S.lastOps));
  const scans = w === 'scan' || w === 'mix' ? ` (a scan reads ${$<HTMLSelectElement>('scan-length').value} records and counts as one operation)` : '';
  const ins = w === 'insert' && S.source !== null && S.keys.length >= GROWTH * S.built ? ' (key limit reached: now overwrites)' : '';
  $('ops-what').textContent = w ? `${S.running ? 'running' : 'last ran'}: ${WORKLOAD_LABELS[w]}${scans}${ins}` : 'no workload running';
}

// ----------------------------------------------------------------------------- rendering

function render(full: boolean): void {
  const map = S.map;
  if (map === null) return;
  S.stats = map.stats();
  S.tree = inspectTree(map);
  drawing.draw(S.tree, S.kind);
  renderStats(S.stats);
  if (full && S.selected >= 0) {
    if (S.tree.nodes.some((n) => n.id === S.selected)) select(S.selected);
    else {
      $('inspector').innerHTML = `<p class="hint">Page ${S.selected} is no longer a node of the tree (merged or freed). Click another node.</p>`;
      S.selected = -1;
    }
  }
  S.renders++;
  document.body.dataset.renders = String(S.renders);
}

function renderStats(s: BTreeStats): void {
  const leaves = s.layouts.basic_leaf + s.layouts.fingerprint_leaf + s.layouts.semi_dense_leaf + s.layouts.fully_dense_leaf;
  const chips = (['inner', 'basic_leaf', 'fingerprint_leaf', 'semi_dense_leaf', 'fully_dense_leaf'] as const)
    .map((l) => `<span class="chip" data-stat-layout="${l}" data-n="${s.layouts[l]}"><i style="background:${COLORS[l]}"></i>${SHORT[l]} <b>${s.layouts[l]}</b></span>`)
    .join('');
  $('stats').innerHTML =
    `<div><b data-stat="count">${s.count.toLocaleString()}</b> keys (${S.sourceLabel})</div>` +
    `<div><b data-stat="height">${s.height}</b> levels</div>` +
    `<div><b data-stat="pages">${s.pages.toLocaleString()}</b> pages = ${(s.bytes / 1048576).toFixed(1)} MiB</div>` +
    `<div><b>${(s.fill * 100).toFixed(0)}%</b> average fill</div>` +
    `<div><b>${s.bytes_per_record.toFixed(1)}</b> bytes/key</div>` +
    `<div><b>${leaves}</b> leaves: ${chips}</div>` +
    `<div class="config">configuration <b>${s.config}</b></div>`;
}

function select(id: number): void {
  const map = S.map;
  if (map === null) return;
  const node = S.tree?.nodes.find((n) => n.id === id);
  if (!node) return;
  S.selected = id;
  drawing.select(id);
  renderInspector($('inspector'), inspectNode(map, id), node.level, S.kind);
}

// ----------------------------------------------------------------------------- setup

function setupControls(): void {
  const ds = $<HTMLSelectElement>('dataset');
  for (const d of DATASETS) ds.add(new Option(d.label, d.id));
  const about = () => ($('dataset-about').textContent = DATASETS.find((d) => d.id === ds.value)?.about ?? '');
  about();
  ds.addEventListener('change', () => {
    about();
    void loadSample();
  });
  $<HTMLSelectElement>('size').addEventListener('change', () => void loadSample());
  const ls = $<HTMLSelectElement>('layout');
  for (const c of CONFIGS) ls.add(new Option(c.label, c.id));
  const lAbout = () => ($('layout-about').textContent = CONFIGS.find((c) => c.id === ls.value)?.about ?? '');
  lAbout();
  ls.addEventListener('change', () => {
    lAbout();
    if (S.source === null && S.map !== null && S.sourceLabel.startsWith('own') && ownKeys !== null) void build(ownKeys.kind, ownKeys.keys, null, ownKeys.label);
    else void loadSample();
  });
  $('load').addEventListener('click', () => void loadSample());
  const paste = $<HTMLTextAreaElement>('paste');
  // (typing or pasting replaces an upload held outside the box)
  const hint = paste.placeholder;
  paste.addEventListener('input', () => {
    uploaded = null;
    paste.placeholder = hint;
  });
  $('load-own').addEventListener('click', () => void loadOwn());
  $<HTMLInputElement>('upload').addEventListener('change', async (e) => {
    const f = (e.target as HTMLInputElement).files?.[0];
    if (!f) return;
    const text = await f.text();
    if (text.length > SHOWN_UPLOAD) {
      uploaded = text;
      paste.value = '';
      paste.placeholder = `${f.name}: ${(text.length / 1e6).toFixed(1)} MB uploaded (not shown here); type or paste to replace it`;
    } else {
      uploaded = null;
      paste.value = text;
    }
    await loadOwn();
  });
  const wl = $('workloads');
  for (const w of WORKLOADS) {
    const b = document.createElement('button');
    b.type = 'button';
    b.dataset.workload = w.id;
    b.title = w.about;
    b.innerHTML = `<i style="background:${WORKLOAD_COLORS[w.id]}"></i>${w.label}`;
    b.addEventListener('click', () => (S.running === w.id ? stop() : run(w.id)));
    wl.append(b);
  }
  $('stop').addEventListener('click', () => stop());
  const mix = $<HTMLInputElement>('mix');
  const mixText = () => ($('mix-value').textContent = `${mix.value}% scans / ${100 - Number(mix.value)}% lookups`);
  mix.addEventListener('input', mixText);
  mixText();
  $('legend').innerHTML = Object.keys(NAMES)
    .map((l) => `<div class="legend-item"><span class="swatch" style="background:${COLORS[l]}"></span><b>${NAMES[l]}</b><p>${ABOUT[l]}</p></div>`)
    .join('');
}

function describeEnv(w: AdaptreeWasm): void {
  const isolated = globalThis.crossOriginIsolated === true;
  const threads = w.build === 'mt'
    ? '<b>threads on</b>: cross-origin isolated, the multi-threaded build (shared memory) is loaded'
    : `<b>single-threaded</b>: ${isolated ? 'the multi-threaded build is not available here' : 'this page is not cross-origin isolated (no COOP/COEP headers), so SharedArrayBuffer is unavailable'}; the st build is loaded`;
  $('env').innerHTML =
    `<span data-build="${w.build}" id="build">${threads}</span>` +
    `<span id="storage"><b>memory only</b>: this tree is an in-memory map in wasm memory. The package's persistent store (BTreeStore: a buffer pool over files, OPFS, IndexedDB or Durable Objects) is not shown on this page.</span>`;
}

async function main(): Promise<void> {
  const wasm = await init({ threads: true });
  S = {
    wasm, map: null, kind: 'utf8', keys: [], source: null, sourceLabel: '', running: null, runTime: 0,
    tree: null, stats: null, selected: -1, renders: 0, lastOps: 0, built: 0,
  };
  describeEnv(wasm);
  charts = new Charts($<HTMLCanvasElement>('chart-mix'), $<HTMLCanvasElement>('chart-speed'), WORKLOAD_LABELS);
  drawing = new TreeDrawing({ container: $('tree'), tooltip: $('tooltip'), onSelect: select });
  setupControls();
  // For tests and the curious (console): the map and the inspection API.
  (globalThis as Record<string, unknown>).adaptreeDemo = {
    get map() { return S.map; },
    get state() { return { running: S.running, keys: S.keys.length, kind: S.kind, selected: S.selected, build: S.wasm.build }; },
    stats: () => S.map!.stats(),
    tree: () => inspectTree(S.map!),
    nodeDump: (id: number) => nodeDump(S.map!, id),
    pageImage: (id: number) => Array.from(pageImage(S.map!, id)),
    select,
    charts: () => ({
      workloads: charts.speed.data.datasets.map((d) => d.label),
      mixPoints: charts.mix.data.datasets[0]!.data.length,
    }),
  };
  await loadSample();
}

main().catch((e: unknown) => {
  document.body.dataset.state = 'error';
  $('load-status').textContent = `failed: ${String(e)}`;
  throw e;
});
