// oidc-provider ships no type declarations; the tests use a small part of it (test/helpers/oidc-provider.ts).
declare module 'oidc-provider' {
  const Provider: any;
  export default Provider;
}
