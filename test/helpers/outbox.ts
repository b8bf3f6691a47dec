// A store and its outbox opened together for tests that drive the delivery ledger directly.
import { Store, type StoreOptions } from "../../src/agent/store/store.js";
import { Outbox } from "../../src/agent/delivery/outbox.js";

/** The outbox, the store under it (`opened`) and `close` (closes the store). */
export type OpenOutbox = Outbox & { readonly opened: Store; close(): void };

export function openOutbox(options: StoreOptions & { maxOutboxBytes?: number }): OpenOutbox {
  const { maxOutboxBytes, ...storeOptions } = options;
  const store = Store.open(storeOptions);
  const outbox = Outbox.open(store, { maxOutboxBytes: maxOutboxBytes ?? Number.MAX_SAFE_INTEGER });
  return Object.assign(outbox, { opened: store, close: () => store.close() });
}

/** The outbox of a store opened read-only. */
export function openOutboxReadOnly(dataDir: string): OpenOutbox {
  const store = Store.openReadOnly(dataDir);
  return Object.assign(Outbox.open(store), { opened: store, close: () => store.close() });
}
