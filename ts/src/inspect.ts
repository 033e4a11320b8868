/**
 * Node inspection for the demo page and diagnostics: the tree's nodes level by level, and one
 * node decoded (by the core's own dump, bindings/inspect.cc) with its raw page image.
 *
 * ```ts
 * const m = new InspectableMap<number, Uint8Array>(null, { keys: 'number', values: 'bytes' });
 * m.setMany(entries);
 * const tree = inspectTree(m);                 // { root, height, nodes: [...] } root first
 * const node = inspectNode(m, tree.root);      // { dump, header, page }
 * ```
 *
 * `InspectableMap` is a `BTreeMap` in every respect; it only remembers which core tree it
 * owns, which a plain `BTreeMap` keeps private. Pages are read as copies, never as views
 * into the core's frames.
 */
import { Status } from './abi.js';
import { ClosedError, CorruptionError, InvalidArgumentError, NotInitializedError, errorFromStatus } from './errors.js';
import { BTreeMap, getDefaultWasm, type BTreeMapOptions } from './map.js';
import type { AdaptreeWasm } from './wasm.js';

/** One node as the tree view draws it (at_inspect_tree). Fences are hex, null when infinite. */
export interface NodeSummary {
  id: number;
  /** 'inner' | 'basic_leaf' | 'fingerprint_leaf' | 'semi_dense_leaf' | 'fully_dense_leaf' (as in stats().layouts). */
  layout: string;
  /** 0 = leaves. */
  level: number;
  /** Records (leaves) or separator keys (inner nodes). */
  count: number;
  /** Bytes the live content needs, and that over the node's bytes. */
  used: number;
  fill: number;
  /** Prefix bytes shared by every key of the node (for dense leaves: the fences' common prefix). */
  prefix: number;
  /** Operation counter of adaptive leaves (0..3; 255 = not used). */
  counter: number;
  lower?: string | null;
  upper?: string | null;
  /** Inner nodes: child page ids, left to right. */
  children?: number[];
}

export interface TreeView {
  root: number;
  height: number;
  /** Root first, then each level left to right. */
  nodes: NodeSummary[];
}

/** The core's decoding of one node (bindings/inspect.cc lists the fields per layout). */
export interface NodeDump {
  id: number;
  tag: number;
  layout: string;
  flags: number;
  heads: boolean;
  hints: boolean | number[];
  lower_inf: boolean;
  upper_inf: boolean;
  count: number;
  prefix_len: number;
  counter: number;
  lower: string | null;
  upper: string | null;
  used: number;
  fill: number;
  slots: Record<string, number | boolean | string | null>[] | null;
  [field: string]: unknown;
}

/** The common node header, decoded here in TypeScript from the page bytes. */
export interface NodeHeader {
  tag: number;
  flags: number;
  count: number;
  /** Bytes 4..7: heap start and heap used (slotted layouts) or capacity and value size (fully dense). */
  field4: number;
  field6: number;
  lowerOffset: number;
  lowerLength: number;
  upperOffset: number;
  upperLength: number;
  prefixLength: number;
  counter: number;
  /** Fences as bytes, null when the flags say infinite. */
  lower: Uint8Array | null;
  upper: Uint8Array | null;
}

export interface NodeView {
  dump: NodeDump;
  header: NodeHeader;
  /** A copy of the whole page (4 KiB), trailer included. */
  page: Uint8Array;
}

// ----------------------------------------------------------------------------- map

interface Owner {
  wasm: AdaptreeWasm;
  tree: number;
}

/** Per wasm instance: a view of it whose at_tree_new reports the tree a map gets. */
interface Tracker {
  view: AdaptreeWasm;
  capturing: boolean;
  created: number;
  freed: Set<number>;
}

const trackers = new WeakMap<AdaptreeWasm, Tracker>();
const owners = new WeakMap<object, Owner>();

