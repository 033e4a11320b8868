/* The C ABI that the wasm module exports (and that the native build links).
 * This file is the only contract between the core and JavaScript: the
 * TypeScript layer (ts/src/abi.ts) mirrors it by hand.
 *
 * Conventions
 * - Pointers are offsets into wasm linear memory (32-bit in wasm).
 * - int32_t results are adaptree::Status values (core/status.h):
 *   0 OK, 1 NOT_FOUND, 2 RESTART, 3 NEED_PAGE, negative = error (... -10 READ_ONLY,
 *   -11 BUSY: a write while an async commit is being written).
 * - A context (at_ctx) belongs to one JS instance/thread. Every call that
 *   returns bytes fills the context's result block; the bytes stay valid only
 *   until the next call on the same tree or context: an inline value points
 *   into its page, and in adaptive mode even a read may rewrite a leaf (its
 *   operation counter converts the layout). Copy before the next call.
 * - Result block layout (at_ctx_result, little-endian u32 each):
 *     +0 key ptr, +4 key len, +8 value ptr, +12 value len, +16 aux (u32)
 * - Batch encoding (set_many input, cursor batch output):
 *     repeated [u32 key_len][key bytes][u32 value_len][value bytes]
 *   get_many input: repeated [u32 key_len][key bytes];
 *   get_many output: repeated [u32 value_len or 0xFFFFFFFF if absent][value bytes].
 */
#ifndef ADAPTREE_BINDINGS_H
#define ADAPTREE_BINDINGS_H
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AT_ABI_VERSION 1u

typedef struct at_tree at_tree;
typedef struct at_ctx at_ctx;
typedef struct at_cursor at_cursor;

/* Seek flags for at_cursor_seek. */
#define AT_SEEK_REVERSE 1u   /* iterate descending */
#define AT_SEEK_EXCLUSIVE 2u /* skip a key equal to the seek key */
#define AT_SEEK_EDGE 4u      /* ignore the key: start at the first (or last, reverse) record */

/* Bound flags for at_delete_range. */
#define AT_RANGE_LO_NONE 1u
#define AT_RANGE_LO_EXCLUSIVE 2u
#define AT_RANGE_HI_NONE 4u
#define AT_RANGE_HI_EXCLUSIVE 8u

uint32_t at_abi_version(void);
uint32_t at_page_size(void);
uint32_t at_max_key_size(void);
/* The longest key a tree without prefix truncation (layout 0, baseline) takes: its inner nodes
 * must hold two whole fences and two separators. set of a longer key there is KEY_TOO_LARGE. */
uint32_t at_max_key_size_untruncated(void);

/* Memory owned by JS (scratch areas, batches). 16-byte aligned, 0 when out of memory. */
void* at_alloc(uint32_t size);
void at_free(void* p);

/* A per-thread context: result block and a growable output buffer. */
at_ctx* at_ctx_new(void);
void at_ctx_free(at_ctx* ctx);
uint32_t* at_ctx_result(at_ctx* ctx); /* address of the 20-byte result block */
/* The result block holds 32-bit offsets; native callers read the full pointers here. */
const uint8_t* at_ctx_key_ptr(at_ctx* ctx);
const uint8_t* at_ctx_value_ptr(at_ctx* ctx);
/* How calls with this context wait for a tree's latch held by another thread
 * (docs/THREADS.md): may_block 1 = spin briefly, then sleep (memory.atomic.wait32:
 * workers, Node's main thread); 0 (the default) = only spin (the browser's main
 * thread, where waiting traps). Calls without a context (at_count, at_clear,
 * at_cursor_seek, cursors' creation) only spin. */
int32_t at_ctx_set_wait(at_ctx* ctx, uint32_t may_block);

