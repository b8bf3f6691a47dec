// Where the templates' KQL comes from: every `query`, `body` (query pack) and `transformKql` property must be a
// .kql file loaded with loadTextContent, optionally with one `let` line swapped by replace(); nothing inline.
import type { Node } from "web-tree-sitter";
import { loadedPath, propertiesNamed, stringLiteral, stringWithSamples, type BicepFile } from "./bicep.js";

export const kqlProperties = ["query", "body", "transformKql"] as const;
export type KqlProperty = (typeof kqlProperties)[number];

export interface KqlSource {
  readonly file: string;
  readonly property: KqlProperty;
  /** Absolute path of the loaded .kql file. */
  readonly path: string;
  /** replace(loadTextContent(path), old, new): `new` with each interpolation replaced by the sample number 7. */
  readonly replacement?: { readonly old: string; readonly new: string };
}

export interface KqlSources {
  readonly queries: KqlSource[];
  readonly problems: string[];
}

/** The .kql file a `loadTextContent('...kql')` call loads, or undefined. */
function loadTextPath(file: BicepFile, node: Node | undefined): string | undefined {
  if (node?.type !== "call_expression" || node.childForFieldName("function")?.text !== "loadTextContent")
    return undefined;
  const args = node.childForFieldName("arguments")?.namedChildren.filter((c): c is Node => c !== null) ?? [];
  const path = loadedPath(file, { node, args });
  return path?.endsWith(".kql") ? path : undefined;
}

function callArgs(node: Node): Node[] {
  return (
    node.childForFieldName("arguments")?.namedChildren.filter((c): c is Node => c !== null && c.type !== "comment") ??
    []
  );
}

export function kqlSources(files: readonly BicepFile[]): KqlSources {
  const queries: KqlSource[] = [];
  const problems: string[] = [];
  for (const file of files) {
    for (const property of kqlProperties) {
      const forwarded: Node[] = [];
      let direct = 0;
      for (const { value } of propertiesNamed(file, property)) {
        const where = `${file.name}:${value.startPosition.row + 1} ${property}`;
        const path = loadTextPath(file, value);
        if (path !== undefined) {
          queries.push({ file: file.name, property, path });
          direct++;
          continue;
        }
        if (value.type === "call_expression" && value.childForFieldName("function")?.text === "replace") {
          const [source, oldNode, newNode] = callArgs(value);
          const replacedPath = loadTextPath(file, source);
          const old = stringLiteral(oldNode);
          const replacementText = newNode === undefined ? undefined : stringWithSamples(newNode, "7");
          if (replacedPath !== undefined && old !== undefined && replacementText !== undefined) {
            queries.push({ file: file.name, property, path: replacedPath, replacement: { old, new: replacementText } });
            direct++;
            continue;
          }
        }
        // `rule.query` inside a loop over a variable whose entries load the files (checked through those entries).
        if (value.type === "member_expression" && value.text.endsWith(`.${property}`)) {
          forwarded.push(value);
          continue;
        }
        problems.push(
          `${where}: must be loadTextContent('<file>.kql') or replace(loadTextContent('<file>.kql'), '<literal>', '<text>'), got ${value.text.slice(0, 80)}`,
        );
      }
      if (forwarded.length > 0 && direct === 0)
        problems.push(`${file.name}: ${property} forwards ${forwarded[0]?.text} but no entry loads a .kql file`);
    }
  }
  return { queries, problems };
}
