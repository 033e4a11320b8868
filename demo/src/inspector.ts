// The node inspector: one node's header, slots, heads, hints, fingerprints or dense
// bitmap, decoded, and its raw page as hex. The common header is decoded here from the
// page bytes; the layout-specific parts come from the core's own dump (at_inspect_node).
import type { NodeView } from 'adaptree';
import type { KeyKind } from './datasets';
import { ABOUT, COLORS, NAMES } from './layouts';
import { hex2, showKey } from './keys';
import { esc } from './tree-view';

const NODE_BYTES = 4088;
const PAGE_BYTES = 4096;

type Row = [offset: string, field: string, value: string | number, key: string, note?: string];

function table(rows: Row[]): string {
  return (
    '<table class="fields"><tr><th>offset</th><th>field</th><th>value</th><th></th></tr>' +
    rows
      .map(([o, f, v, k, note]) => `<tr><td class="off">${o}</td><td>${esc(f)}</td><td data-field="${k}">${esc(String(v))}</td><td class="note">${esc(note ?? '')}</td></tr>`)
      .join('') +
    '</table>'
  );
}

function fenceText(hex: string | null, kind: KeyKind): string {
  return hex === null ? '(infinite)' : showKey(hex, kind, 80);
}

/** Byte ranges of the page, for colouring the hex dump. */
function regions(v: NodeView): { from: number; to: number; cls: string; label: string }[] {
  const d = v.dump, h = v.header;
  const r: { from: number; to: number; cls: string; label: string }[] = [];
  const num = (k: string) => Number(d[k] ?? 0);
  r.push({ from: 0, to: 20, cls: 'r-hdr', label: 'common header' });
  switch (d.layout) {
    case 'inner':
    case 'basic_leaf': {
      const hinted = (h.flags & 2) !== 0, heads = (h.flags & 1) !== 0;
      r.push({ from: 20, to: 24, cls: 'r-hdr', label: 'upper child' });
      if (hinted) r.push({ from: 24, to: 88, cls: 'r-hint', label: 'hints' });
      const base = hinted ? 88 : 24;
      r.push({ from: base, to: base + h.count * (heads ? 10 : 6), cls: 'r-slot', label: 'slots' });
      break;
    }
    case 'fingerprint_leaf':
      r.push({ from: 20, to: 24, cls: 'r-hdr', label: 'sorted, capacity' });
      r.push({ from: 24, to: 24 + num('fp_capacity'), cls: 'r-fp', label: 'fingerprints' });
      r.push({ from: 24 + num('fp_capacity'), to: 24 + num('fp_capacity') + 6 * h.count, cls: 'r-slot', label: 'slots' });
      break;
    case 'semi_dense_leaf':
      r.push({ from: 20, to: 28, cls: 'r-hdr', label: 'slot count, key length, ref' });
      r.push({ from: 28, to: 28 + 2 * num('slot_count'), cls: 'r-slot', label: 'slots' });
      break;
    case 'fully_dense_leaf': {
      r.push({ from: 20, to: 32, cls: 'r-hdr', label: 'key length, reserve, ref, values offset' });
      const words = Math.ceil(num('capacity') / 64);
      r.push({ from: 32, to: 32 + 8 * words, cls: 'r-fp', label: 'bitmap' });
      r.push({ from: num('values_off'), to: num('values_off') + num('capacity') * num('value_size'), cls: 'r-slot', label: 'values' });
      break;
    }
  }
  if (d.layout !== 'fully_dense_leaf') {
    const heapStart = Number(d.heap_start ?? NODE_BYTES);
    const slotsEnd = r[r.length - 1]!.to;
    if (heapStart > slotsEnd) r.push({ from: slotsEnd, to: heapStart, cls: 'r-free', label: 'free (stale bytes)' });
    r.push({ from: heapStart, to: NODE_BYTES, cls: 'r-heap', label: 'heap: keys, values, fences' });
  } else {
    r.push({ from: Math.min(h.lowerOffset, h.upperOffset), to: NODE_BYTES, cls: 'r-heap', label: 'fences' });
  }
  r.push({ from: NODE_BYTES, to: PAGE_BYTES, cls: 'r-trailer', label: 'trailer (storage: page id, checksum)' });
  return r;
}

