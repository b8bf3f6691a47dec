// The prom-client modules imported one by one (prom-client.ts): untyped here, typed there as the index's exports.
declare module "prom-client/lib/*.js" {
  const value: unknown;
  export default value;
}
