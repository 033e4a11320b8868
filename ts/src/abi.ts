// TypeScript mirror of bindings/adaptree.h, the C ABI the wasm modules export.
// Keep the two in step: the header is the source of truth.

/** Status codes (core/status.h). Negative values are errors. */
export const Status = {
  OK: 0,
  NOT_FOUND: 1,
  RESTART: 2,
  NEED_PAGE: 3,
  KEY_TOO_LARGE: -1,
  VALUE_TOO_LARGE: -2,
  OUT_OF_MEMORY: -3,
  CORRUPT: -4,
  INVALID_ARGUMENT: -5,
  CLOSED: -6,
  IO_ERROR: -7,
  QUOTA_EXCEEDED: -8,
  LOCKED: -9,
  READ_ONLY: -10,
  /** A write while an async commit's page images are being written (the store gates them). */
  BUSY: -11,
} as const;
export type StatusCode = (typeof Status)[keyof typeof Status];

export const SeekFlags = { REVERSE: 1, EXCLUSIVE: 2, EDGE: 4 } as const;
/** at_cursor_next_batch flags (its last argument): read values too; give the batch in columns;
 * with COLUMNS, `number` keys as doubles (result.key_len 2). */
export const BatchFlags = { VALUES: 1, COLUMNS: 2, NUMBERS: 4 } as const;
/** Added to a batch's result.key_len (its form): an async store's page for the next record was
 * missing, so the batch ended early and more records may follow (bindings/adaptree.h). */
export const BATCH_MORE = 4;
/** at_cursor_seek_batch_to's stop flags: a key equal to the stop key is within the range. */
export const StopFlags = { INCLUSIVE: 1 } as const;
export const RangeFlags = { LO_NONE: 1, LO_EXCLUSIVE: 2, HI_NONE: 4, HI_EXCLUSIVE: 8 } as const;
/** at_delete_range on an async store: a page fault (page id in result.aux); keys removed
 * before it stay removed (the count tells how many). */
export const RANGE_NEED_PAGE = -1003;

/** Files of a store on a sync backend (at_host_* `file` argument). */
export const StoreFile = { DATA: 0, LOG: 1 } as const;
/** at_store_open flags. */
export const StoreOpenFlags = { CREATE: 1, READ_ONLY: 2, NO_LOG_DELTAS: 4, SALVAGE: 8 } as const;

/** The host file I/O the wasm modules import from "env" (bindings/adaptree.h). Offsets and
 * sizes are doubles (exact up to 2^53); results are a status (0 or negative) or a count. */
export const HOST_IMPORTS = ['at_host_read', 'at_host_write', 'at_host_sync', 'at_host_size', 'at_host_truncate'] as const;

/** Layout configurations (core/config.h LayoutConfig); ids are stable. */
export const LayoutConfig = {
  baseline: 0,
  prefix: 1,
  heads: 2,
  hints: 3,
  fingerprint: 4,
  'semi-dense': 5,
  'fully-dense': 6,
  adaptive: 7,
} as const;
export type LayoutName = keyof typeof LayoutConfig;

/** Byte offsets inside a context's result block (five little-endian u32). */
export const Result = { KEY_PTR: 0, KEY_LEN: 4, VALUE_PTR: 8, VALUE_LEN: 12, AUX: 16 } as const;

type Ptr = number;

