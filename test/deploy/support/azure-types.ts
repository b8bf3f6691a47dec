// Azure's published resource types, read offline from the Azure SDK for JavaScript (@azure/arm-*, generated from the
// REST API specifications): for a resource type, the API version and body model of the SDK's PUT operation, turned
// into the wire shape (property names as sent, flattened `properties.x` paths unfolded, read-only marked), and the
// policy alias paths derived from it.
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

/** The wire shape of a value. `any`: free-form (Object, or a model with additionalProperties). */
export type Shape =
  | { readonly kind: "object"; readonly properties: ReadonlyMap<string, Property>; readonly additional?: Shape }
  | { readonly kind: "array"; readonly element: Shape }
  | { readonly kind: "scalar"; readonly type: string; readonly allowed?: readonly unknown[] }
  | { readonly kind: "any" };

export interface Property {
  readonly shape: Shape;
  readonly readOnly: boolean;
}

export interface ResourceType {
  readonly type: string;
  readonly apiVersion: string;
  /** The model the SDK sends as the PUT body (e.g. GalleryApplicationVersion). */
  readonly model: string;
  readonly shape: Shape;
  /** The package the type was read from, for messages. */
  readonly source: string;
}

interface Mapper {
  serializedName?: string;
  readOnly?: boolean;
  defaultValue?: unknown;
  type: {
    name: string;
    className?: string;
    modelProperties?: Record<string, Mapper>;
    element?: Mapper;
    value?: Mapper;
    allowedValues?: unknown[];
    additionalProperties?: unknown;
  };
}

const require = createRequire(import.meta.url);

/** The ESM build directory of an @azure/arm-* package (its models/ and operations/ are not exported: read by path). */
function esmDir(pkg: string): string {
  const root = dirname(require.resolve(`${pkg}/package.json`));
  for (const candidate of ["dist/esm", "dist-esm/src"]) {
    try {
      readdirSync(join(root, candidate, "operations"));
      return join(root, candidate);
    } catch {
      // not this layout
    }
  }
  throw new Error(`${pkg}: no dist/esm/operations (not an AutoRest-generated package with mappers?)`);
}

async function importFrom(dir: string, file: string): Promise<Record<string, unknown>> {
  return (await import(pathToFileURL(join(dir, file)).href)) as Record<string, unknown>;
}

/** "a.b\\.c" → ["a", "b.c"]: AutoRest escapes dots inside one wire name. */
function splitSerializedName(name: string): string[] {
  return name.split(/(?<!\\)\./).map((part) => part.replace(/\\\./g, "."));
}

function shapeOf(mapper: Mapper, mappers: Record<string, Mapper>, seen: Set<string>): Shape {
  const t = mapper.type;
  switch (t.name) {
    case "Composite": {
      const model = t.modelProperties !== undefined ? t : mappers[t.className ?? ""]?.type;
      if (model === undefined) throw new Error(`no mapper for ${t.className}`);
      if (t.className !== undefined && seen.has(t.className)) return { kind: "any" }; // recursive model
      const inner = new Set(seen);
      if (t.className !== undefined) inner.add(t.className);
      if (model.additionalProperties !== undefined) return { kind: "any" };
      const root = new Map<string, Property>();
      for (const property of Object.values(model.modelProperties ?? {})) {
        if (property.serializedName === undefined) continue;
        const path = splitSerializedName(property.serializedName);
        let level = root;
        for (const segment of path.slice(0, -1)) {
          const existing = level.get(segment);
          if (existing === undefined || existing.shape.kind !== "object") {
            const next = new Map<string, Property>();
            level.set(segment, { shape: { kind: "object", properties: next }, readOnly: false });
            level = next;
          } else level = existing.shape.properties as Map<string, Property>;
        }
        level.set(path.at(-1)!, { shape: shapeOf(property, mappers, inner), readOnly: property.readOnly === true });
      }
      return { kind: "object", properties: root };
    }
    case "Sequence":
      return { kind: "array", element: shapeOf(t.element!, mappers, seen) };
    case "Dictionary":
      return { kind: "object", properties: new Map(), additional: shapeOf(t.value!, mappers, seen) };
    case "Object":
    case "any":
      return { kind: "any" };
    case "Enum":
      return { kind: "scalar", type: "String", allowed: t.allowedValues };
    default:
      return { kind: "scalar", type: t.name };
  }
}

/** The PUT operation whose path ends with the resource type's segments (`Microsoft.Compute/galleries/{x}/applications/{y}`). */
function putOperation(dir: string, type: string): { bodyParameter: string; apiVersionParameter: string } {
  const [namespace, ...names] = type.split("/");
  const tail = `/providers/${namespace}/${names.map((n) => `${n}/\\{[^}]+\\}`).join("/")}"`;
  const spec = new RegExp(
    `path:\\s*"[^"]*${tail.replace(/\./g, "\\.")},\\s*httpMethod:\\s*"PUT",[\\s\\S]*?requestBody:\\s*Parameters\\.(\\w+),[\\s\\S]*?queryParameters:\\s*\\[([^\\]]*)\\]`,
    "i",
  );
  for (const file of readdirSync(join(dir, "operations")).filter((f) => f.endsWith(".js"))) {
    const text = readFileSync(join(dir, "operations", file), "utf8");
    for (const block of text.split(/\nconst \w+OperationSpec = /)) {
      const m = spec.exec(block);
      const apiVersion = /Parameters\.(apiVersion\d*)/.exec(m?.[2] ?? "");
      if (m !== null && apiVersion !== null) return { bodyParameter: m[1]!, apiVersionParameter: apiVersion[1]! };
    }
  }
  throw new Error(`${dir}: no PUT operation for ${type}`);
}

