// Building ajv over schemas/ and turning its errors into located issues: the one module
// the Node CLI (validate.mjs) and the browser playground (playground/entry.mjs) share.
// Nothing here touches a file system: callers hand in the parsed schemas and the text.
//
// An issue is what `agilerl validate --format json` reports for a problem: the dotted
// path into the document, the 1-based line and column where agilerl/files/documents.py's
// locator places it, and the message in pydantic's words (agilerl/models/validation.py),
// so a page can show the same verdict and the same located errors as the command line.

import Ajv2020 from "ajv/dist/2020.js";

import { closeMatch } from "./close_match.mjs";
import { DocumentError, readDocument } from "./documents.mjs";
import { addAgileRLKeywords } from "./keywords.mjs";
import { RENAMED_KEYWORD, collectDeprecations } from "./legacy.mjs";
import { RULES_KEYWORD, checkRules, schemaLookup } from "./rules.mjs";
import { statedRule } from "./standard_rules.mjs";

export const AJV_OPTIONS = {
  strict: true,
  // strictRequired (implied by strict) wants every `required` name declared in
  // `properties` of the same schema object. Our discriminated unions (EncoderConfig in
  // network.schema.json) require the `arch` tag at the union level, where ajv's own
  // discriminator documentation puts it, and declare it only inside each branch.
  strictRequired: false,
  allErrors: true,
  discriminator: true,
  // Errors carry the schema object that failed (the keys an unknown key could have
  // meant, a section's title) and the value (a list's length).
  verbose: true,
};

/** The spec title names no schema. */
export class UnknownSpecError extends Error {}

/**
 * An ajv instance holding every schema of `schemas` ([{name, schema}], file-name order),
 * each compiled (so strict mode has checked them all), `byTitle`: schema title ->
 * compiled validate function, and `files`: file name -> schema. Throws on the first
 * schema problem, naming the file. `rulesSchema` is codegen/rules.schema.json.
 */
export function compileSchemas(schemas, rulesSchema) {
  const ajv = addAgileRLKeywords(new Ajv2020(AJV_OPTIONS), rulesSchema);
  for (const { name, schema } of schemas) {
    withFile(name, () => ajv.addSchema(schema));
  }
  const byTitle = new Map();
  // ajv compiles the schemas a schema references along with it, and its strict-mode
  // messages carry no location: compiling referenced files first makes the file that
  // fails the one at fault.
  for (const { name, schema } of dependenciesFirst(schemas)) {
    const validate = withFile(name, () => ajv.getSchema(schema.$id));
    if (schema.title !== undefined) byTitle.set(schema.title, validate);
  }
  const files = new Map(schemas.map(({ name, schema }) => [name, schema]));
  return { ajv, byTitle, files, owners: ownerFiles(files) };
}

/** `schemas` reordered so each comes after the files its `$ref`s name. */
function dependenciesFirst(schemas) {
  const byName = new Map(schemas.map((entry) => [entry.name, entry]));
  const ordered = [];
  const visited = new Set();
  const visit = (entry) => {
    if (visited.has(entry.name)) return;
    visited.add(entry.name);
    for (const ref of referencedFiles(entry.schema)) {
      if (byName.has(ref)) visit(byName.get(ref));
    }
    ordered.push(entry);
  };
  schemas.forEach(visit);
  return ordered;
}

/** File names of the `$ref`s in `node` (relative references: `mlp.schema.json#/...`). */
function referencedFiles(node, found = new Set()) {
  if (Array.isArray(node)) {
    node.forEach((item) => referencedFiles(item, found));
  } else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      if (key === "$ref" && typeof value === "string") {
        const file = value.split("#")[0];
        if (file !== "") found.add(file.split("/").pop());
      } else {
        referencedFiles(value, found);
      }
    }
  }
  return found;
}

/**
 * Every schema object -> {file, pointer}: the file it is in (to resolve the `#/...` refs
 * inside it) and its JSON Pointer there (to compile it alone, a union's branch).
 */
function ownerFiles(files) {
  const owners = new WeakMap();
  const mark = (node, file, pointer) => {
    if (node === null || typeof node !== "object") return;
    if (!Array.isArray(node)) owners.set(node, { file, pointer });
    for (const [key, child] of Object.entries(node)) {
      mark(child, file, `${pointer}/${key.replaceAll("~", "~0").replaceAll("/", "~1")}`);
    }
  };
  files.forEach((schema, file) => mark(schema, file, ""));
  return owners;
}

function withFile(name, action) {
  try {
    return action();
  } catch (error) {
    throw new Error(`${name}: ${error.message}`, { cause: error });
  }
}

