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

  it("removes each pattern's secret exactly: case-insensitive, every occurrence, up to its delimiter", () => {
    expect(redactSecrets('sharedaccesskey=AbC+/=;x SharedAccessKey=k2"y SHAREDACCESSKEY=k3 z')).toBe(
      'sharedaccesskey=[REDACTED];x SharedAccessKey=[REDACTED]"y SHAREDACCESSKEY=[REDACTED] z',
    );
    expect(redactSecrets("bearer abc.DEF-_~+/== rest, Bearer\tt2 and BEARER  t3")).toBe(
      "bearer [REDACTED] rest, Bearer\t[REDACTED] and BEARER  [REDACTED]",
    );
    expect(redactSecrets('{"access_token": "tok1","x":1} access_token=tok2&y ACCESS_TOKEN:tok3}')).toBe(
      '{"access_token": "[REDACTED]","x":1} access_token=[REDACTED] ACCESS_TOKEN:[REDACTED]}',
    );
    expect(redactSecrets("access_token \t= tok4")).toBe("access_token \t= [REDACTED]");
    expect(redactSecrets('https://a/?sig=s1&se=1 SIG=s2"x sig=s3 end')).toBe(
      'https://a/?sig=[REDACTED]&se=1 SIG=[REDACTED]"x sig=[REDACTED] end',
    );
    expect(redactSecrets('SharedAccessSignature sr=a&se=1,next sharedaccesssignature  s2"z')).toBe(
      'SharedAccessSignature [REDACTED],next sharedaccesssignature  [REDACTED]"z',
    );
    expect(redactSecrets("nothing secret: Bearer, sig, access_token")).toBe(
      "nothing secret: Bearer, sig, access_token",
    );
  });

  it("blanks every listed path, at the depth it names, and redacts patterns in any string field", () => {
    const { logger, text } = capture();
    const fields = {
      connectionString: "v01",
      a: {
        connectionString: "v02",
        b: { connectionString: "v03" },
        token: "v05",
        accessToken: "v07",
        authorization: "v09",
        headers: { authorization: "v10", Authorization: "v11" },
        secret: "v13",
        hmacSecret: "v15",
        password: "v17",
      },
      token: "v04",
      accessToken: "v06",
      authorization: "v08",
      secret: "v12",
      hmacSecret: "v14",
      password: "v16",
      note: "with SharedAccessKey=v18 inside",
      list: ["Bearer v19"],
    };
    logger.info(fields, "fields");
    const line = JSON.parse(text()) as Record<string, unknown>;
    for (let i = 1; i <= 19; i++) expect(JSON.stringify(line)).not.toContain(`v${String(i).padStart(2, "0")}`);
    expect(line).toMatchObject({ token: "[REDACTED]", note: "with SharedAccessKey=[REDACTED] inside" });
  });

  it("reduces an err field to its type, redacted message and code, and leaves non-Error err fields alone", () => {
    const { logger, text } = capture();
    const err = Object.assign(new TypeError("failed at sig=abc"), { code: "E_X" });
    logger.warn({ err }, "one");
    logger.warn({ err: "just text with sig=abc" }, "two");
    const [one, two] = text()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { err: unknown });
    expect(one!.err).toEqual({ type: "TypeError", message: "failed at sig=[REDACTED]", code: "E_X" });
    expect(two!.err).toBe("just text with sig=[REDACTED]");
  });
});