/* Trees. layout_config is adaptree::LayoutConfig (0 baseline ... 7 adaptive). */
at_tree* at_tree_new(uint32_t layout_config); /* 0 on bad config / OOM */
/* Threads (mt build; docs/THREADS.md). Every call on a tree holds the tree's latch:
 * shared by reads of an in-memory tree, exclusive by writes (and by every call on a
 * store). at_tree_share marks an in-memory tree as used from other threads too: from
 * then on values are copied into the context's buffer before the call returns, and
 * at_tree_free (by one thread, when it is done: the creator) frees the tree but leaves a
 * small closed record behind, so that any later call with the handle returns CLOSED
 * instead of reading freed memory. INVALID_ARGUMENT for a store (phase 1: a store's
 * page I/O belongs to the thread that opened it), CLOSED after at_tree_free. A cursor
 * must be used by one thread at a time. */
int32_t at_tree_share(at_tree* t);
void at_tree_free(at_tree* t);

int32_t at_set(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len, const uint8_t* value,
               uint32_t value_len);
int32_t at_get(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len); /* value -> result */
int32_t at_has(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len);
int32_t at_remove(at_tree* t, at_ctx* c, const uint8_t* key, uint32_t key_len);
/* The same four for `number` keys passed as a double: the key is encoded here, in the encoding
 * of ts/src/encoding/number.ts (-0 as +0), and never crosses through memory. NaN is
 * INVALID_ARGUMENT; c is required. at_get_num's result.key points into the context. */
int32_t at_get_num(at_tree* t, at_ctx* c, double key);
int32_t at_has_num(at_tree* t, at_ctx* c, double key);
int32_t at_set_num(at_tree* t, at_ctx* c, double key, const uint8_t* value, uint32_t value_len);
int32_t at_remove_num(at_tree* t, at_ctx* c, double key);
double at_count(at_tree* t); /* entries; CLOSED (-6) once a shared tree was freed (at_tree_share) */
int32_t at_clear(at_tree* t);
/* Applies count records in order; stops at the first error. result.aux = records applied;
 * result.value_len = records applied as well, also on NEED_PAGE (where aux is the page id),
 * so that the caller resumes after them instead of re-applying the batch. */
int32_t at_set_many(at_tree* t, at_ctx* c, const uint8_t* batch, uint32_t count);
/* Output (see above) in the context's buffer: result.value/value_len. On NEED_PAGE (aux =
 * the page id) result.key_len keys were answered and value/value_len hold their output. On OK
 * result.key_len is 0 when every key was answered, else the keys answered (the output passed
 * 1 MiB there: call again for the rest, so that memory holds about that much at a time). */
int32_t at_get_many(at_tree* t, at_ctx* c, const uint8_t* keys, uint32_t count);
/* Removes every key within the bounds; returns the number removed (>= 0) or a negative status.
 * On a store on an async host, AT_RANGE_NEED_PAGE with the page id in result.aux: keys
 * removed before the fault stay removed (at_count tells how many); supply the page and
 * call again for the rest. */
#define AT_RANGE_NEED_PAGE (-1003)
double at_delete_range(at_tree* t, at_ctx* c, const uint8_t* lo, uint32_t lo_len, const uint8_t* hi,
                       uint32_t hi_len, uint32_t flags);
/* Writes a JSON object (layout counts, height, bytes, fill, ...) -> result.value. */
int32_t at_stats(at_tree* t, at_ctx* c);
/* Node fill (core/tree/rebalance.h). flags: 1 redistribute before splits (2-to-3 splits),
 * 2 XMerge after the store's pool evicted, 4 no edge refills and edge splits (appends past
 * the last leaf, prepends before the first: on by default, maps too). A new store has 3;
 * a map 0 (edges only). */
int32_t at_tree_set_fill(at_tree* t, uint32_t flags);
/* Address of the tree's removal counter (a u32 bumped atomically by every remove and clear,
 * under either latch), or 0 if t is null: iterators of a map shared between threads read it
 * to drop a batch read before another thread removed entries. */
uint32_t at_tree_erase_epoch(at_tree* t);
/* XMerge over the whole tree (an async store: over its resident pages). OK with the
 * number of pages freed in result.count (word 4), or an error / BUSY. */
int32_t at_tree_compact(at_tree* t, at_ctx* c);
/* Runs the invariant checker; on failure a message -> result.value and CORRUPT. */
int32_t at_check(at_tree* t, at_ctx* c);