function validatorFor(byTitle, spec) {
  const validate = byTitle.get(spec);
  if (validate === undefined) {
    const known = [...byTitle.keys()].sort().join(", ");
    throw new UnknownSpecError(`no schema titled ${JSON.stringify(spec)}; known: ${known}`);
  }
  return validate;
}

/**
 * {valid, errors, deprecated?} of one document, ajv's errors as they are (validate.mjs's
 * report); `deprecated` [{path, message}] (of a valid document) names the old spellings
 * of keys it holds, read under their new names as the Python loader does (legacy.mjs).
 */
export function validateDocument(byTitle, spec, document) {
  const validate = validatorFor(byTitle, spec);
  const [valid, deprecated] = collectDeprecations(() => validate(document));
  const errors = (validate.errors ?? []).map(({ instancePath, message, keyword, params }) => ({
    path: instancePath,
    message,
    keyword,
    params,
  }));
  const found = deprecated.map(({ pointer, message }) => ({ path: pointer, message }));
  return { valid, errors, ...withDeprecated(valid ? found : []) };
}

/**
 * {valid, errors, deprecated?} of the document in `text`: each error {path, line, column,
 * message} as `agilerl validate --format json` words it, sorted by position; `deprecated`
 * (of a valid document) the old spellings of keys, located the same way. Text the YAML
 * dialect refuses is invalid with one error at the place the dialect names (`<root>`).
 */
export function checkText(compiled, spec, text) {
  const validate = validatorFor(compiled.byTitle, spec);
  let read;
  try {
    read = readDocument(text);
  } catch (error) {
    if (!(error instanceof DocumentError)) throw error;
    const [, line, column, message] = /^(\d+):(\d+): (.*)$/s.exec(error.message);
    const problem = { path: "<root>", line: Number(line), column: Number(column), message };
    return { valid: false, errors: [problem] };
  }
  const [valid, deprecated] = collectDeprecations(() => validate(read.value));
  const located = (path, message) => {
    const [line, column] = read.locate(path);
    return { path: dottedPath(path), line, column, message };
  };
  const byPosition = (a, b) => a.line - b.line || a.column - b.column;
  if (valid) {
    const found = deprecated
      .map(({ pointer, message }) => located(documentPath(read.value, pointer), message))
      .sort(byPosition);
    return { valid: true, errors: [], ...withDeprecated(found) };
  }
  const errors = issues(validate.errors, read.value, compiled).map(({ path, message }) =>
    located(path, message),
  );
  errors.sort(byPosition);
  return { valid: false, errors };
}

/** The `deprecated` entry of a valid document's report (as `agilerl validate --format
 * json` has it; an invalid one has its errors only): none when there are none, so
 * reports of other documents stay as they were. */
const withDeprecated = (deprecated) => (deprecated.length > 0 ? { deprecated } : {});

// --- From ajv's errors to issues --------------------------------------------------------

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

/** `encoder_config.hidden_size[0]`; `<root>` for the document itself (Issue.dotted_path). */
export function dottedPath(path) {
  let text = "";
  for (const part of path) {
    text += typeof part === "number" ? `[${part}]` : text ? `.${part}` : part;
  }
  return text || "<root>";
}

/** A JSON Pointer as a document path: keys, and indices (numbers) where a list is. */
function documentPath(document, pointer) {
  const tokens = pointer === "" ? [] : pointer.slice(1).split("/");
  const path = [];
  let node = document;
  for (const token of tokens.map((t) => t.replaceAll("~1", "/").replaceAll("~0", "~"))) {
    const index = Array.isArray(node) && /^[0-9]+$/.test(token) ? Number(token) : undefined;
    path.push(index ?? token);
    node = index !== undefined ? node[index] : isObject(node) ? node[token] : undefined;
  }
  return path;
}

/** A value as Python's repr writes a Literal's member in pydantic's messages. */
function literal(value) {
  if (typeof value === "string") return `'${value}'`;
  if (typeof value === "boolean") return value ? "True" : "False";
  return value === null ? "None" : String(value);
}

const alternatives = (items) =>
  items.length === 1 ? items[0] : `${items.slice(0, -1).join(", ")} or ${items.at(-1)}`;
const plural = (count, noun) => `${count} ${noun}${count === 1 ? "" : "s"}`;

/** pydantic's message when a value is not of the JSON type the schema wants. */
const TYPE_MESSAGES = {
  integer: () => "Input should be a valid integer",
  number: () => "Input should be a valid number",
  string: () => "Input should be a valid string",
  boolean: () => "Input should be a valid boolean",
  array: () => "Input should be a valid list",
  null: () => "Input should be None",
  object: (error) =>
    error.parentSchema?.title
      ? `Input should be a valid dictionary or instance of ${error.parentSchema.title}`
      : "Input should be a valid dictionary",
};

