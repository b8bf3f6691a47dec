// Pure patch application for PATCH requests: RFC 6902 JSON patch, RFC 7386 JSON merge patch and Kubernetes strategic
// merge patch (merge keys for the lists the core types declare, null deletes, `$patch` / `$deleteFromPrimitiveList`
// / `$retainKeys` directives; `$setElementOrder` is accepted and ignored).
import { copyOf, isPlainObject } from "./objects.js";
import { failure, StatusError, unsupportedMediaType } from "./status.js";

export type PatchType = "json" | "merge" | "strategic";

/** Lists merged item by item under strategic merge patch, by dotted path (array indices left out) -> merge key. */
export const strategicMergeKeys: Readonly<Record<string, string>> = {
  "metadata.ownerReferences": "uid",
  "status.conditions": "type",
  "status.addresses": "type",
  "status.images": "names",
  "spec.containers": "name",
  "spec.initContainers": "name",
  "spec.ephemeralContainers": "name",
  "spec.volumes": "name",
  "spec.containers.env": "name",
  "spec.containers.ports": "containerPort",
  "spec.containers.volumeMounts": "mountPath",
};

/** Primitive lists merged as sets under strategic merge patch. */
export const strategicMergeSets: ReadonlySet<string> = new Set(["metadata.finalizers"]);

export function patchTypeOf(contentType: string | undefined): PatchType {
  const media = (contentType ?? "").split(";")[0]?.trim().toLowerCase();
  if (media === "application/json-patch+json") return "json";
  if (media === "application/merge-patch+json") return "merge";
  if (media === "application/strategic-merge-patch+json") return "strategic";
  throw unsupportedMediaType(true);
}

export function applyPatch(type: PatchType, target: unknown, patch: unknown): unknown {
  if (type === "json") return applyJsonPatch(target, patch);
  if (!isPlainObject(patch))
    throw patchError(`${type === "merge" ? "merge" : "strategic merge"} patch must be a JSON object`);
  return type === "merge" ? applyMergePatch(target, patch) : applyStrategicMergePatch(target, patch, "");
}

function patchError(message: string): StatusError {
  return new StatusError(failure(422, "Invalid", message));
}

/** RFC 7386: objects merge recursively, null deletes, anything else replaces. */
export function applyMergePatch(target: unknown, patch: unknown): unknown {
  if (!isPlainObject(patch)) return copyOf(patch);
  const result: Record<string, unknown> = isPlainObject(target) ? copyOf(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = applyMergePatch(result[key], value);
  }
  return result;
}

function childPath(path: string, key: string): string {
  return path === "" ? key : `${path}.${key}`;
}

/** Kubernetes strategic merge patch over a JSON object (path = dotted location, for merge-key lookup). */
export function applyStrategicMergePatch(target: unknown, patch: Record<string, unknown>, path: string): unknown {
  if (patch.$patch === "replace") {
    const { $patch: _directive, ...rest } = patch;
    return copyOf(rest);
  }
  const result: Record<string, unknown> = isPlainObject(target) ? copyOf(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (key.startsWith("$setElementOrder/") || key === "$retainKeys" || key === "$patch") continue;
    if (key.startsWith("$deleteFromPrimitiveList/")) {
      const listKey = key.slice("$deleteFromPrimitiveList/".length);
      const removed = Array.isArray(value) ? value : [];
      const current = result[listKey];
      if (Array.isArray(current)) result[listKey] = current.filter((item) => !removed.includes(item));
      continue;
    }
    const here = childPath(path, key);
    if (value === null) delete result[key];
    else if (isPlainObject(value) && value.$patch === "delete") delete result[key];
    else if (isPlainObject(value)) result[key] = applyStrategicMergePatch(result[key], value, here);
    else if (Array.isArray(value)) result[key] = mergeStrategicList(result[key], value, here);
    else result[key] = value;
  }
  const retainKeys = patch.$retainKeys;
  if (Array.isArray(retainKeys)) {
    for (const key of Object.keys(result)) if (!retainKeys.includes(key)) delete result[key];
  }
  return result;
}

