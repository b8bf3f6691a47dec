// Offline reading of Bicep with tree-sitter (web-tree-sitter + tree-sitter-bicep): syntax problems, resource types,
// load*Content calls and property values, so tests can check templates without the Bicep CLI. Load once per file.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { Language, Parser, type Node } from "web-tree-sitter";

export const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
export const bicepRoot = join(repoRoot, "bicep");

export interface BicepFile {
  /** Absolute path. */
  readonly path: string;
  /** Path relative to the repository root, for messages. */
  readonly name: string;
  readonly text: string;
  readonly root: Node;
}

export async function loadBicepParser(): Promise<Parser> {
  await Parser.init();
  const require = createRequire(import.meta.url);
  const wasmPath = join(dirname(require.resolve("tree-sitter-bicep/package.json")), "tree-sitter-bicep.wasm");
  const parser = new Parser();
  parser.setLanguage(await Language.load(wasmPath));
  return parser;
}

export function parseBicep(parser: Parser, path: string, text: string = readFileSync(path, "utf8")): BicepFile {
  const tree = parser.parse(text);
  if (tree === null) throw new Error(`tree-sitter returned no tree for ${path}`);
  return { path, name: relative(repoRoot, path), text, root: tree.rootNode };
}

/** Files under `dir` (recursively) whose names end with `suffix`, sorted. */
export function filesUnder(dir: string, suffix: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix))
    .map((e) => join(e.parentPath, e.name))
    .sort();
}

function where(node: Node): string {
  return `${node.startPosition.row + 1}:${node.startPosition.column + 1}`;
}

/** Every ERROR or MISSING node, as `line:column kind text`. */
export function syntaxProblems(file: BicepFile): string[] {
  const problems: string[] = [];
  const visit = (node: Node): void => {
    if (node.isError)
      problems.push(`${file.name}:${where(node)} syntax error near ${JSON.stringify(node.text.slice(0, 60))}`);
    else if (node.isMissing) problems.push(`${file.name}:${where(node)} missing ${node.type}`);
    if (node.hasError || node.isMissing) for (const child of node.children) if (child) visit(child);
  };
  visit(file.root);
  return problems;
}

/** Named children without comments. */
function parts(node: Node): Node[] {
  return node.namedChildren.filter(
    (c): c is Node => c !== null && c.type !== "comment" && c.type !== "diagnostic_comment",
  );
}

function descendants(root: Node, type: string): Node[] {
  return root.descendantsOfType(type).filter((n): n is Node => n !== null);
}

