// Secrets never reach the logs: connection strings, tokens and signatures are redacted in messages, objects and errors.
import { describe, expect, it } from "vitest";
import { Writable } from "node:stream";
import { createLogger, redactSecrets } from "../../src/agent/observability/logger.js";

function capture() {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { logger: createLogger({ level: "debug", destination }), text: () => lines.join("") };
}

const connectionString =
  "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0LWtleS12YWx1ZQ==;EntityPath=hub";
const jwt = "eyJhbGciOiJIUzI1NiJ9.eyJhdWQiOiJodHRwczovL21vbml0b3IuYXp1cmUuY29tIn0.c2lnbmF0dXJl";

describe("logger", () => {
  it("redacts secrets in free text", () => {
    const text = redactSecrets(
      `failed with ${connectionString} and Authorization: Bearer ${jwt} at https://x/?sig=abc123&se=1`,
    );
    expect(text).not.toContain("c2VjcmV0LWtleS12YWx1ZQ==");
    expect(text).not.toContain(jwt);
    expect(text).not.toContain("abc123");
    expect(text).toContain("SharedAccessKey=[REDACTED]");
  });

  it("redacts secret fields, messages and error messages in log lines", () => {
    const { logger, text } = capture();
    logger.info(
      { connectionString, settings: { token: jwt }, headers: { authorization: `Bearer ${jwt}` } },
      "starting",
    );
    logger.error({ err: new Error(`cannot connect with ${connectionString}`) }, `retrying with Bearer ${jwt}`);
    const out = text();
    expect(out).not.toContain("c2VjcmV0LWtleS12YWx1ZQ==");
    expect(out).not.toContain(jwt);
    expect(out).toContain("[REDACTED]");
    expect(
      out
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l).msg),
    ).toEqual(["starting", "retrying with Bearer [REDACTED]"]);
  });
});