function mergeStrategicList(target: unknown, patch: unknown[], path: string): unknown[] {
  const current = Array.isArray(target) ? copyOf(target) : [];
  if (strategicMergeSets.has(path)) return [...current, ...patch.filter((item) => !current.includes(item))];
  const mergeKey = strategicMergeKeys[path];
  if (mergeKey === undefined)
    return copyOf(patch.filter((item) => !(isPlainObject(item) && item.$patch !== undefined)));
  const keyOf = (item: unknown): unknown => (isPlainObject(item) ? JSON.stringify(item[mergeKey]) : undefined);
  let result: unknown[] = current;
  for (const item of patch) {
    if (!isPlainObject(item)) continue;
    if (item.$patch === "replace") return copyOf(patch.filter((p) => !(isPlainObject(p) && p.$patch === "replace")));
    const index = result.findIndex((existing) => keyOf(existing) === keyOf(item));
    if (item.$patch === "delete") {
      result = result.filter((existing) => keyOf(existing) !== keyOf(item));
    } else if (index >= 0) {
      result[index] = applyStrategicMergePatch(result[index], item, path);
    } else {
      result.push(applyStrategicMergePatch({}, item, path));
    }
  }
  return result;
}

interface JsonPatchOperation {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

function pointerTokens(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw patchError(`invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split("/")
    .map((t) => t.replace(/~1/g, "/").replace(/~0/g, "~"));
}

/** The container holding the pointer's last token (created nowhere: a missing parent is an error). */
function parentOf(document: unknown, tokens: string[], op: string): { parent: unknown; last: string } {
  let parent = document;
  for (const token of tokens.slice(0, -1)) {
    const next = Array.isArray(parent) ? parent[Number(token)] : isPlainObject(parent) ? parent[token] : undefined;
    if (next === undefined)
      throw patchError(`jsonpatch ${op} operation does not apply: doc is missing path: /${tokens.join("/")}`);
    parent = next;
  }
  return { parent, last: tokens[tokens.length - 1] ?? "" };
}

function getAt(document: unknown, pointer: string, op: string): unknown {
  const tokens = pointerTokens(pointer);
  if (tokens.length === 0) return document;
  const { parent, last } = parentOf(document, tokens, op);
  const value = Array.isArray(parent) ? parent[Number(last)] : isPlainObject(parent) ? parent[last] : undefined;
  if (value === undefined) throw patchError(`jsonpatch ${op} operation does not apply: doc is missing key: ${pointer}`);
  return value;
}

function removeAt(document: unknown, pointer: string, op: string): unknown {
  const value = getAt(document, pointer, op);
  const { parent, last } = parentOf(document, pointerTokens(pointer), op);
  if (Array.isArray(parent)) parent.splice(Number(last), 1);
  else delete (parent as Record<string, unknown>)[last];
  return value;
}

function addAt(document: unknown, pointer: string, value: unknown, op: string, replace: boolean): unknown {
  const tokens = pointerTokens(pointer);
  if (tokens.length === 0) return copyOf(value);
  const { parent, last } = parentOf(document, tokens, op);
  if (Array.isArray(parent)) {
    const index = last === "-" ? parent.length : Number(last);
    if (!Number.isInteger(index) || index < 0 || index > parent.length)
      throw patchError(`jsonpatch ${op} operation does not apply: index out of range: ${pointer}`);
    parent.splice(index, replace ? 1 : 0, copyOf(value));
  } else if (isPlainObject(parent)) {
    parent[last] = copyOf(value);
  } else {
    throw patchError(`jsonpatch ${op} operation does not apply: doc is missing path: ${pointer}`);
  }
  return document;
}

/** RFC 6902 over a copy of `target`; any failed operation fails the whole patch (422). */
export function applyJsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw patchError("json patch must be a JSON array of operations");
  let document = copyOf(target);
  for (const raw of operations as JsonPatchOperation[]) {
    const { op, path } = raw;
    if (typeof path !== "string") throw patchError(`jsonpatch ${op} operation has no path`);
    if (op === "add") document = addAt(document, path, raw.value, op, false);
    else if (op === "remove") removeAt(document, path, op);
    else if (op === "replace") {
      getAt(document, path, op);
      document = addAt(document, path, raw.value, op, true);
    } else if (op === "move") document = addAt(document, path, removeAt(document, raw.from ?? "", op), op, false);
    else if (op === "copy") document = addAt(document, path, getAt(document, raw.from ?? "", op), op, false);
    else if (op === "test") {
      if (JSON.stringify(getAt(document, path, op)) !== JSON.stringify(raw.value))
        throw patchError(`testing value ${path} failed`);
    } else throw patchError(`Unexpected kind: ${String(op)}`);
  }
  return document;
}