/** The value of a string literal without interpolation, or undefined for anything else. */
export function stringLiteral(node: Node | undefined): string | undefined {
  if (node === undefined || node.type !== "string") return undefined;
  if (parts(node).some((p) => p.type === "interpolation")) return undefined;
  const quoted = node.text;
  const body = quoted.startsWith("'''") ? quoted.slice(3, -3) : quoted.slice(1, -1);
  return body.replace(/\\(['\\nrt$])/g, (_m, c: string) => ({ n: "\n", r: "\r", t: "\t" })[c] ?? c);
}

/** A string with `${...}` interpolations replaced by `sample` (to check substituted text). */
export function stringWithSamples(node: Node, sample: string): string | undefined {
  if (node.type !== "string") return undefined;
  const body = node.text.slice(1, -1);
  return body.replace(/\$\{[^}]*\}/g, sample).replace(/\\(['\\$])/g, "$1");
}

export interface Call {
  readonly node: Node;
  readonly args: Node[];
}

/** Calls of a function by name, e.g. `loadTextContent`. */
export function callsOf(file: BicepFile, name: string): Call[] {
  return descendants(file.root, "call_expression")
    .filter((n) => n.childForFieldName("function")?.text === name)
    .map((node) => {
      const args = node.childForFieldName("arguments");
      return { node, args: args === null ? [] : parts(args) };
    });
}

/** Resolves the first (string literal) argument of a load*Content call relative to the Bicep file. */
export function loadedPath(file: BicepFile, call: Call): string | undefined {
  const literal = stringLiteral(call.args[0]);
  return literal === undefined ? undefined : resolve(dirname(file.path), literal);
}

export interface Property {
  readonly key: string;
  readonly value: Node;
}

/** Every object property named `key` anywhere in the file (key as identifier or quoted string). */
export function propertiesNamed(file: BicepFile, key: string): Property[] {
  return descendants(file.root, "object_property").flatMap((node) => {
    const [keyNode, ...rest] = parts(node);
    const value = rest.at(-1);
    if (keyNode === undefined || value === undefined) return [];
    const name = keyNode.type === "string" ? stringLiteral(keyNode) : keyNode.text;
    return name === key ? [{ key, value }] : [];
  });
}

export interface ResourceDeclaration {
  readonly symbol: string;
  /** `Type@version` as written. */
  readonly typeAndVersion: string;
  readonly existing: boolean;
  readonly node: Node;
}

export function resourceDeclarations(file: BicepFile): ResourceDeclaration[] {
  return descendants(file.root, "resource_declaration").map((node) => {
    const [symbol, type] = parts(node);
    return {
      symbol: symbol?.text ?? "",
      typeAndVersion: stringLiteral(type) ?? "",
      existing: node.children.some((c) => c?.type === "existing"),
      node,
    };
  });
}

/** Module declarations with their source path resolved against the Bicep file. */
export function moduleSources(file: BicepFile): string[] {
  return descendants(file.root, "module_declaration").map((node) => {
    const source = stringLiteral(parts(node)[1]);
    return source === undefined ? "" : resolve(dirname(file.path), source);
  });
}

export interface Declaration {
  readonly name: string;
  readonly hasDefault: boolean;
}

/** Top-level `param` declarations (name, and whether they have a default value). */
export function parameterDeclarations(file: BicepFile): Declaration[] {
  return parts(file.root)
    .filter((n) => n.type === "parameter_declaration")
    .map((n) => {
      const p = parts(n);
      return { name: p[0]?.text ?? "", hasDefault: p.length >= 3 };
    });
}

/** Top-level `output` names. */
export function outputNames(file: BicepFile): string[] {
  return parts(file.root)
    .filter((n) => n.type === "output_declaration")
    .map((n) => parts(n)[0]?.text ?? "");
}

/** Top-level `var` declarations by name → value node. */
export function variables(file: BicepFile): Map<string, Node> {
  const vars = new Map<string, Node>();
  for (const n of parts(file.root).filter((c) => c.type === "variable_declaration")) {
    const [name, value] = parts(n);
    if (name && value) vars.set(name.text, value);
  }
  return vars;
}

/**
 * A .bicepparam file rewritten so the Bicep grammar can parse it: tree-sitter-bicep has no `param NAME = value`
 * form, so each such line becomes `var NAME = value` (same length, positions unchanged). Returns the param names.
 */
export function bicepparamAsBicep(text: string): { text: string; params: string[] } {
  const params: string[] = [];
  const rewritten = text.replace(
    /^param(\s+)([A-Za-z_][A-Za-z0-9_]*)(\s*=)/gm,
    (_m, s1: string, name: string, s2: string) => {
      params.push(name);
      return `var  ${s1}${name}${s2}`;
    },
  );
  return { text: rewritten, params };
}

export interface ParameterDetail {
  readonly name: string;
  /** Text of the default value, or undefined. */
  readonly defaultText: string | undefined;
  /** Decorators as written, e.g. `@minValue(-1)`. */
  readonly decorators: string[];
}

/** Top-level `param` declarations with their default value text and decorators. */
export function parameterDetails(file: BicepFile): ParameterDetail[] {
  return parts(file.root)
    .filter((n) => n.type === "parameter_declaration")
    .map((n) => {
      const p = parts(n);
      const previous = n.previousNamedSibling;
      const decorators = previous?.type === "decorators" ? parts(previous).map((d) => d.text) : [];
      return { name: p[0]?.text ?? "", defaultText: p.length >= 3 ? p[2]?.text : undefined, decorators };
    });
}
