// The bytes of a plain-http GET for plain-http-poller.ts, built once per endpoint and ETag: request line, Host (as
// node:http writes it), the given headers and `Connection: keep-alive`. Headers node:http would refuse are not sent.

/** A header name as RFC 9110 allows (a token). */
const tokenPattern = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** A header value node:http accepts: no control characters but tab. */
const valuePattern = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * The GET's bytes, or undefined when a header name or value could not be sent as it is (the caller then uses
 * node:http, which reports it).
 */
export function plainGetBytes(
  hostname: string,
  port: number | undefined,
  path: string,
  headers: Readonly<Record<string, string>>,
): Buffer | undefined {
  if (!/^\/[\x21-\x7e]*$/.test(path)) return undefined;
  const bracketed = hostname.includes(":") ? `[${hostname}]` : hostname;
  const host = port === undefined || port === 80 ? bracketed : `${bracketed}:${port}`;
  const lines = [`GET ${path} HTTP/1.1`];
  for (const [name, value] of Object.entries(headers)) {
    if (!tokenPattern.test(name) || !valuePattern.test(value)) return undefined;
    if (/^(host|connection|content-length|transfer-encoding)$/i.test(name)) return undefined;
    lines.push(`${name}: ${value}`);
  }
  lines.push(`Host: ${host}`, "Connection: keep-alive", "", "");
  return Buffer.from(lines.join("\r\n"), "latin1");
}