/** The functions every adaptree wasm module exports. */
export interface AbiExports {
  at_abi_version(): number;
  at_page_size(): number;
  at_max_key_size(): number;
  /** The longest key the `baseline` layout (no prefix truncation) takes (1011 with 4 KiB pages). */
  at_max_key_size_untruncated(): number;
  at_alloc(size: number): Ptr;
  at_free(p: Ptr): void;
  at_ctx_new(): Ptr;
  at_ctx_free(ctx: Ptr): void;
  at_ctx_result(ctx: Ptr): Ptr;
  /** Native callers' full pointers; in wasm the same as the result block's offsets. */
  at_ctx_key_ptr(ctx: Ptr): Ptr;
  at_ctx_value_ptr(ctx: Ptr): Ptr;
  at_tree_new(layoutConfig: number): Ptr;
  at_tree_free(tree: Ptr): void;
  /** Threads (docs/THREADS.md): marks a tree as used by other workers too. */
  at_tree_share(tree: Ptr): number;
  /** 1: calls with ctx may sleep waiting for a tree latch (workers); 0: only spin. */
  at_ctx_set_wait(ctx: Ptr, mayBlock: number): number;
  at_set(tree: Ptr, ctx: Ptr, key: Ptr, keyLen: number, value: Ptr, valueLen: number): number;
  at_get(tree: Ptr, ctx: Ptr, key: Ptr, keyLen: number): number;
  at_has(tree: Ptr, ctx: Ptr, key: Ptr, keyLen: number): number;
  at_remove(tree: Ptr, ctx: Ptr, key: Ptr, keyLen: number): number;
  /** `number` keys as a double, encoded inside wasm (NaN: INVALID_ARGUMENT). */
  at_get_num(tree: Ptr, ctx: Ptr, key: number): number;
  at_has_num(tree: Ptr, ctx: Ptr, key: number): number;
  at_set_num(tree: Ptr, ctx: Ptr, key: number, value: Ptr, valueLen: number): number;
  at_remove_num(tree: Ptr, ctx: Ptr, key: number): number;
  at_count(tree: Ptr): number;
  at_clear(tree: Ptr): number;
  at_set_many(tree: Ptr, ctx: Ptr, batch: Ptr, count: number): number;
  at_get_many(tree: Ptr, ctx: Ptr, keys: Ptr, count: number): number;
  at_delete_range(tree: Ptr, ctx: Ptr, lo: Ptr, loLen: number, hi: Ptr, hiLen: number, flags: number): number;
  at_stats(tree: Ptr, ctx: Ptr): number;
  at_check(tree: Ptr, ctx: Ptr): number;
  at_cursor_new(tree: Ptr): Ptr;
  at_cursor_free(cursor: Ptr): void;
  at_cursor_seek(cursor: Ptr, key: Ptr, keyLen: number, flags: number): number;
  at_cursor_next(cursor: Ptr, ctx: Ptr, wantValue: number): number;
  at_cursor_next_batch(cursor: Ptr, ctx: Ptr, maxRecords: number, maxBytes: number, flags: number): number;
  /** at_cursor_seek then, on OK, at_cursor_next_batch: a short scan in one call. */
  at_cursor_seek_batch(cursor: Ptr, ctx: Ptr, key: Ptr, keyLen: number, seekFlags: number, maxRecords: number, maxBytes: number, flags: number): number;
  /** at_cursor_seek_batch that ends the batch before a record past `stop`, the range's far end
   * (stopFlags: StopFlags), copying nothing of it. */
  at_cursor_seek_batch_to(cursor: Ptr, ctx: Ptr, key: Ptr, keyLen: number, seekFlags: number, maxRecords: number, maxBytes: number, flags: number, stop: Ptr, stopLen: number, stopFlags: number): number;
  at_atomic_add_u32(p: Ptr, v: number): number;
  // Persistent stores (optional: a module built before them lacks these).
  at_store_open?(io: number, layoutConfig: number, poolBytes: number, flags: number, ctx: Ptr): Ptr;
  at_store_open_async?(superblock: Ptr, layoutConfig: number, poolBytes: number, ctx: Ptr): Ptr;
  at_store_commit?(tree: Ptr): number;
  at_store_checkpoint?(tree: Ptr): number;
  /** A checkpoint a sync commit ran after it was durable that failed since the last call (0: none). */
  at_store_checkpoint_failure?(tree: Ptr): number;
  /** A shared store's owner closing: later writes from any thread are CLOSED. */
  at_store_close_writes?(tree: Ptr): number;
  /** 1: a commit now would make something durable (any thread's writes); 0: nothing; < 0 a status. */
  at_store_pending?(tree: Ptr): number;
  at_store_stats?(tree: Ptr, ctx: Ptr): number;
  at_store_supply?(tree: Ptr, pageId: number, image: Ptr): number;
  at_store_drop_kept?(tree: Ptr): number;
  at_store_commit_begin?(tree: Ptr, ctx: Ptr): number;
  at_store_commit_end?(tree: Ptr, hostStatus: number): number;
  at_store_follow?(tree: Ptr, superblock: Ptr): number;
  at_store_follow_changed?(tree: Ptr, superblock: Ptr, changed: Ptr, count: number): number;
  at_store_set_checkpoint_bytes?(tree: Ptr, bytes: number): number;
  /** 1 (default): a commit's checkpoint writes the next log over the old one in place; 0: cuts it first. */
  at_store_set_log_reuse?(tree: Ptr, on: number): number;
  at_store_set_log_deltas?(tree: Ptr, on: number): number;
  /** The key and value encodings the store recorded: key | value << 8 (0: none); ts/src/store-encodings.ts. */
  at_store_encodings?(tree: Ptr): number;
  at_store_set_encodings?(tree: Ptr, key: number, value: number): number;
  /** Node fill (core/tree/rebalance.h): 1 redistribution before splits, 2 XMerge under pool pressure. */
  at_tree_set_fill?(tree: Ptr, flags: number): number;
  /** Address of the tree's removal counter (u32), 0 for none (bindings/adaptree.h). */
  at_tree_erase_epoch?(tree: Ptr): number;
  /** XMerge over the whole tree; pages freed in result.aux. */
  at_tree_compact?(tree: Ptr, ctx: Ptr): number;
  at_checksum(data: Ptr, len: number): number;
  at_page_hash(data: Ptr, len: number): number;
  // Memory budget (bindings/wasm_runtime.cc): 0 or INVALID_ARGUMENT; bytes; bytes.
  at_set_memory_limit(bytes: number): number;
  at_memory_limit(): number;
  at_memory_available(): number;
  /** Test-only: traps. */
  at_debug_trap(): void;
  /** Test-only: 1 takes a tree's latch exclusive and keeps it, 0 releases it. */
  at_debug_latch(tree: Ptr, hold: number): number;
  at_tree_abandon(tree: Ptr): number;
  /** Address of the poison word (a u32 set when a call trapped; shared by mt instances). */
  at_poison_word(): Ptr;
  // Inspection (bindings/inspect.cc): pages read as copies; JSON into a caller buffer.
  at_inspect_root(tree: Ptr): number;
  at_inspect_height(tree: Ptr): number;
  at_inspect_page(tree: Ptr, pageId: number, out: Ptr): number;
  at_inspect_node(tree: Ptr, pageId: number, out: Ptr, cap: number): number;
  at_inspect_tree(tree: Ptr, out: Ptr, cap: number): number;
}

