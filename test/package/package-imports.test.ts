// Each workspace package (src/contract, src/retry, src/errors, src/redaction, src/agent, src/fleet, src/testbed)
// imports only its own files, Node built-ins and the packages its package.json declares; it declares as runtime
// dependencies exactly what its code loads at run time (type-only imports may name a devDependency). Read from the
// TypeScript syntax tree of every source file.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { builtinModules } from "node:module";
import { dirname, join, relative, resolve, sep } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const srcRoot = resolve(import.meta.dirname, "../../src");
const packageDirs = ["contract", "retry", "errors", "redaction", "runtime", "agent", "fleet", "testbed"];

interface ImportSite {
  readonly specifier: string;
  /** Erased by the compiler (`import type`, `export type`): no run-time load. */
  readonly typeOnly: boolean;
}

/**
 * Every module a source file names: static imports and re-exports, `import()`, `require()`, `createRequire(…)("x")`,
 * and `import.meta.resolve("x")` (a module found through its package: loaded, or run, at run time).
 */
export function importSites(fileName: string, text: string): ImportSite[] {
  const sites: ImportSite[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const clause = node.importClause;
      const typeOnly =
        clause !== undefined &&
        (clause.isTypeOnly ||
          (clause.name === undefined &&
            clause.namedBindings !== undefined &&
            ts.isNamedImports(clause.namedBindings) &&
            clause.namedBindings.elements.length > 0 &&
            clause.namedBindings.elements.every((e) => e.isTypeOnly)));
      sites.push({ specifier: node.moduleSpecifier.text, typeOnly });
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      sites.push({ specifier: node.moduleSpecifier.text, typeOnly: node.isTypeOnly });
    } else if (ts.isCallExpression(node) && node.arguments.length === 1 && ts.isStringLiteral(node.arguments[0]!)) {
      const callee = node.expression;
      const isImport = callee.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(callee) && callee.text === "require";
      const isCreatedRequire =
        ts.isCallExpression(callee) && ts.isIdentifier(callee.expression) && callee.expression.text === "createRequire";
      const isMetaResolve =
        ts.isPropertyAccessExpression(callee) && ts.isMetaProperty(callee.expression) && callee.name.text === "resolve";
      if (isImport || isRequire || isCreatedRequire || isMetaResolve)
        sites.push({ specifier: node.arguments[0].text, typeOnly: false });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      sites.push({ specifier: node.argument.literal.text, typeOnly: true });
    }
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true));
  return sites;
}

/** `@scope/name/deep/path.js` → `@scope/name`; `name/deep` → `name`. */
function packageNameOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === "dist" || name === "node_modules" ? [] : sourceFiles(path);
    return /\.(ts|mts|mjs|js)$/.test(name) && !name.endsWith(".d.ts") ? [path] : [];
  });
}

const builtins = new Set(builtinModules);

/** The subpaths the workspace package `name` (`@sef/<folder>`) exports. */
function exportsOf(name: string): string[] {
  const manifest = JSON.parse(readFileSync(join(srcRoot, name.slice("@sef/".length), "package.json"), "utf8")) as {
    exports?: Record<string, unknown>;
  };
  return Object.keys(manifest.exports ?? {});
}

describe("workspace packages import only what they own or declare", () => {
  it("finds imports of every form (so the checks below can fail)", () => {
    const sites = importSites(
      "x.ts",
      `import { a } from "./a.js";\nexport * from "../b.js";\nimport "c";\nconst d = await import("d/deep.js");\nimport type {\n  E,\n} from "@e/e";\nconst f = createRequire(import.meta.url)("f");\nimport { type G } from "g";\nlet h: import("h").H;\nconst i = import.meta.resolve("i/package.json");`,
    );
    expect(sites).toEqual([
      { specifier: "./a.js", typeOnly: false },
      { specifier: "../b.js", typeOnly: false },
      { specifier: "c", typeOnly: false },
      { specifier: "d/deep.js", typeOnly: false },
      { specifier: "@e/e", typeOnly: true },
      { specifier: "f", typeOnly: false },
      { specifier: "g", typeOnly: true },
      { specifier: "h", typeOnly: true },
      { specifier: "i/package.json", typeOnly: false },
    ]);
  });

  for (const dir of packageDirs) {
    describe(`src/${dir}`, () => {
      const root = join(srcRoot, dir);
      const manifest = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
        name: string;
        dependencies?: Record<string, string>;
        devDependencies?: Record<string, string>;
      };
      const runtimeDeclared = new Set(Object.keys(manifest.dependencies ?? {}));
      const typesDeclared = new Set([...runtimeDeclared, ...Object.keys(manifest.devDependencies ?? {})]);
      const files = sourceFiles(root);
      const sites = files.flatMap((file) =>
        importSites(file, readFileSync(file, "utf8")).map((site) => ({ ...site, file: relative(srcRoot, file) })),
      );

      it("has source files", () => {
        expect(files.length).toBeGreaterThan(0);
      });

      it("reaches no file outside its own folder by a relative path", () => {
        const outside = sites
          .filter((s) => s.specifier.startsWith("."))
          .filter((s) => !resolve(srcRoot, dirname(s.file), s.specifier).startsWith(root + sep))
          .map((s) => `${s.file} → ${s.specifier}`);
        expect(outside).toEqual([]);
      });

      it("imports only Node built-ins and declared packages (runtime imports: runtime dependencies)", () => {
        const undeclared = sites
          .filter((s) => !s.specifier.startsWith(".") && !s.specifier.startsWith("node:") && !builtins.has(s.specifier))
          .filter((s) => packageNameOf(s.specifier) !== manifest.name)
          .filter((s) => !(s.typeOnly ? typesDeclared : runtimeDeclared).has(packageNameOf(s.specifier)))
          .map((s) => `${s.file} → ${s.specifier}${s.typeOnly ? " (type)" : ""}`);
        expect(undeclared).toEqual([]);
      });

      it("exports its public modules by name (no pattern), each one a file of its own", () => {
        const exported = Object.keys((manifest as { exports?: Record<string, unknown> }).exports ?? {});
        expect(exported.filter((key) => key.includes("*"))).toEqual([]);
        for (const key of exported.filter((k) => k !== "./package.json"))
          expect(existsSync(join(root, key.replace(/\.js$/, ".ts"))), key).toBe(true);
      });

      it("imports another package only through a module that package exports", () => {
        const unexported = sites
          .filter((s) => s.specifier.startsWith("@sef/") && packageNameOf(s.specifier) !== manifest.name)
          .filter(
            (s) => !exportsOf(packageNameOf(s.specifier)).includes(`./${s.specifier.split("/").slice(2).join("/")}`),
          )
          .map((s) => `${s.file} → ${s.specifier}`);
        expect(unexported).toEqual([]);
      });

      it("declares no runtime dependency that its code does not load", () => {
        const loaded = new Set(sites.filter((s) => !s.typeOnly).map((s) => packageNameOf(s.specifier)));
        expect([...runtimeDeclared].filter((name) => !loaded.has(name))).toEqual([]);
      });
    });
  }
});
