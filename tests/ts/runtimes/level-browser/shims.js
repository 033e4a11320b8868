// What tape and abstract-level's suite expect of Node, in a browser (page or worker): a
// `process` with env, nextTick and cwd, a setImmediate (a MessageChannel task: setTimeout
// would be clamped to 4 ms after a few nested calls, and the suite schedules thousands), and
// `__dirname` (read by tape only to shorten the stack of a failed assertion).
// suite.js calls installShims() before it imports tape and the suite (dynamic imports: the
// package says sideEffects: false, so a bare `import './shims.js'` would be dropped).
export function installShims() {
  const g = globalThis;
  g.process ??= {
    browser: true,
    env: {},
    platform: 'browser',
    argv: [],
    cwd: () => '/',
    nextTick: (f, ...args) => queueMicrotask(() => f(...args)),
  };
  if (typeof g.setImmediate !== 'function') {
    const queue = [];
    const channel = new MessageChannel();
    channel.port1.onmessage = () => queue.shift()();
    g.setImmediate = (f, ...args) => {
      queue.push(() => f(...args));
      channel.port2.postMessage(0);
    };
  }
  g.__dirname ??= '/';
}