function typeMessage(error) {
  const types = [error.params.type].flat().join(",").split(",");
  const type = types.find((name) => name !== "null") ?? types[0];
  return (TYPE_MESSAGES[type] ?? (() => error.message))(error);
}

/** Messages by ajv keyword, in pydantic's words; other keywords keep ajv's message. */
const MESSAGES = {
  type: typeMessage,
  const: (e) => `Input should be ${literal(e.params.allowedValue)}`,
  enum: (e) => `Input should be ${alternatives(e.params.allowedValues.map(literal))}`,
  minimum: (e) => `Input should be greater than or equal to ${e.params.limit}`,
  exclusiveMinimum: (e) => `Input should be greater than ${e.params.limit}`,
  maximum: (e) => `Input should be less than or equal to ${e.params.limit}`,
  exclusiveMaximum: (e) => `Input should be less than ${e.params.limit}`,
  minLength: (e) => `String should have at least ${plural(e.params.limit, "character")}`,
  maxLength: (e) => `String should have at most ${plural(e.params.limit, "character")}`,
  minItems: (e) =>
    `List should have at least ${plural(e.params.limit, "item")} after validation, not ${e.data.length}`,
  maxItems: (e) =>
    `List should have at most ${plural(e.params.limit, "item")} after validation, not ${e.data.length}`,
  pattern: (e) => `String should match pattern '${e.params.pattern}'`,
  [RULES_KEYWORD]: (e) => e.message,
  [RENAMED_KEYWORD]: (e) => e.message,
};

/** The key an unknown `key` probably meant, and how the message says so (validation.py). */
function intendedKey(key, known) {
  const close = closeMatch(
    key,
    known.filter((name) => name !== key),
  );
  return close === undefined
    ? [undefined, "not allowed here"]
    : [close, `did you mean '${close}'?`];
}

/** The schema a `$ref` in `schema` names (`schema` itself when it has none). */
export function dereferenced(schema, compiled) {
  if (typeof schema?.$ref !== "string") return schema;
  return resolveRef(schema.$ref, compiled.owners.get(schema)?.file, compiled.files);
}

/** The target of a `$ref` written in the file `owner`. */
function resolveRef(ref, owner, files) {
  const [file, pointer = ""] = ref.split("#");
  let node = files.get(file === "" ? owner : file.split("/").pop());
  for (const token of pointer.split("/").filter(Boolean)) {
    node = node?.[token.replaceAll("~1", "/").replaceAll("~0", "~")];
  }
  return node;
}

/** The property names a schema object declares, through allOf/anyOf/oneOf/then and $refs. */
function declaredKeys(schema, compiled, found = new Set(), seen = new Set()) {
  if (!isObject(schema) || seen.has(schema)) return found;
  seen.add(schema);
  Object.keys(schema.properties ?? {}).forEach((key) => found.add(key));
  const owner = compiled.owners.get(schema)?.file;
  if (typeof schema.$ref === "string") {
    declaredKeys(resolveRef(schema.$ref, owner, compiled.files), compiled, found, seen);
  }
  for (const branch of [
    ...(schema.allOf ?? []),
    ...(schema.anyOf ?? []),
    ...(schema.oneOf ?? []),
  ]) {
    declaredKeys(branch, compiled, found, seen);
  }
  for (const branch of [schema.then, schema.else]) declaredKeys(branch, compiled, found, seen);
  return found;
}

const UNKNOWN_KEY = {
  additionalProperties: (e) => e.params.additionalProperty,
  unevaluatedProperties: (e) => e.params.unevaluatedProperty,
};
const UNIONS = new Set(["anyOf", "oneOf"]);
const MISSING = "required field is missing";

const under = (path, prefix) => path === prefix || path.startsWith(`${prefix}/`);

/**
 * ajv's errors grouped by the union (anyOf/oneOf) that produced them: with allErrors,
 * ajv lists a failed union's branch errors right before the union's own error, and an
 * `if` schema's error right after its `then` errors. A group holds the errors before it
 * under its instance path, back to an `if` error above that path; a group that an `if`
 * error closes is conditional (the schema applies it where, say, the algorithm is PPO).
 */
