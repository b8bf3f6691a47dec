// Checks Bicep object literals against Azure's resource type shapes (azure-types.ts): every property written must
// exist and be writable. Literal objects and arrays are followed (also through `for`, `if`, the branches of `?:` and
// the object arguments of union()); any other expression's value is unknown here and passes.
import type { Node } from "web-tree-sitter";
import { stringLiteral, type BicepFile } from "./bicep.js";
import type { Shape } from "./azure-types.js";

/** Keys Bicep itself reads from a resource body (not sent as properties, or sent under Bicep's control). */
const bicepResourceKeys = new Set(["name", "parent", "scope", "dependsOn"]);

function named(node: Node): Node[] {
  return node.namedChildren.filter(
    (c): c is Node => c !== null && c.type !== "comment" && c.type !== "diagnostic_comment",
  );
}

function keyOf(property: Node): string {
  const key = named(property)[0];
  if (key === undefined) return "";
  return key.type === "string" ? (stringLiteral(key) ?? key.text) : key.text;
}

/** The literal a value expression ends in: the body of for/if, both branches of a ternary, union()'s object arguments. */
function literals(node: Node): Node[] {
  switch (node.type) {
    case "object":
    case "array":
      return [node];
    case "for_statement":
    case "if_statement":
      return literals(named(node).at(-1)!);
    case "ternary_expression":
      return named(node).slice(1).flatMap(literals);
    case "parenthesized_expression":
      return named(node).flatMap(literals);
    case "call_expression": {
      if (node.childForFieldName("function")?.text !== "union") return [];
      const args = node.childForFieldName("arguments");
      return args === null ? [] : named(args).flatMap(literals);
    }
    default:
      return [];
  }
}

/** Problems of a Bicep value expression against a shape. */
export function bicepValueProblems(value: Node, shape: Shape, where: string): string[] {
  if (shape.kind === "any") return [];
  // `[for x in xs: {...}]`: each element is the loop's body.
  if (value.type === "for_statement" && shape.kind === "array")
    return bicepValueProblems(named(value).at(-1)!, shape.element, `${where}[]`);
  return literals(value).flatMap((literal) => {
    if (literal.type === "array") {
      if (shape.kind !== "array") return [`${where}: an array where the type has a ${shape.kind}`];
      return named(literal).flatMap((item, i) => bicepValueProblems(item, shape.element, `${where}[${i}]`));
    }
    if (shape.kind !== "object")
      return [`${where}: an object where the type has a ${shape.kind === "array" ? "array" : shape.type}`];
    return named(literal)
      .filter((p) => p.type === "object_property")
      .flatMap((property) => {
        const key = keyOf(property);
        const value = named(property).at(-1)!;
        const known = shape.properties.get(key);
        if (known === undefined)
          return shape.additional === undefined
            ? [`${where}.${key}: no such property`]
            : bicepValueProblems(value, shape.additional, `${where}.${key}`);
        if (known.readOnly) return [`${where}.${key}: read-only`];
        return bicepValueProblems(value, known.shape, `${where}.${key}`);
      });
  });
}

/** Problems of a resource declaration's body (its `=` value) against the type's shape. */
export function bicepResourceProblems(file: BicepFile, declaration: Node, shape: Shape): string[] {
  const where = `${file.name}:${declaration.startPosition.row + 1} ${named(declaration)[0]?.text ?? ""}`;
  if (shape.kind !== "object") return [`${where}: the type's body is not an object`];
  // Bicep's own keys pass whatever the type says of them (name is read-only in the REST body: Bicep puts it in the URL).
  const properties = new Map(shape.properties);
  for (const key of bicepResourceKeys) properties.set(key, { shape: { kind: "any" }, readOnly: false });
  return bicepValueProblems(named(declaration).at(-1)!, { kind: "object", properties }, where);
}

/** The object a user-defined function returns (`func f(...) object => { ... }`), by name. */
export function functionBody(file: BicepFile, name: string): Node {
  const declaration = file.root
    .descendantsOfType("user_defined_function")
    .find((n) => n !== null && named(n)[0]?.text === name);
  if (declaration === undefined || declaration === null) throw new Error(`${file.name}: no func ${name}`);
  return named(declaration).at(-1)!;
}
