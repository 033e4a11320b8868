// Shared by the Durable Object test Workers (durable-object-main.mjs, durable-object-kv-main.mjs):
// the Worker that routes each request to the object named by ?obj= (default 'a'), and their
// large values: a string of n characters with a pattern, so that a page out of place changes
// its sum, and that sum (durable-object-harness.ts computes it for the test).

/** The Worker: every request goes to the object ?obj= of the namespace bound as INDEX. */
export const router = {
  fetch(request, env) {
    const obj = new URL(request.url).searchParams.get('obj') ?? 'a';
    return env.INDEX.get(env.INDEX.idFromName(obj)).fetch(request);
  },
};
export function bigString(n) {
  const unit = 'abcdefghijklmnopqrstuvwxyz0123456789'.repeat(32);
  const out = unit.repeat(Math.floor(n / unit.length));
  return out + unit.slice(0, n - out.length);
}

export function stringSum(v) {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum = (sum * 31 + v.charCodeAt(i) * (i % 97 + 1)) % 1000000007;
  return sum;
}
