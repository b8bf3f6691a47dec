// node:http without its ES-module facade. `import … from "node:http"` builds a namespace of every export, and reading
// the lazy `http.WebSocket`/`MessageEvent`/`CloseEvent` exports loads Node's bundled undici (about 0.75 MB of source
// compiled at start-up, several MB of memory held for good). The module object itself leaves them unread.
import type * as Http from "node:http";

export const nodeHttp = process.getBuiltinModule("node:http") as typeof Http;