function grouped(errors) {
  const items = [];
  for (const error of errors) {
    if (UNIONS.has(error.keyword)) {
      let start = items.length;
      while (start > 0) {
        const previous = items[start - 1].error;
        const barrier =
          previous.keyword === "if" && !under(previous.instancePath, error.instancePath);
        if (barrier || !under(previous.instancePath, error.instancePath)) break;
        start -= 1;
      }
      items.push({ error, run: items.splice(start) });
    } else {
      if (error.keyword === "if") {
        for (let index = items.length - 1; index >= 0; index -= 1) {
          if (items[index].error.keyword === "if") break;
          if (under(items[index].error.instancePath, error.instancePath)) {
            items[index].conditional = true;
          }
        }
      }
      items.push({ error });
    }
  }
  return items;
}

const pointerToken = (name) => String(name).replaceAll("~", "~0").replaceAll("/", "~1");

/** The object schema whose `allOf` holds `entry` (its defaults are the rule's). */
function ownerObject(entry, compiled) {
  const owner = compiled.owners.get(entry);
  const found = owner && /^(.*)\/allOf\/[0-9]+$/.exec(owner.pointer);
  return found ? resolveRef(`#${found[1]}`, owner.file, compiled.files) : undefined;
}

/**
 * ajv's `errors` with those of each failing rule stated in standard keywords (an `allOf`
 * entry, standard_rules.mjs) replaced by the rule's own error, worded and placed as
 * `agilerl validate` does (`network.simba must not be true when ...`, where ajv says
 * "must NOT be valid"). With allErrors, ajv lists an entry's errors in a row, its `if`
 * error last; theirs are the schema paths below the entry's.
 */
function wordedAsRules(errors, compiled) {
  const out = [];
  for (const error of errors) {
    const rule = error.keyword === "if" ? statedRule(error.parentSchema) : undefined;
    const owner = rule && isObject(error.data) ? ownerObject(error.parentSchema, compiled) : undefined;
    if (owner === undefined) {
      out.push(error);
      continue;
    }
    const entryPath = error.schemaPath.replace(/\/if$/, "/");
    let start = out.length;
    while (
      start > 0 &&
      out[start - 1].schemaPath.startsWith(entryPath) &&
      under(out[start - 1].instancePath, error.instancePath)
    ) {
      start -= 1;
    }
    const violations = [...checkRules([rule], schemaLookup(error.data, owner))];
    if (violations.length === 0) {
      out.push(error);
      continue;
    }
    out.splice(start);
    for (const violation of violations) {
      const at = [violation.field, ...(violation.at ?? [])].map(pointerToken).join("/");
      out.push({
        ...error,
        instancePath: `${error.instancePath}/${at}`,
        keyword: RULES_KEYWORD,
        message: violation.message,
        params: { field: violation.field },
      });
    }
  }
  return out;
}

/**
 * `errors` less the unknown keys that are no fault of their own: a subschema that fails
 * keeps none of its annotations (draft 2020-12), so where a field of a section is wrong
 * (in an `allOf` beside a rule's `if`, whose evaluated keys ajv tracks at run time) every
 * key it declared is "unevaluated" too. Such an error names a key the schema declares and
 * comes with another error inside the same object; pydantic reports the fault alone.
 */
function withoutConsequences(errors, compiled) {
  const faults = errors.filter((e) => e.keyword !== "if" && e.keyword !== "unevaluatedProperties");
  return errors.filter(
    (error) =>
      error.keyword !== "unevaluatedProperties" ||
      !declaredKeys(error.parentSchema, compiled).has(error.params.unevaluatedProperty) ||
      !faults.some((fault) => under(fault.instancePath, error.instancePath)),
  );
}

/** ajv's errors as check.mjs reads them: rules worded as rules, consequences dropped. */
const standardErrors = (errors, compiled) =>
  withoutConsequences(wordedAsRules(errors, compiled), compiled);

/** ajv's validate function of one schema object of the files (a union's branch). */
function branchValidator(schema, compiled) {
  const { file, pointer } = compiled.owners.get(schema);
  return compiled.ajv.getSchema(`${compiled.files.get(file).$id}#${pointer}`);
}

/**
 * The errors of union `error`'s branch that the value meant, as pydantic reports them, or
 * undefined when no branch stands out. Each branch is validated alone: a branch is not
 * meant when it rejects the value's type, or a tag the value carries (a `const` of one
 * of its keys: `arch: mlp` is no CNN); of the others, the one with the fewest errors.
 */
