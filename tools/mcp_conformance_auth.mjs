// Preloaded into the MCP conformance suite (node --import): every HTTP request it makes to
// `li mcp --http` (the port in LI_MCP_PORT) carries `Authorization: Bearer $LI_MCP_TOKEN`, which
// the suite itself cannot send. Both its fetch and its undici requests go through undici's
// global dispatcher, so one interceptor there covers them; nothing else about a request changes
// (a foreign Host stays foreign: the DNS-rebinding scenario still sees li's own refusal).
import { Agent, setGlobalDispatcher } from 'undici';

const token = process.env.LI_MCP_TOKEN;
const port = process.env.LI_MCP_PORT;

function withToken(headers) {
  const value = `Bearer ${token}`;
  if (headers == null) return { authorization: value };
  if (Array.isArray(headers)) return [...headers, 'authorization', value];
  if (typeof headers[Symbol.iterator] === 'function' && typeof headers !== 'string') {
    return [...Array.from(headers).flat(), 'authorization', value];
  }
  return { ...headers, authorization: value };
}

setGlobalDispatcher(new Agent().compose((dispatch) => (opts, handler) => {
  const origin = opts.origin ? new URL(String(opts.origin)) : null;
  if (token && origin && origin.port === String(port)) {
    return dispatch({ ...opts, headers: withToken(opts.headers) }, handler);
  }
  return dispatch(opts, handler);
}));