function hexDump(v: NodeView): string {
  const cls = new Array<string>(PAGE_BYTES).fill('');
  const rs = regions(v);
  for (const x of rs) for (let i = Math.max(0, x.from); i < Math.min(PAGE_BYTES, x.to); i++) cls[i] = x.cls;
  const lines: string[] = [];
  for (let row = 0; row < PAGE_BYTES; row += 16) {
    let line = `<span class="addr">${row.toString(16).padStart(4, '0')}</span> `;
    let ascii = '';
    for (let i = row; i < row + 16; i++) {
      const b = v.page[i]!;
      line += `<span class="${cls[i]}">${hex2(b)}</span>${i % 8 === 7 ? '  ' : ' '}`;
      ascii += b >= 0x20 && b < 0x7f ? esc(String.fromCharCode(b)) : '.';
    }
    lines.push(line + ascii);
  }
  const labels = new Map<string, string>();
  for (const x of rs) labels.set(x.cls, labels.has(x.cls) ? `${labels.get(x.cls)}, ${x.label}` : x.label);
  const legend = [...labels.entries()]
    .map(([c, l]) => `<span class="${c}">${esc(l)}</span>`)
    .join(' ');
  return `<div class="hex-legend">${legend}</div><pre class="hex" data-hex-bytes="${PAGE_BYTES}">${lines.join('\n')}</pre>`;
}

function fingerprintGrid(fps: string, sorted: number): string {
  const cells: string[] = [];
  for (let i = 0; i < fps.length / 2; i++) {
    cells.push(`<span class="${i < sorted ? 'fp' : 'fp unsorted'}" title="slot ${i}">${fps.substr(2 * i, 2)}</span>`);
  }
  return `<div class="fps" data-field="fingerprints" data-hex="${fps}">${cells.join('')}</div>`;
}

function bitmapGrid(bitmapHex: string, capacity: number): string {
  const cells: string[] = [];
  const bytes = bitmapHex.length / 2;
  for (let i = 0; i < capacity && i < bytes * 8; i++) {
    const byte = parseInt(bitmapHex.substr(2 * (i >> 3), 2), 16);
    const on = (byte >> (i & 7)) & 1;
    cells.push(`<span class="${on ? 'bit on' : 'bit'}"></span>`);
  }
  return `<div class="bitmap" data-field="bitmap" data-hex="${bitmapHex}">${cells.join('')}</div>`;
}

function slotTable(v: NodeView, kind: KeyKind): string {
  const d = v.dump;
  const slots = d.slots ?? [];
  const cols: [string, string][] = [];
  switch (d.layout) {
    case 'inner': cols.push(['off', 'heap offset'], ['suffix_len', 'suffix bytes'], ['head', 'head'], ['child', 'child page']); break;
    case 'basic_leaf': cols.push(['off', 'heap offset'], ['suffix_len', 'suffix bytes'], ['value_len', 'value bytes'], ['head', 'head']); break;
    case 'fingerprint_leaf': cols.push(['fp', 'fingerprint'], ['off', 'heap offset'], ['suffix_len', 'suffix bytes'], ['value_len', 'value bytes']); break;
    case 'semi_dense_leaf': cols.push(['index', 'slot'], ['off', 'heap offset'], ['value_len', 'value bytes']); break;
    case 'fully_dense_leaf': cols.push(['index', 'bit / value index']); break;
  }
  const head = `<tr><th>#</th>${cols.map(([, l]) => `<th>${l}</th>`).join('')}<th>key (decoded)</th></tr>`;
  const fmt = (k: string, x: unknown) =>
    x === undefined ? '' : k === 'head' ? (x as number).toString(16).padStart(8, '0') : k === 'fp' ? hex2(x as number) : String(x);
  const rows = slots.map(
    (s, i) =>
      `<tr data-key="${s.key ?? ''}"><td>${i}</td>${cols.map(([k]) => `<td>${fmt(k, s[k])}</td>`).join('')}<td class="key">${esc(showKey(s.key as string, kind, 70))}</td></tr>`,
  );
  const what = d.layout === 'semi_dense_leaf' || d.layout === 'fully_dense_leaf' ? 'present keys' : 'slots, in slot order';
  return `<h4>${what} (${slots.length})</h4><div class="slots-wrap"><table class="slots" data-count="${slots.length}">${head}${rows.join('')}</table></div>`;
}

