// Offline PowerShell syntax check with tree-sitter (web-tree-sitter + tree-sitter-powershell): the places where the
// grammar found an error or a missing token. Microsoft's own parser needs pwsh, which no registry reachable here ships.
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { Language, Parser, type Node } from "web-tree-sitter";

let parser: Promise<Parser> | undefined;

async function loadPowershellParser(): Promise<Parser> {
  await Parser.init();
  const require = createRequire(import.meta.url);
  const wasmPath = join(dirname(require.resolve("tree-sitter-powershell/package.json")), "tree-sitter-powershell.wasm");
  const p = new Parser();
  p.setLanguage(await Language.load(wasmPath));
  return p;
}

/** "line:column: ERROR|MISSING text" for each syntax problem; empty when the script parses. */
export async function powershellSyntaxErrors(text: string): Promise<string[]> {
  parser ??= loadPowershellParser();
  const tree = (await parser).parse(text);
  if (tree === null) return ["tree-sitter returned no tree"];
  const problems: string[] = [];
  const walk = (node: Node): void => {
    if (node.isError || node.isMissing) {
      problems.push(
        `${node.startPosition.row + 1}:${node.startPosition.column + 1}: ${node.isMissing ? "MISSING" : "ERROR"} ${node.text.slice(0, 60)}`,
      );
      return;
    }
    if (!node.hasError) return;
    for (const child of node.children) if (child !== null) walk(child);
  };
  walk(tree.rootNode);
  return problems;
}
