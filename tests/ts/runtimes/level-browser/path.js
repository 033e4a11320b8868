// The one thing tape takes from Node's `path` in a browser: the separator (stack traces).
export const sep = '/';
export default { sep };