/* Cursors. A cursor survives modifications of its tree: after one, it resumes
 * after (before, reverse) the last key it returned. */
at_cursor* at_cursor_new(at_tree* t);
void at_cursor_free(at_cursor* cur);
/* Positions on the first record >= key (> with EXCLUSIVE), or the last <= key (< ) when REVERSE.
 * OK when positioned on a record, NOT_FOUND at the end. Does not read it. */
int32_t at_cursor_seek(at_cursor* cur, const uint8_t* key, uint32_t key_len, uint32_t flags);
/* Reads the current record into the result (value only if want_value) and advances. OK or NOT_FOUND. */
int32_t at_cursor_next(at_cursor* cur, at_ctx* c, uint32_t want_value);
/* Reads up to max_records (and stops after max_bytes of output) into the context's buffer in
 * batch encoding (value_len 0 and no bytes without AT_BATCH_VALUES); result.value/value_len = the
 * buffer, result.aux = records written. OK if records written > 0, NOT_FOUND at the end.
 * want_value is a set of flags: AT_BATCH_VALUES (1) reads the values too; AT_BATCH_COLUMNS (2)
 * gives the batch in columns instead: [u32 n][u32 key bytes][u32 flags][u32 0][u32 key_len x n]
 * [u32 value_len x n][all keys][all values]; a key_len with bit 31 set marks a key holding a byte
 * >= 0x80, flags bit 0 says some key does (JavaScript decodes ASCII keys of a batch at once).
 * result.key_len is 1 when the batch is in columns; a batch over 512 KiB (large values) or one
 * whose copy finds no memory stays in batch encoding (result.key_len 0). */
#define AT_BATCH_VALUES 1u
#define AT_BATCH_COLUMNS 2u
/* With AT_BATCH_COLUMNS, for maps of `number` keys (ts/src/encoding/number.ts): the keys come as
 * their doubles, [u32 n][u32 keys offset][u32 values offset][u32 0][u32 value_len x n], the n
 * doubles (f64) at the keys offset and the values back to back at the values offset (offsets from
 * result.value; little-endian, unaligned); result.key_len is 2. A key that is not such an encoding
 * comes as NaN. Such a batch ends after max_bytes of 12 bytes a record plus the values, and after
 * 4096 records at most.
 * An asynchronous store whose page for the next record (its leaf, or its value's overflow
 * page) is not in the pool ends the batch before that record once it holds one: OK, with
 * AT_BATCH_MORE (4) added to result.key_len (more records may follow; the cursor then stands
 * past the ones written: seek again after the last key written). With none written, NEED_PAGE
 * as any call. (A NEED_PAGE for the whole batch made each retry need every page of the batch
 * at once; a batch of large values needed more than a small pool holds, and the iteration
 * never ended.) */
#define AT_BATCH_NUMBERS 4u
#define AT_BATCH_MORE 4u
int32_t at_cursor_next_batch(at_cursor* cur, at_ctx* c, uint32_t max_records, uint32_t max_bytes,
                             uint32_t want_value);
/* at_cursor_seek(cur, key, key_len, seek_flags), then on OK at_cursor_next_batch(cur, c, max_records,
 * max_bytes, want_value), in one call: a short scan crosses into wasm once. Returns the seek's status
 * when it is not OK (NOT_FOUND: nothing at or after the key; result.aux 0), else the batch's. */
int32_t at_cursor_seek_batch(at_cursor* cur, at_ctx* c, const uint8_t* key, uint32_t key_len, uint32_t seek_flags,
                             uint32_t max_records, uint32_t max_bytes, uint32_t want_value);
/* at_cursor_seek_batch with the range's far end: a record past `stop` (after it iterating
 * forward, before it in reverse; AT_STOP_INCLUSIVE: a key equal to it is within) ends the batch
 * before anything of it is copied (NOT_FOUND if it is the first). Without it a bounded range's
 * batch went on past the end and copied what lay there, a value of megabytes for a range of one
 * small entry (a new-user probe, session 29: 3894 page reads, or OUT_OF_MEMORY under a budget). */