export function renderInspector(el: HTMLElement, v: NodeView, level: number, kind: KeyKind): void {
  const d = v.dump, h = v.header;
  const rows: Row[] = [
    ['0', 'layout tag', `${h.tag} (${d.layout})`, 'tag'],
    ['1', 'flags', `0x${hex2(h.flags)}: ${[h.flags & 1 ? 'heads' : '', h.flags & 2 ? 'hints' : '', h.flags & 4 ? 'lower=−∞' : '', h.flags & 8 ? 'upper=+∞' : ''].filter(Boolean).join(', ') || 'none'}`, 'flags'],
    ['2', d.layout === 'inner' ? 'keys' : 'records', h.count, 'count'],
  ];
  if (d.layout === 'fully_dense_leaf') {
    rows.push(['4', 'capacity (slots)', h.field4, 'capacity'], ['6', 'value size', h.field6, 'value_size']);
  } else {
    rows.push(['4', 'heap start', h.field4, 'heap_start'], ['6', 'heap bytes used', h.field6, 'heap_used']);
  }
  rows.push(
    ['8', 'lower fence (offset, length)', `${h.lowerOffset}, ${h.lowerLength}`, 'lower_at'],
    ['12', 'upper fence (offset, length)', `${h.upperOffset}, ${h.upperLength}`, 'upper_at'],
    ['16', 'prefix length', h.prefixLength, 'prefix_len', 'bytes every key shares; stored once'],
    ['18', 'operation counter', h.counter === 255 ? '255 (not used)' : `${h.counter} of 3`, 'counter', h.counter === 255 ? '' : '0: lookups → fingerprint; 3: scans → sorted'],
  );
  switch (d.layout) {
    case 'inner': rows.push(['20', 'upper child', String(d.upper_child), 'upper_child', 'child for keys above the last separator']); break;
    case 'fingerprint_leaf':
      rows.push(['20', 'sorted slots', String(d.sorted), 'sorted', 'slots after this were appended by inserts'], ['22', 'fingerprint capacity', String(d.fp_capacity), 'fp_capacity']);
      break;
    case 'semi_dense_leaf':
      rows.push(['20', 'slot count', String(d.slot_count), 'slot_count', 'one slot per possible key'], ['22', 'key length', String(d.key_len), 'key_len'], ['24', 'reference (base) number', String(d.ref), 'ref', 'slot i holds key base + i']);
      break;
    case 'fully_dense_leaf':
      rows.push(['20', 'key length', String(d.key_len), 'key_len'], ['22', 'upper fence reserve', String(d.upper_reserve), 'upper_reserve'], ['24', 'reference (base) number', String(d.ref), 'ref', 'bit i = key base + i'], ['28', 'values offset', String(d.values_off), 'values_off']);
      break;
  }
  const parts: string[] = [];
  parts.push(
    `<h3 data-page-id="${d.id}"><span class="swatch" style="background:${COLORS[d.layout]}"></span>page ${d.id} · ${esc(NAMES[d.layout] ?? d.layout)} · level ${level}</h3>`,
    `<p class="about">${esc(ABOUT[d.layout] ?? '')}</p>`,
    `<p class="summary">${d.count} ${d.layout === 'inner' ? 'keys' : 'records'} · <span data-field="used">${d.used}</span> of ${NODE_BYTES} bytes used (${(d.fill * 100).toFixed(0)}%)</p>`,
    `<div class="fences"><div>lower fence (exclusive): <code data-field="lower" data-hex="${d.lower ?? ''}">${esc(fenceText(d.lower, kind))}</code></div>` +
      `<div>upper fence (inclusive): <code data-field="upper" data-hex="${d.upper ?? ''}">${esc(fenceText(d.upper, kind))}</code></div>` +
      (typeof d.prefix === 'string' && d.prefix.length > 0 ? `<div>prefix: <code data-field="prefix" data-hex="${d.prefix}">${esc(showKey(d.prefix as string, 'utf8', 80))}</code></div>` : '') +
      '</div>',
    '<h4>header</h4>',
    table(rows),
  );
  if (Array.isArray(d.hint_heads)) {
    const hs = d.hint_heads as number[];
    parts.push(
      `<h4>hints: 16 heads sampled from the slots (searched first; all zero until the node holds more than 32 keys)</h4><div class="hints" data-field="hint_heads" data-values="${hs.join(',')}">${hs.map((x) => `<span>${x.toString(16).padStart(8, '0')}</span>`).join('')}</div>`,
    );
  }
  if (typeof d.fingerprints === 'string') {
    parts.push(`<h4>fingerprints: one byte per slot (grey: unsorted tail)</h4>`, fingerprintGrid(d.fingerprints, Number(d.sorted)));
  }
  if (typeof d.bitmap === 'string') {
    parts.push(`<h4>presence bitmap: ${d.count} of ${d.capacity} keys present</h4>`, bitmapGrid(d.bitmap, Number(d.capacity)));
  }
  parts.push(slotTable(v, kind));
  parts.push('<h4>raw page (4096 bytes)</h4>', hexDump(v));
  el.innerHTML = parts.join('');
  el.dataset.pageId = String(d.id);
}
