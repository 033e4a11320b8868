// The tree drawn level by level: one box per node, coloured by layout, its fill as the
// height of the bar inside; hover for details, click to inspect.
import type { NodeSummary, TreeView } from 'adaptree';
import type { KeyKind } from './datasets';
import { COLORS, NAMES } from './layouts';
import { showKey } from './keys';

const NODE_BYTES = 4088;

export interface TreeViewOptions {
  container: HTMLElement;
  tooltip: HTMLElement;
  onSelect(id: number): void;
}

export class TreeDrawing {
  private byId = new Map<number, NodeSummary>();
  private kind: KeyKind = 'utf8';
  private selected = -1;

  constructor(private o: TreeViewOptions) {
    o.container.addEventListener('mouseover', (e) => this.hover(e));
    o.container.addEventListener('mousemove', (e) => this.place(e));
    o.container.addEventListener('mouseleave', () => this.unhover());
    o.container.addEventListener('click', (e) => {
      const el = (e.target as HTMLElement).closest<HTMLElement>('.node');
      if (el) this.o.onSelect(Number(el.dataset.id));
    });
  }

  select(id: number): void {
    this.selected = id;
    for (const el of this.o.container.querySelectorAll<HTMLElement>('.node.selected')) el.classList.remove('selected');
    this.o.container.querySelector<HTMLElement>(`.node[data-id="${id}"]`)?.classList.add('selected');
  }

  draw(view: TreeView, kind: KeyKind): void {
    this.kind = kind;
    this.byId.clear();
    const levels: NodeSummary[][] = [];
    for (const n of view.nodes) {
      this.byId.set(n.id, n);
      (levels[n.level] ??= []).push(n);
    }
    const leaves = levels[0]?.length ?? 0;
    const size = leaves <= 160 ? 'l' : leaves <= 700 ? 'm' : leaves <= 2500 ? 's' : 'xs';
    const frag = document.createDocumentFragment();
    for (let lv = levels.length - 1; lv >= 0; lv--) {
      const nodes = levels[lv] ?? [];
      const row = document.createElement('div');
      row.className = 'level';
      const label = document.createElement('div');
      label.className = 'level-label';
      const what = lv === levels.length - 1 ? (lv === 0 ? 'root = leaf' : 'root') : lv === 0 ? 'leaves' : 'inner';
      label.textContent = `level ${lv} · ${what} · ${nodes.length} node${nodes.length === 1 ? '' : 's'}`;
      row.append(label);
      const box = document.createElement('div');
      box.className = `nodes size-${lv === 0 ? size : 'l'}`;
      for (const n of nodes) {
        const el = document.createElement('div');
        el.className = n.id === this.selected ? 'node selected' : 'node';
        el.dataset.id = String(n.id);
        el.dataset.layout = n.layout;
        el.dataset.level = String(n.level);
        el.style.setProperty('--c', COLORS[n.layout] ?? '#999');
        const bar = document.createElement('div');
        bar.className = 'fill';
        bar.style.height = `${Math.round(Math.min(1, n.fill) * 100)}%`;
        el.append(bar);
        box.append(el);
      }
      row.append(box);
      frag.append(row);
    }
    this.o.container.replaceChildren(frag);
  }

  private hover(e: MouseEvent): void {
    const el = (e.target as HTMLElement).closest<HTMLElement>('.node');
    for (const c of this.o.container.querySelectorAll('.node.child')) c.classList.remove('child');
    if (!el) return;
    const n = this.byId.get(Number(el.dataset.id));
    if (!n) return;
    for (const c of n.children ?? []) this.o.container.querySelector(`.node[data-id="${c}"]`)?.classList.add('child');
    const t = this.o.tooltip;
    const lines = [
      `<b>page ${n.id}</b> · ${NAMES[n.layout] ?? n.layout} · level ${n.level}`,
      `${n.count} ${n.level === 0 ? 'records' : `separator keys → ${n.count + 1} children`}`,
      `fill ${(n.fill * 100).toFixed(0)}% (${n.used} of ${NODE_BYTES} bytes used)`,
      `prefix ${n.prefix} byte${n.prefix === 1 ? '' : 's'} shared by every key, stored once`,
      `fences (lower, upper]: ${n.lower == null ? '−∞' : esc(showKey(n.lower, this.kind, 40))} … ${esc(showKey(n.upper, this.kind, 40))}`,
    ];
    if (n.level === 0 && n.counter !== 255) {
      lines.push(`operation counter ${n.counter} of 3 (0: lookups dominate → fingerprint; 3: scans dominate → sorted)`);
    }
    lines.push('<i>click to inspect</i>');
    t.innerHTML = lines.join('<br>');
    t.hidden = false;
    this.place(e);
  }

  private place(e: MouseEvent): void {
    const t = this.o.tooltip;
    if (t.hidden) return;
    const x = Math.min(e.clientX + 14, window.innerWidth - t.offsetWidth - 8);
    const y = e.clientY + 16 + t.offsetHeight > window.innerHeight ? e.clientY - t.offsetHeight - 10 : e.clientY + 16;
    t.style.left = `${x}px`;
    t.style.top = `${y}px`;
  }

  private unhover(): void {
    this.o.tooltip.hidden = true;
    for (const c of this.o.container.querySelectorAll('.node.child')) c.classList.remove('child');
  }
}

export function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
}