#define AT_STOP_INCLUSIVE 1u
int32_t at_cursor_seek_batch_to(at_cursor* cur, at_ctx* c, const uint8_t* key, uint32_t key_len, uint32_t seek_flags,
                                uint32_t max_records, uint32_t max_bytes, uint32_t want_value, const uint8_t* stop,
                                uint32_t stop_len, uint32_t stop_flags);

/* ---------------------------------------------------------------- persistent stores
 * A store is a tree whose 4 KiB pages live in a buffer pool (core/buffer/) over
 * storage. Every tree call above (at_get, at_set, cursors, stats, ...) works on a
 * store's tree too; at_tree_free closes a store WITHOUT committing.
 *
 * Sync file backends (Node and Deno files, OPFS sync handles): the core calls the
 * host's file I/O through the imports below, inside the wasm call. The host picks
 * an integer `io` per open store and routes the calls to that store's two files:
 * file 0 = data file, file 1 = log. Offsets are doubles (exact up to 2^53).
 * The imports return a Status (0 OK, negative error: IO_ERROR, QUOTA_EXCEEDED).
 *
 * Async backends (IndexedDB, Durable Objects): see at_store_open_async below. */
#define AT_FILE_DATA 0u
#define AT_FILE_LOG 1u
#define AT_OPEN_CREATE 1u /* a new store when there is none; else NOT_FOUND */
#define AT_OPEN_READ_ONLY 2u /* a reader: writes nothing (recovery included), refuses writes and
                                commits (READ_ONLY); a store that was never committed is NOT_FOUND */
#define AT_OPEN_NO_LOG_DELTAS 4u /* commits log whole pages (log format 1), not deltas */
#define AT_OPEN_SALVAGE 8u /* with AT_OPEN_READ_ONLY (else INVALID_ARGUMENT): a log damaged part way
                              (intact commits after the damage, CORRUPT otherwise) ends at the
                              damage: the store opens as of the last commit before it */

#ifdef ADAPTREE_HOST_IMPORTS
#define AT_IMPORT(name) __attribute__((import_module("env"), import_name(#name)))
#else
#define AT_IMPORT(name)
#endif
/* Host file I/O (wasm imports; natively, core/buffer/posix_files.cc provides them). */
AT_IMPORT(at_host_read) int32_t at_host_read(uint32_t io, uint32_t file, double offset, uint8_t* dst,
                                             uint32_t len); /* bytes read (fewer only at end of file) or < 0 */
AT_IMPORT(at_host_write) int32_t at_host_write(uint32_t io, uint32_t file, double offset, const uint8_t* src,
                                               uint32_t len); /* 0, or < 0 (QUOTA_EXCEEDED on a full disk) */
AT_IMPORT(at_host_sync) int32_t at_host_sync(uint32_t io, uint32_t file);
AT_IMPORT(at_host_size) double at_host_size(uint32_t io, uint32_t file); /* bytes, or < 0 */
AT_IMPORT(at_host_truncate) int32_t at_host_truncate(uint32_t io, uint32_t file, double size);

/* Opens (and recovers) the store on the host files `io`. layout_config applies to a
 * new store; an existing one keeps its own. pool_bytes: buffer pool size (at least
 * 1 MiB; smaller is raised). Returns the tree, or 0 with the status in result.aux
 * (CORRUPT: foreign or damaged file; NOT_FOUND: no store and no AT_OPEN_CREATE). With CORRUPT,
 * result.key_len is 1 where the log is damaged part way, with intact commits after the damage
 * (what AT_OPEN_SALVAGE opens), else 0. */
at_tree* at_store_open(uint32_t io, uint32_t layout_config, double pool_bytes, uint32_t flags, at_ctx* c);
/* Sync backends: makes every write so far durable with one log flush (and
 * checkpoints the log into the data file when it has grown). On error nothing
 * new is durable, the last commit is intact, and the store refuses writes
 * until reopened (the status says why). */
