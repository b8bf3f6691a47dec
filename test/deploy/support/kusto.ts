// Offline KQL checking with the Kusto language service (@kusto/language-service-next): parse and analyze a query
// against tables built from the record contract, and return its error diagnostics. Load once per test file.
import { createRequire } from "node:module";

export interface KqlError {
  readonly message: string;
  /** Zero-based character offset of the problem in the query text. */
  readonly start: number;
}

export interface KqlChecker {
  /** Errors of `query` when run against a database holding the given tables (`name` → KQL schema such as `(a:string)`). */
  errors(query: string, tables: Readonly<Record<string, string>>): KqlError[];
}

/* The language service is Bridge.NET output: it installs `Bridge`, `System` and `Kusto` as globals and ships no ESM. */
/* eslint-disable @typescript-eslint/no-explicit-any */
export function loadKqlChecker(): KqlChecker {
  const require = createRequire(import.meta.url);
  require("@kusto/language-service-next/bridge.min.js");
  require("@kusto/language-service-next/Kusto.Language.Bridge.min.js");
  const g = globalThis as any;
  const kusto = g.Kusto.Language;
  const system = g.System;
  const globalsBySchema = new Map<string, any>();

  function globalsFor(tables: Readonly<Record<string, string>>): any {
    const key = JSON.stringify(Object.entries(tables).sort());
    let globals = globalsBySchema.get(key);
    if (globals === undefined) {
      const symbols = Object.entries(tables).map(([name, schema]) =>
        kusto.Symbols.TableSymbol.From(schema).WithName(name),
      );
      const database = new kusto.Symbols.DatabaseSymbol.ctor("sef", symbols);
      globals = kusto.GlobalState.Default.WithDatabase(database);
      globalsBySchema.set(key, globals);
    }
    return globals;
  }

  return {
    errors(query, tables) {
      const code = kusto.KustoCode.ParseAndAnalyze(query, globalsFor(tables));
      const diagnostics = code.GetDiagnostics();
      const count: number = system.Array.getCount(diagnostics, kusto.Diagnostic);
      const errors: KqlError[] = [];
      for (let i = 0; i < count; i++) {
        const d = system.Array.getItem(diagnostics, i, kusto.Diagnostic);
        if (d.Severity === "Error") errors.push({ message: String(d.Message), start: Number(d.Start) });
      }
      return errors;
    },
  };
}
/* eslint-enable @typescript-eslint/no-explicit-any */