/** Names of all ABI functions, to verify a module at load time. */
export const ABI_FUNCTIONS: readonly (keyof AbiExports)[] = [
  'at_abi_version', 'at_page_size', 'at_max_key_size', 'at_max_key_size_untruncated', 'at_alloc', 'at_free', 'at_ctx_new',
  'at_ctx_free', 'at_ctx_result', 'at_ctx_key_ptr', 'at_ctx_value_ptr', 'at_tree_new', 'at_tree_free', 'at_tree_share', 'at_ctx_set_wait', 'at_set', 'at_get', 'at_has',
  'at_remove', 'at_get_num', 'at_has_num', 'at_set_num', 'at_remove_num', 'at_count', 'at_clear', 'at_set_many', 'at_get_many', 'at_delete_range', 'at_stats',
  'at_check', 'at_cursor_new', 'at_cursor_free', 'at_cursor_seek', 'at_cursor_next',
  'at_cursor_next_batch', 'at_cursor_seek_batch', 'at_cursor_seek_batch_to', 'at_atomic_add_u32', 'at_checksum', 'at_page_hash',
  'at_set_memory_limit', 'at_memory_limit', 'at_memory_available', 'at_debug_trap', 'at_debug_latch', 'at_tree_abandon', 'at_poison_word',
  'at_inspect_root', 'at_inspect_height', 'at_inspect_page', 'at_inspect_node', 'at_inspect_tree',
];

/** The persistent-store functions of sync backends (checked when a store is opened). */
export const STORE_FUNCTIONS: readonly (keyof AbiExports)[] = ['at_store_open', 'at_store_commit', 'at_store_checkpoint', 'at_store_stats'];
/** The page-fault protocol of async backends (bindings/adaptree.h, core/buffer/async_pager.h;
 * checked when a store on an async backend is opened). */
export const ASYNC_STORE_FUNCTIONS: readonly (keyof AbiExports)[] = [
  'at_store_open_async', 'at_store_supply', 'at_store_commit_begin', 'at_store_commit_end',
];

export const ABI_VERSION = 1;