int32_t at_store_commit(at_tree* t);
/* Sync stores: the status of a checkpoint that a commit ran after it was durable and that
 * failed, since the last call (0: none); the call clears it. The commit returned OK: its
 * writes are durable, the log stays the store's newest state, the next commit tries again. */
int32_t at_store_checkpoint_failure(at_tree* t);
/* A shared store's owner, closing it: every later write, from any thread, is CLOSED (under the
 * exclusive latch: writes under way finish first), so that the owner's last commit holds every
 * write that was accepted. */
int32_t at_store_close_writes(at_tree* t);
/* 1 when a commit now would make something durable (dirty pages, a changed free list), 2 when
 * pages were also spilled to the log since the last commit (a sync store's checkpoint waits
 * for that commit), 0 when nothing, or a negative status. A store shared with workers asks
 * this: each thread's JavaScript counts only its own writes. */
int32_t at_store_pending(at_tree* t);
/* Async backends (IndexedDB, Durable Objects' async API, a network): the core never
 * calls the host. The host keeps 4096-byte page images by page id; page 0 is the
 * superblock (docs/FORMAT.md: the same pages as a data file).
 * - at_store_open_async: superblock = the stored page 0 (4096 bytes), or 0 for a new
 *   store (nothing is stored before its first commit). Returns the tree, or 0 with the
 *   status in result.aux (CORRUPT: neither superblock slot is valid).
 * - Page faults: any tree call (at_get, at_set, cursors, at_get_many, at_stats, ...)
 *   that needs a page that is not in the pool returns NEED_PAGE (3) with the page id in
 *   result.aux of its context (cursor seeks: of the last context used with the tree),
 *   having changed nothing (at_delete_range: see there). The host fetches the page,
 *   hands it in with at_store_supply and calls again.
 * - at_store_supply: installs the image of page_id (4096 bytes, copied). OK also when the
 *   page is resident already (then the resident one is newer and is kept); CORRUPT when
 *   its trailer (page id, CRC-32C) does not match, and then nothing is installed;
 *   INVALID_ARGUMENT for an id that is not a page of the store. Any page may be
 *   supplied (read-ahead); clean pages are evicted as the pool needs frames.
 * - No-steal: a changed page stays in the pool until a commit has stored it (there is
 *   no log to put it in). When every frame is changed, the pool grows past pool_bytes
 *   (OUT_OF_MEMORY only when memory cannot grow); the commit that stores them gives the
 *   extra frames back. One operation over many pages (a large value, at_check,
 *   at_stats) keeps all it read for its length: it grows the pool too, until a commit.
 * - at_store_commit_begin: the images of every page changed since the last commit, as
 *   result.aux (count) times [u32 page id][4096-byte image] at result.value (page 0, the
 *   superblock, first; then changed pages and the free-page list chain). Valid until the
 *   next call with c. The host must write all of them or none.
 *   With at_store_set_log_deltas on, the images are followed by one entry per image, in
 *   their order: [u32 size] and, unless size is 0xFFFFFFFF (no delta: page 0, new pages,
 *   pages past the copies' limit), [8 bytes: the trailer (page id, checksum) of the image
 *   the delta applies to][size bytes: runs of (u16 offset, u16 length, bytes), each run
 *   starting and ending on a 4-byte boundary, at most 2048 bytes in all; copy runs too with
 *   at_store_set_log_deltas 2] that turn the
 *   page's previous committed image into this one. result.value_len covers the entries; it
 *   is the images' length alone when memory for them was short (no entries at all).
 *   Between begin and end, writes (at_set, at_remove, at_clear, at_set_many,
 *   at_delete_range) return BUSY (-11) and change nothing; reads work.
 * - at_store_commit_end: host_status 0 = every image is durable: the commit is current.
 *   Else (a negative status: IO_ERROR, QUOTA_EXCEEDED, ...) none is: the store stays at
 *   the previous commit, keeps this one's changes in the pool for reading and refuses
 *   writes (READ_ONLY) until reopened; returns host_status. A crash between begin and
 *   end leaves what the host's write left: the previous commit, or this one. */