function meantBranch(error, compiled) {
  const path = error.instancePath;
  const value = error.data;
  let best;
  for (const branch of error.schema) {
    const validate = branchValidator(branch, compiled);
    // A oneOf that more than one branch passes: no branch is the one meant.
    if (validate(value)) return undefined;
    const errors = standardErrors(validate.errors, compiled).map((e) => ({
      ...e,
      instancePath: `${path}${e.instancePath}`,
    }));
    const rejects = errors.some(
      (e) =>
        (e.keyword === "type" && e.instancePath === path) ||
        (e.keyword === "const" &&
          isObject(value) &&
          e.instancePath.startsWith(`${path}/`) &&
          !e.instancePath.slice(path.length + 1).includes("/")),
    );
    if (rejects) continue;
    const found = pydanticErrors(grouped(errors), compiled);
    if (best === undefined || found.length < best.length) best = found;
  }
  return best;
}

/**
 * The errors of `items` pydantic would report. pydantic validates the one member of a
 * union the document selects (the algorithm decides the environment and network
 * sections, a tag the encoder), where the schema tries every branch, so a union's errors
 * are dropped when errors outside it already speak of that part of the document; else
 * the errors of the branch meant stand, or the run's most specific errors (a wrong type
 * of the whole value only when nothing deeper failed). Of the unions at one path, the one
 * a condition chose is the one meant, else the one with the fewest errors.
 */
function pydanticErrors(items, compiled) {
  const plain = items.filter((item) => !item.run && item.error.keyword !== "if");
  const byPath = new Map();
  for (const { error, run, conditional } of items.filter((item) => item.run)) {
    const path = error.instancePath;
    if (plain.some((item) => under(item.error.instancePath, path))) continue;
    let kept = meantBranch(error, compiled);
    if (kept === undefined) {
      const inner = pydanticErrors(run, compiled);
      const deeper = inner.filter((e) => e.instancePath !== path || e.keyword !== "type");
      kept = deeper.length > 0 ? deeper : inner.filter((e) => e.params.type !== "null").slice(0, 1);
    }
    // Where a section is chosen by another (an `if`), that choice is the one pydantic makes.
    const rank = [conditional ? 0 : 1, kept.length];
    const held = byPath.get(path);
    if (
      held === undefined ||
      rank[0] < held.rank[0] ||
      (rank[0] === held.rank[0] && rank[1] < held.rank[1])
    ) {
      byPath.set(path, { rank, kept });
    }
  }
  return [...plain.map((item) => item.error), ...[...byPath.values()].flatMap((held) => held.kept)];
}

/** ajv's `errors` on `document` as [{path, message}] in pydantic's words, each once. */
function issues(errors, document, compiled) {
  const pruned = pydanticErrors(grouped(standardErrors(errors, compiled)), compiled);
  // Never an invalid verdict without a reason: then ajv's own errors are the reasons.
  const all = pruned.length > 0 ? pruned : errors.filter((error) => error.keyword !== "if");
  const chosen = all.filter(
    // A discriminator's tag that is missing or not one of the tags has its own error
    // (`required`, `enum`), as in pydantic.
    (error) =>
      error.keyword !== "discriminator" ||
      !all.some(
        (other) =>
          other.instancePath === `${error.instancePath}/${error.params.tag}` ||
          (other.keyword === "required" && other.params.missingProperty === error.params.tag),
      ),
  );
  const missing = new Set(
    chosen
      .filter((e) => e.keyword === "required")
      .map((e) => `${e.instancePath}/${e.params.missingProperty}`),
  );
  const merged = new Set();
  const found = [];
  for (const error of chosen) {
    let [pointer, message] = [
      error.instancePath,
      MESSAGES[error.keyword]?.(error) ?? error.message,
    ];
    if (error.keyword === "required") {
      [pointer, message] = [`${pointer}/${error.params.missingProperty}`, MISSING];
    } else if (Object.hasOwn(UNKNOWN_KEY, error.keyword)) {
      const key = UNKNOWN_KEY[error.keyword](error);
      const known = [...declaredKeys(error.parentSchema, compiled)].sort();
      const [intended, hint] = intendedKey(key, known);
      const intendedPointer = `${pointer}/${intended}`;
      let text = hint;
      if (intended !== undefined && missing.has(intendedPointer)) {
        text += hint.endsWith("?") ? " it is required and missing" : "; it is required and missing";
        merged.add(intendedPointer); // one issue says both: drop the "missing" one
      }
      [pointer, message] = [`${pointer}/${key}`, `unknown key (${text})`];
    }
    found.push({ pointer, message });
  }
  const seen = new Set();
  return found
    .filter(({ pointer, message }) => !(message === MISSING && merged.has(pointer)))
    .filter(({ pointer, message }) => {
      const key = `${pointer}\n${message}`;
      return seen.has(key) ? false : seen.add(key);
    })
    .map(({ pointer, message }) => ({ path: documentPath(document, pointer), message }));
}