function trackerOf(wasm: AdaptreeWasm): Tracker {
  let t = trackers.get(wasm);
  if (t !== undefined) return t;
  const ex = wasm.exports;
  const tracker: Tracker = { view: wasm, capturing: false, created: 0, freed: new Set() };
  const exports = {
    ...ex,
    at_tree_new(layout: number): number {
      const tree = ex.at_tree_new(layout);
      if (tracker.capturing) tracker.created = tree;
      tracker.freed.delete(tree);
      return tree;
    },
    at_tree_free(tree: number): void {
      tracker.freed.add(tree);
      ex.at_tree_free(tree);
    },
  };
  tracker.view = {
    build: wasm.build,
    module: wasm.module,
    exports,
    memory: wasm.memory,
    ctx: wasm.ctx,
    result: wasm.result,
    u8: () => wasm.u8(),
    dv: () => wasm.dv(),
    scratch: (size: number) => wasm.scratch(size),
    attachHandle: (stackSize?: number) => wasm.attachHandle(stackSize),
    get maxMemory() {
      return wasm.maxMemory;
    },
    setMaxMemory: (bytes: number) => wasm.setMaxMemory(bytes),
    get poisoned() {
      return wasm.poisoned;
    },
    markLost: (tree: number) => wasm.markLost(tree),
    releaseHandle: (handle: Parameters<AdaptreeWasm['releaseHandle']>[0]) => wasm.releaseHandle(handle),
    release: () => wasm.release(),
    get released() {
      return wasm.released;
    },
  };
  trackers.set(wasm, tracker);
  t = tracker;
  return t;
}

/**
 * A `BTreeMap` whose nodes `inspectTree` and `inspectNode` can read. Same options and
 * behaviour as `BTreeMap`; it runs on the same wasm instance (`options.wasm` or `init()`'s).
 */
export class InspectableMap<K = string, V = unknown> extends BTreeMap<K, V> {
  constructor(entries?: Iterable<readonly [K, V]> | null, options?: BTreeMapOptions<K, V>) {
    const wasm = options?.wasm ?? getDefaultWasm();
    if (wasm === undefined) throw new NotInitializedError();
    const tracker = trackerOf(wasm);
    tracker.capturing = true;
    tracker.created = 0;
    try {
      super(null, { ...options, wasm: tracker.view });
    } finally {
      tracker.capturing = false;
    }
    owners.set(this, { wasm, tree: tracker.created });
    if (entries !== undefined && entries !== null) {
      try {
        this.setMany(entries);
      } catch (e) {
        this.free();
        throw e;
      }
    }
  }
}

function ownerOf(map: BTreeMap<unknown, unknown>): Owner {
  const o = owners.get(map);
  // (a TypeError without a code before, session 22)
  if (o === undefined) throw new InvalidArgumentError('adaptree inspect: only an InspectableMap can be inspected (a BTreeMap or a store cannot)');
  // The map's own state first: a freed map's tree address can belong to a newer map by now
  // (inspectTree of a freed map returned another map's nodes).
  if (map.closed || o.tree === 0 || trackers.get(o.wasm)?.freed.has(o.tree)) throw new ClosedError();
  return o;
}

/** A node id is an integer from 0 (root + 0.7 and 2 ** 32 + root read the root). */
function checkNodeId(pageId: unknown, what: string): void {
  if (typeof pageId !== 'number' || !Number.isInteger(pageId) || pageId < 0 || pageId > 0xfffffffe) {
    throw new InvalidArgumentError(`${what}: a node id is an integer from 0, not ${String(pageId)}`);
  }
}

/** The core's CORRUPT for an id that is no node of this tree is a wrong argument, not damage
 * (it said 'corrupt' of a sound map); the tree is walked only then. */
function lookupFailed(map: BTreeMap<unknown, unknown>, pageId: number, what: string, e: unknown): unknown {
  if (!(e instanceof CorruptionError)) return e;
  return inspectTree(map).nodes.some((n) => n.id === pageId) ? e : new InvalidArgumentError(`${what}: no node ${pageId} in this tree`);
}

// ----------------------------------------------------------------------------- calls

const decoder = new TextDecoder('utf-8', { ignoreBOM: true }); // (a leading U+FEFF of a key is part of it)

