/**
 * Preloaded (`node --import`) into an outside client that has no option for request headers, such as the MCP
 * conformance suite's CLI: every request it makes to REINS_ORIGIN (its fetch and its undici requests alike, through
 * undici's global dispatcher) carries `Authorization: Bearer $REINS_TOKEN`, as a configured client would send.
 * Nothing else of the request changes. It lives here so that `undici` resolves to the clients' own copy.
 */
import { Agent, setGlobalDispatcher } from 'undici';

const origin = process.env.REINS_ORIGIN;
const token = process.env.REINS_TOKEN;
if (origin && token) {
  const authorization = `Bearer ${token}`;
  const withToken = (headers) => {
    if (headers == null) return { authorization };
    if (Array.isArray(headers)) {
      // Flat [name, value, …] or [[name, value], …]: drop any Authorization, then add ours.
      const pairs = Array.isArray(headers[0]) ? headers : headers.reduce((acc, v, i) => (i % 2 ? acc : [...acc, [v, headers[i + 1]]]), []);
      return [...pairs.filter(([k]) => String(k).toLowerCase() !== 'authorization').flat(), 'authorization', authorization];
    }
    // A plain object: what undici's request() is given and what fetch dispatches.
    const out = {};
    for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() !== 'authorization') out[k] = v;
    out.authorization = authorization;
    return out;
  };
  setGlobalDispatcher(
    new Agent().compose((dispatch) => (opts, handler) => {
      const to = typeof opts.origin === 'string' ? opts.origin : opts.origin?.origin;
      return dispatch(to === origin ? { ...opts, headers: withToken(opts.headers) } : opts, handler);
    }),
  );
}
