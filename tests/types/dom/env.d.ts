// What a bundler's client types declare for `?url` imports.
declare module '*?url' {
  const url: string;
  export default url;
}