/** Calls a JSON-writing inspection function with a buffer large enough (grown once if needed). */
function readJson(w: AdaptreeWasm, what: string, call: (out: number, cap: number) => number): unknown {
  let cap = 64 * 1024;
  for (let attempt = 0; attempt < 3; attempt++) {
    const out = w.exports.at_alloc(cap);
    if (out === 0) throw errorFromStatus(Status.OUT_OF_MEMORY, what);
    try {
      const n = call(out, cap);
      if (n < 0) throw errorFromStatus(n, what);
      if (n <= cap) {
        // Copy out first: TextDecoder refuses views of shared memory.
        return JSON.parse(decoder.decode(w.u8().slice(out, out + n)));
      }
      cap = n;
    } finally {
      w.exports.at_free(out);
    }
  }
  throw new Error(`adaptree inspect: ${what} kept growing`);
}

/** Every node of the map's tree, root first and then level by level (the core walks it). */
export function inspectTree(map: BTreeMap<any, any>): TreeView {
  const { wasm, tree } = ownerOf(map);
  return readJson(wasm, 'inspectTree', (out, cap) => wasm.exports.at_inspect_tree(tree, out, cap)) as TreeView;
}

/** The core's own decoding of node `pageId` (bindings/inspect.cc). */
export function nodeDump(map: BTreeMap<any, any>, pageId: number): NodeDump {
  const { wasm, tree } = ownerOf(map);
  checkNodeId(pageId, 'nodeDump');
  try {
    return readJson(wasm, 'nodeDump', (out, cap) => wasm.exports.at_inspect_node(tree, pageId, out, cap)) as NodeDump;
  } catch (e) {
    throw lookupFailed(map, pageId, 'nodeDump', e);
  }
}

/** A copy of page `pageId`'s bytes (at_page_size(), 4 KiB). */
export function pageImage(map: BTreeMap<any, any>, pageId: number): Uint8Array {
  const { wasm, tree } = ownerOf(map);
  checkNodeId(pageId, 'pageImage');
  const size = wasm.exports.at_page_size();
  const out = wasm.exports.at_alloc(size);
  if (out === 0) throw errorFromStatus(Status.OUT_OF_MEMORY, 'pageImage');
  try {
    const st = wasm.exports.at_inspect_page(tree, pageId, out);
    if (st !== Status.OK) throw lookupFailed(map, pageId, 'pageImage', errorFromStatus(st, 'pageImage'));
    return wasm.u8().slice(out, out + size);
  } finally {
    wasm.exports.at_free(out);
  }
}

/** The common header of a node page, read here from its bytes (node_common.h). */
export function decodeHeader(page: Uint8Array): NodeHeader {
  // (a short or missing page was a RangeError/TypeError without a code, session 23)
  if (!(page instanceof Uint8Array) || page.length < 24) throw new InvalidArgumentError('decodeHeader: give a page image (a Uint8Array of a page, 4 KiB)');
  const dv = new DataView(page.buffer, page.byteOffset, page.byteLength);
  const u16 = (o: number) => dv.getUint16(o, true);
  const flags = page[1]!;
  const lowerOffset = u16(8), lowerLength = u16(10), upperOffset = u16(12), upperLength = u16(14);
  return {
    tag: page[0]!,
    flags,
    count: u16(2),
    field4: u16(4),
    field6: u16(6),
    lowerOffset,
    lowerLength,
    upperOffset,
    upperLength,
    prefixLength: u16(16),
    counter: page[18]!,
    lower: flags & 4 ? null : page.slice(lowerOffset, lowerOffset + lowerLength),
    upper: flags & 8 ? null : page.slice(upperOffset, upperOffset + upperLength),
  };
}

/** Node `pageId`: the core's dump, the header decoded here, and the raw page. */
export function inspectNode(map: BTreeMap<any, any>, pageId: number): NodeView {
  const page = pageImage(map, pageId);
  return { dump: nodeDump(map, pageId), header: decodeHeader(page), page };
}

/** Hex (as the dumps write bytes) to bytes. */
export function hexToBytes(hex: string): Uint8Array {
  // (odd lengths and non-hex digits gave wrong bytes silently, session 23)
  if (typeof hex !== 'string' || hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) {
    throw new InvalidArgumentError('hexToBytes: give a string of hex digits, two per byte');
  }
  const out = new Uint8Array(hex.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.substr(2 * i, 2), 16);
  return out;
}
