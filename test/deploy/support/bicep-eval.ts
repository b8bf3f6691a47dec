// A small evaluator of Bicep expressions (the subset the sef rollout's functions use: literals, interpolated strings,
// member and index access with `.?`, `??`, `==`/`!=`/`&&`/`||`/`!`, `?:`, single-parameter lambdas, calls of
// user-defined functions and of map, filter, flatten, toObject, union, empty, length, loadJsonContent), so a test can
// render what a deployment passes to Azure without the Bicep CLI. Anything else throws, naming the node.
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import type { Node } from "web-tree-sitter";
import type { BicepFile } from "./bicep.js";

type Value = unknown;
type Scope = ReadonlyMap<string, Value>;

function named(node: Node): Node[] {
  return node.namedChildren.filter(
    (c): c is Node => c !== null && c.type !== "comment" && c.type !== "diagnostic_comment",
  );
}

function operator(node: Node): string {
  return node.children
    .filter((c) => c !== null && !c.isNamed)
    .map((c) => c!.text)
    .join("");
}

const escapes: Record<string, string> = { "\\'": "'", "\\\\": "\\", "\\n": "\n", "\\r": "\r", "\\t": "\t", "\\$": "$" };

function isObject(value: Value): value is Record<string, Value> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Evaluates expressions of one Bicep file (its user-defined functions and top-level variables). */
export class BicepEvaluator {
  constructor(private readonly file: BicepFile) {}

  /** Calls a user-defined function of the file with arguments. */
  call(name: string, args: readonly Value[]): Value {
    const declaration = this.file.root
      .descendantsOfType("user_defined_function")
      .find((n) => n !== null && named(n)[0]?.text === name);
    if (declaration === undefined || declaration === null) throw new Error(`${this.file.name}: no func ${name}`);
    const [, parameterList, , body] = named(declaration);
    const names = named(parameterList!).map((p) => named(p)[0]!.text);
    return this.evaluate(body!, new Map(names.map((n, i) => [n, args[i]])));
  }

  /** A top-level variable's value. */
  variable(name: string): Value {
    const declaration = named(this.file.root).find(
      (n) => n.type === "variable_declaration" && named(n)[0]?.text === name,
    );
    if (declaration === undefined) throw new Error(`${this.file.name}: no var ${name}`);
    return this.evaluate(named(declaration).at(-1)!, new Map());
  }

  evaluate(node: Node, scope: Scope): Value {
    const parts = named(node);
    switch (node.type) {
      case "object":
        return Object.fromEntries(
          parts
            .filter((p) => p.type === "object_property")
            .map((p) => [this.key(named(p)[0]!), this.evaluate(named(p).at(-1)!, scope)]),
        );
      case "array":
        return parts.map((p) => this.evaluate(p, scope));
      case "string":
        return parts
          .map((p) =>
            p.type === "interpolation"
              ? String(this.evaluate(named(p)[0]!, scope))
              : p.type === "escape_sequence"
                ? (escapes[p.text] ?? p.text)
                : p.text,
          )
          .join("");
      case "number":
        return Number(node.text);
      case "boolean":
        return node.text === "true";
      case "null":
        return null;
      case "identifier":
        if (scope.has(node.text)) return scope.get(node.text);
        return this.variable(node.text);
      case "parenthesized_expression":
        return this.evaluate(parts[0]!, scope);
      case "member_expression": {
        const target = this.evaluate(parts[0]!, scope);
        const name = parts[1]!.text;
        if (operator(node) === ".?") return isObject(target) ? target[name] : undefined;
        if (!isObject(target) || !(name in target)) throw new Error(`${node.text}: no property ${name}`);
        return target[name];
      }
      case "subscript_expression": {
        const target = this.evaluate(parts[0]!, scope) as Record<string | number, Value>;
        return target[this.evaluate(parts[1]!, scope) as string | number];
      }
      case "unary_expression":
        if (operator(node) !== "!") break;
        return !this.evaluate(parts[0]!, scope);
      case "binary_expression":
        return this.binary(operator(node), parts, scope);
      case "ternary_expression":
        return this.evaluate(parts[0]!, scope) === true
          ? this.evaluate(parts[1]!, scope)
          : this.evaluate(parts[2]!, scope);
      case "call_expression":
        return this.callExpression(node, scope);
    }
    throw new Error(
      `${this.file.name}:${node.startPosition.row + 1}: cannot evaluate ${node.type} ${node.text.slice(0, 60)}`,
    );
  }

  private key(node: Node): string {
    return node.type === "string" ? String(this.evaluate(node, new Map())) : node.text;
  }

  private binary(op: string, [left, right]: Node[], scope: Scope): Value {
    const l = this.evaluate(left!, scope);
    if (op === "??") return l ?? this.evaluate(right!, scope);
    if (op === "&&") return l === true && this.evaluate(right!, scope) === true;
    if (op === "||") return l === true || this.evaluate(right!, scope) === true;
    const r = this.evaluate(right!, scope);
    if (op === "==") return l === r;
    if (op === "!=") return l !== r;
    throw new Error(`operator ${op} not supported`);
  }

  /** A lambda as a function of one argument. tree-sitter-bicep binds `x => a.b` as `(x => a).b`: bodies must be parenthesized. */
  private lambda(node: Node, scope: Scope): (arg: Value) => Value {
    if (node.type !== "lambda_expression") throw new Error(`${node.text}: expected a lambda`);
    const [parameter, body] = named(node);
    if (!["parenthesized_expression", "identifier", "object", "array", "string"].includes(body!.type)) {
      throw new Error(
        `${this.file.name}:${node.startPosition.row + 1}: parenthesize the lambda's body (${node.text.slice(0, 40)})`,
      );
    }
    return (arg) => this.evaluate(body!, new Map([...scope, [parameter!.text, arg]]));
  }

  private callExpression(node: Node, scope: Scope): Value {
    const name = node.childForFieldName("function")!.text;
    const args = named(node.childForFieldName("arguments")!);
    const value = (i: number): Value => this.evaluate(args[i]!, scope);
    switch (name) {
      case "map":
        return (value(0) as Value[]).map(this.lambda(args[1]!, scope));
      case "filter":
        return (value(0) as Value[]).filter((item) => this.lambda(args[1]!, scope)(item) === true);
      case "flatten":
        return (value(0) as Value[][]).flat();
      case "toObject": {
        const key = this.lambda(args[1]!, scope);
        const item = args[2] === undefined ? (x: Value) => x : this.lambda(args[2], scope);
        return Object.fromEntries((value(0) as Value[]).map((x) => [String(key(x)), item(x)]));
      }
      case "union":
        return Object.assign({}, ...args.map((_, i) => value(i) as object));
      case "empty": {
        const v = value(0);
        return (
          v === null ||
          v === undefined ||
          (typeof v === "string" || Array.isArray(v) ? v.length === 0 : isObject(v) && Object.keys(v).length === 0)
        );
      }
      case "length":
        return (value(0) as string | Value[]).length;
      case "loadJsonContent":
        return JSON.parse(readFileSync(resolve(dirname(this.file.path), String(value(0))), "utf8")) as Value;
      default:
        return this.call(
          name,
          args.map((_, i) => value(i)),
        );
    }
  }
}
