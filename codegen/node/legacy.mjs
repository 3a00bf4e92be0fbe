// The `x-agilerl-renamed` schema keyword: AgileRL's old spellings of keys.
//
// A port of agilerl/models/legacy.py (its docstring is the definition; keep the
// messages in step). An object schema whose value is `{old: new, ...}` declares each old
// key (deprecated, in `patternProperties`) as another name of `new`: a document may
// write either; both with different values is an error at the old key, as nothing says
// which was meant. Every old key found is a deprecation: the Python loader warns and reads
// it under its new name. ajv has no warnings, so the keyword records them in the list
// `collectDeprecations` hands out while it runs a validation.

export const RENAMED_KEYWORD = "x-agilerl-renamed";

/** `a == b` as JSON compares values (Python's json_equal). */
export function jsonEqual(a, b) {
  if (Array.isArray(a) || Array.isArray(b)) {
    return (
      Array.isArray(a) &&
      Array.isArray(b) &&
      a.length === b.length &&
      a.every((item, index) => jsonEqual(item, b[index]))
    );
  }
  if (a !== null && b !== null && typeof a === "object" && typeof b === "object") {
    const keys = Object.keys(a);
    return (
      keys.length === Object.keys(b).length &&
      keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]))
    );
  }
  return a === b;
}

const quoted = (name) => `'${name}'`;

/** What a warning says of an old key (deprecated_message). */
export function deprecatedMessage(old, renamed) {
  const name = quoted(renamed);
  return `deprecated: AgileRL's old name of ${name}, read as ${name}; write ${name}`;
}

/** An old key given with its new name and the same value (both_given_message). */
export function bothGivenMessage(old, renamed) {
  return (
    `deprecated: AgileRL's old name of ${quoted(renamed)}, which is given too, with the ` +
    `same value; it is read once; remove ${quoted(old)}`
  );
}

/** An old key given with its new name and another value (conflict_message). */
export function conflictMessage(old, renamed) {
  const name = quoted(renamed);
  return `AgileRL's old name of ${name}, and ${name} is given too, with another value: keep one of the two keys`;
}

/**
 * `data` as its cross-field rules read it (old keys under their new names) and
 * {new: old} where a value came from an old key, so that a rule it breaks is reported at
 * the key the document wrote (read_old_keys).
 */
export function readOldKeys(renamed, data) {
  const readAs = {};
  if (renamed === undefined || !Object.keys(renamed).some((old) => Object.hasOwn(data, old))) {
    return [data, readAs];
  }
  let read = { ...data };
  for (const [old, name] of Object.entries(renamed)) {
    if (!Object.hasOwn(read, old)) continue;
    if (!Object.hasOwn(read, name)) {
      readAs[name] = old;
      read = Object.fromEntries(Object.entries(read).map(([k, v]) => [k === old ? name : k, v]));
    } else {
      delete read[old];
    }
  }
  return [read, readAs];
}

let collecting = null;

/** Run `validate()`; returns [its result, [{pointer, message}] of the old keys seen]. */
export function collectDeprecations(validate) {
  const outer = collecting;
  collecting = new Map();
  try {
    const result = validate();
    return [result, [...collecting.values()]];
  } finally {
    collecting = outer;
  }
}

function pointerToken(name) {
  return String(name).replaceAll("~", "~0").replaceAll("/", "~1");
}

/** ajv validate function of the keyword: conflicts are errors, old keys are recorded. */
function validateRenamed(renamed, data, parentSchema, dataCxt) {
  const errors = [];
  for (const [old, name] of Object.entries(renamed)) {
    if (!Object.hasOwn(data, old)) continue;
    const pointer = `${dataCxt?.instancePath ?? ""}/${pointerToken(old)}`;
    if (!Object.hasOwn(data, name)) {
      collecting?.set(pointer, { pointer, message: deprecatedMessage(old, name) });
    } else if (jsonEqual(data[old], data[name])) {
      collecting?.set(pointer, { pointer, message: bothGivenMessage(old, name) });
    } else {
      errors.push({
        instancePath: pointer,
        keyword: RENAMED_KEYWORD,
        message: conflictMessage(old, name),
        params: { renamed: name },
      });
    }
  }
  validateRenamed.errors = errors;
  return errors.length === 0;
}

/** Teach `ajv` the keyword (keywords.mjs calls it); returns `ajv`. */
export function addRenamedKeyword(ajv) {
  ajv.addKeyword({
    keyword: RENAMED_KEYWORD,
    type: "object",
    schemaType: "object",
    metaSchema: { type: "object", additionalProperties: { type: "string", minLength: 1 } },
    errors: true,
    validate: validateRenamed,
  });
  return ajv;
}