at_tree* at_store_open_async(const uint8_t* superblock, uint32_t layout_config, double pool_bytes, at_ctx* c);
int32_t at_store_supply(at_tree* t, uint32_t page_id, const uint8_t* image);
/* Forgets the large-value reads (and write walks) kept across page faults, and their memory:
 * a kept read holds its value's whole length from its first fault. The host calls it when
 * no operation that would go on with them is under way (a sync call that faulted and is not
 * retried, a fetch that failed). OK. */
int32_t at_store_drop_kept(at_tree* t);
int32_t at_store_commit_begin(at_tree* t, at_ctx* c);
int32_t at_store_commit_end(at_tree* t, int32_t host_status);
/* Async readers: drops every page in the pool and adopts the commit whose page 0
 * (4096 bytes) is given (the host saw a newer commit than the one the pool holds pages
 * of). From then on the store refuses writes and commits (READ_ONLY) and drops pages a
 * read changed instead of keeping them; cursors re-seek after their last key. Called
 * right after at_store_open_async, it opens a reader. CORRUPT: not a valid page 0. */
int32_t at_store_follow(at_tree* t, const uint8_t* superblock);
/* Async readers, once at_store_follow made the store one: as at_store_follow, but the pages
 * in the pool that the commits since the one it holds did not write stay (they hold the same
 * bytes in the newer commit). `changed`: `count` page ids (u32), every page those commits
 * wrote (the host's log of them; repeats allowed); pages past the newer commit's end go too.
 * A host that cannot say which pages changed calls at_store_follow. INVALID_ARGUMENT: not a
 * reader yet; CORRUPT: not a valid page 0. */
int32_t at_store_follow_changed(at_tree* t, const uint8_t* superblock, const uint32_t* changed, uint32_t count);
/* Sync backends: a commit checkpoints the log into the data file once the log is larger
 * than `bytes` (default 64 MiB; at least 64 KiB, smaller is raised). INVALID_ARGUMENT on an
 * async store. A smaller log costs more checkpoints (each rewrites the logged pages home and
 * flushes twice) and saves replay at open and space. */
int32_t at_store_set_checkpoint_bytes(at_tree* t, double bytes);
/* Sync backends: whether a checkpoint that a commit runs writes the next log generation over
 * the old one in place (on: 1, the default; the log file keeps its size while the store is
 * open, and close() cuts it) or cuts the log to its header first (0: for storage whose
 * truncation gives space back and whose writes reuse no blocks, as a Durable Object's rows).
 * INVALID_ARGUMENT on an async store. */
int32_t at_store_set_log_reuse(at_tree* t, uint32_t on);
/* Async stores: whether at_store_commit_begin adds each changed page's delta against its
 * previous committed image (off by default: 1 for a host that logs deltas, as IndexedDB's
 * frames; the pager then keeps a copy of each page as it was before the commit changed
 * it, up to a quarter of the pool). 2: as 1, and the deltas may hold copy runs (u16 offset,
 * u16 length | 0x8000, u16 source, u16 zero: the bytes the previous image held at
 * [source, source + length); core/buffer/page_delta.h). INVALID_ARGUMENT on a sync store. */
int32_t at_store_set_log_deltas(at_tree* t, uint32_t on);
/* The host's key and value encodings as the store records them (StoreMeta bytes 29, 30;
 * the core does not interpret them): key | value << 8, 0 for each that was never recorded
 * (a new store, or one written before they were); negative: a status. */
int32_t at_store_encodings(at_tree* t);
/* Sets them; the next commit records them (a reader's are never written). */
int32_t at_store_set_encodings(at_tree* t, uint32_t key, uint32_t value);
/* JSON: pool frames, resident, dirty, hits, misses, evictions, reads, writes,
 * syncs, commit sequence, data and log bytes -> result.value. */
int32_t at_store_stats(at_tree* t, at_ctx* c);
/* Copies every committed page from the log to the data file and starts a new
 * log (also done by commits once the log has grown; call before closing). */
int32_t at_store_checkpoint(at_tree* t);

/* Diagnostics (bindings/diagnostics.cc): a sequentially consistent atomic add
 * on a u32 in linear memory, returning the previous value. The smoke tests use
 * it to prove that instances on one shared memory see each other's atomics. */