const cache = new Map<string, Promise<ResourceType>>();

/** The resource type as the package's PUT operation describes it. */
export function resourceType(pkg: string, type: string): Promise<ResourceType> {
  const key = `${pkg} ${type}`;
  let found = cache.get(key);
  if (found === undefined) {
    found = (async () => {
      const dir = esmDir(pkg);
      const mappers = (await importFrom(dir, "models/mappers.js")) as unknown as Record<string, Mapper>;
      const parameters = (await importFrom(dir, "models/parameters.js")) as unknown as Record<
        string,
        { mapper: Mapper }
      >;
      const { bodyParameter, apiVersionParameter } = putOperation(dir, type);
      const body = parameters[bodyParameter]!.mapper;
      const apiVersion = String(parameters[apiVersionParameter]!.mapper.defaultValue);
      return {
        type,
        apiVersion,
        model: body.type.className ?? "",
        shape: shapeOf(body, mappers, new Set()),
        source: pkg,
      };
    })();
    cache.set(key, found);
  }
  return found;
}

/** Which package describes which resource type (the types the sef rollout deploys). */
export const typeSources: Readonly<Record<string, string>> = {
  "Microsoft.Compute/galleries": "@azure/arm-compute",
  "Microsoft.Compute/galleries/applications": "@azure/arm-compute",
  "Microsoft.Compute/galleries/applications/versions": "@azure/arm-compute",
  "Microsoft.Compute/virtualMachines": "@azure/arm-compute",
  "Microsoft.Compute/virtualMachineScaleSets": "@azure/arm-compute",
  "Microsoft.Authorization/policyDefinitions": "@azure/arm-policy",
  "Microsoft.Authorization/policySetDefinitions": "@azure/arm-policy",
  "Microsoft.Authorization/policyAssignments": "@azure/arm-policy",
  "Microsoft.Authorization/roleAssignments": "@azure/arm-authorization",
  "Microsoft.Resources/deployments": "@azure/arm-resources",
};

/** The shape at a path of property names (`["properties", "publishingProfile"]`), through arrays' elements. */
export function shapeAt(shape: Shape, path: readonly string[]): Shape | undefined {
  let current: Shape | undefined = shape;
  for (const name of path) {
    while (current?.kind === "array") current = current.element;
    if (current === undefined || current.kind !== "object") return current?.kind === "any" ? current : undefined;
    current = current.properties.get(name)?.shape ?? current.additional;
  }
  return current;
}

/** Problems of a JSON value against a shape: unknown or read-only properties, wrong kinds; ARM expressions pass. */
export function jsonProblems(value: unknown, shape: Shape, where: string): string[] {
  if (shape.kind === "any" || value === null) return [];
  if (typeof value === "string" && value.startsWith("[") && !value.startsWith("[[")) return []; // an ARM expression
  if (shape.kind === "array") {
    if (!Array.isArray(value)) return [`${where}: expected an array`];
    return value.flatMap((item, i) => jsonProblems(item, shape.element, `${where}[${i}]`));
  }
  if (shape.kind === "scalar") {
    if (typeof value === "object")
      return [`${where}: expected a ${shape.type}, got ${Array.isArray(value) ? "an array" : "an object"}`];
    return [];
  }
  if (typeof value !== "object" || Array.isArray(value)) return [`${where}: expected an object`];
  return Object.entries(value as Record<string, unknown>).flatMap(([key, item]) => {
    const property = shape.properties.get(key);
    if (property === undefined)
      return shape.additional === undefined
        ? [`${where}.${key}: no such property`]
        : jsonProblems(item, shape.additional, `${where}.${key}`);
    if (property.readOnly) return [`${where}.${key}: read-only`];
    return jsonProblems(item, property.shape, `${where}.${key}`);
  });
}

/**
 * Policy alias paths of a resource type, derived from its wire shape: `<type>/<path>` for every property path, with
 * every `properties` level dropped (the resource's and nested resources') and `[*]` after an array (e.g. `Microsoft.Compute/virtualMachines/
 * applicationProfile.galleryApplications[*].packageReferenceId`). Approximate: Azure publishes aliases separately
 * (`az provider show --expand resourceTypes/aliases`); most are exactly these paths, some are renamed or missing.
 */
export function aliasPaths(resource: ResourceType): Set<string> {
  const aliases = new Set<string>();
  const walk = (shape: Shape, path: string): void => {
    if (shape.kind === "array") {
      aliases.add(`${path}[*]`);
      walk(shape.element, `${path}[*]`);
      return;
    }
    if (shape.kind !== "object") return;
    for (const [name, property] of shape.properties) {
      // A nested resource's `properties` level is not part of alias paths (like the top-level one).
      if (name === "properties") {
        walk(property.shape, path);
        continue;
      }
      const next = path === "" ? name : `${path}.${name}`;
      aliases.add(next);
      walk(property.shape, next);
    }
  };
  const properties = shapeAt(resource.shape, ["properties"]);
  if (properties !== undefined) walk(properties, "");
  return new Set([...aliases].map((a) => `${resource.type}/${a}`));
}