uint32_t at_atomic_add_u32(uint32_t* p, uint32_t v);

/* Memory budget (wasm; natively the limit is recorded and not enforced).
 * at_set_memory_limit caps the growth of linear memory at `bytes` (rounded down to
 * 64 KiB pages; 0 or >= the 2 GiB ceiling: the ceiling). Memory already grown is
 * kept. Past the limit allocations fail and calls return OUT_OF_MEMORY. One limit
 * per memory (mt instances on one memory share it). 0 or INVALID_ARGUMENT. */
int32_t at_set_memory_limit(double bytes);
double at_memory_limit(void);
/* Bytes the heap could still hand out: free heap blocks plus the room below the limit. */
double at_memory_available(void);
/* Test-only: hold = 1 takes t's latch exclusive (spinning) and returns with it held;
 * hold = 0 releases it. Lets a test keep a tree busy in one worker while another
 * thread's call waits (the browser's main thread must spin, never sleep). 2 and 3 take
 * and release it shared. Contention Split (docs/THREADS.md, off by default): 4 turns it
 * on for t, 5 off, 6 returns how many contention splits t made. 7 takes the latch of the
 * first leaf of a shared in-memory tree exclusive and keeps it (a dead holder, for tests of
 * at_tree_abandon). 8 returns how often leaf-latch waiters of this memory slept (wasm
 * workers; core/buffer/frame.h). */
int32_t at_debug_latch(at_tree* t, uint32_t hold);
/* A thread died while it may have held t's latch (a worker terminated mid-call): marks the
 * latch abandoned and wakes its waiters. From then on every call on t answers CLOSED
 * without touching the tree (which may be half-modified), and at_tree_free leaves it
 * allocated. The JavaScript runtime also marks the memory unusable (at_poison_word). A
 * thread spinning on a leaf's latch (which the dead thread may hold) stops within 1024
 * spins: in wasm it traps, natively it goes on. */
int32_t at_tree_abandon(at_tree* t);
/* Test-only: traps (wasm `unreachable`), as a bug would. */
void at_debug_trap(void);
/* A u32 in linear memory that the JavaScript runtime sets to 1 when a call trapped, so
 * that every instance on the same (shared) memory refuses further calls. */
uint32_t* at_poison_word(void);

/* Stable hashes defined by this project (core/util/hash.h); same result natively and in wasm:
 * CRC-32C, and the page checksum of format version 2 (page_hash). */
uint32_t at_checksum(const uint8_t* data, uint32_t len);
uint32_t at_page_hash(const uint8_t* data, uint32_t len);

#ifdef __cplusplus
}
#endif

/* ================================================================ inspection
 * (bindings/inspect.cc; the demo page and diagnostics). Pages are read only as
 * copies (BTree::copy_page), never through a frame. at_inspect_node and
 * at_inspect_tree write JSON into the caller's buffer `out` of `cap` bytes and
 * return the bytes the JSON needs: when that is more than cap, nothing useful
 * was written; call again with a buffer that large. Negative = a Status. */
#ifdef __cplusplus
extern "C" {
#endif
uint32_t at_inspect_root(at_tree* t);   /* root page id (0 for a null handle) */
uint32_t at_inspect_height(at_tree* t); /* levels, 1 = the root is a leaf */
/* Copies the page's at_page_size() bytes to out. */
int32_t at_inspect_page(at_tree* t, uint32_t page_id, uint8_t* out);
/* The node decoded by its layout: header, fences, slots and keys, heads, hints,
 * fingerprints, dense slots or bitmap (see inspect.cc for the fields). */
int32_t at_inspect_node(at_tree* t, uint32_t page_id, uint8_t* out, uint32_t cap);
/* Every node from the root down, level by level, each as the summary the tree
 * view draws (id, layout, level, count, fill, prefix, fences, counter, children). */
int32_t at_inspect_tree(at_tree* t, uint8_t* out, uint32_t cap);
#ifdef __cplusplus
}
#endif
/* ============================================================ end inspection */
#endif
