// Rules of the models stated in standard JSON Schema keywords, read back as rules: the port
// of agilerl/models/standard_rules.py's reading (its `_parse`). A rule JSON Schema can state
// is an `allOf` entry (`if`/`then`) of the object it constrains; ajv enforces it like any
// schema, and check.mjs words its failure as the rule, as `agilerl validate` does.
//
// The forms (agilerl/models/standard_rules.py writes them; the Python schema lint refuses
// an entry that is not exactly one of them, so reading the shape is enough here):
//   requiredIf   {"if": {G: true}, "then": {F: not null}}
//   anyPositive  {"if": {F2..: <= 0}, "then": {F1: not <= 0}}
//   exactlyOne   {"if": {F1: not null}, "then": {F2: null}, "else": {"if": ..., "then": ...}}
//   ignoredWhen  {"if": {Q: V} or {"anyOf": [...]}, "then": {P (a path): not true}}
//   requiredWhen {"if": {Q: V, ...}, "then": {F: not null}} (one flag true: requiredIf)
//   forbiddenWhen {"if": {Q: V, ...}, "then": {F: null}}
//   exclusive    {"if": {F1: not null}, "then": {F2: null}}

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);
const WHERE_OBJECT = JSON.stringify({ type: "object" });
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The one property of `schema.properties`: [name, subschema]; throws otherwise. */
function only(schema) {
  const entries = Object.entries(schema?.properties ?? {});
  if (entries.length !== 1) throw new Error("not one property");
  return entries[0];
}

/** The dotted path of nested `properties` down to the subschema `leaf` accepts. */
function leafPath(schema, leaf) {
  const keys = [];
  for (;;) {
    if (JSON.stringify(schema.if) === WHERE_OBJECT) schema = schema.then;
    const [key, sub] = only(schema);
    keys.push(key);
    schema = sub;
    if (leaf(schema)) return [keys.join("."), schema];
  }
}

const isLeaf = (schema) => "const" in schema || "enum" in schema;
const values = (leaf) => ("const" in leaf ? [leaf.const] : [...leaf.enum]);

/** {path: values} of every condition of an `if` that all must hold. */
function conditions(condition) {
  const found = {};
  for (const [head, schema] of Object.entries(condition.properties)) {
    const [path, leaf] = leafPath({ properties: { [head]: schema } }, isLeaf);
    found[path] = values(leaf);
  }
  return found;
}

const because = (entry) => (entry.description !== undefined ? { because: entry.description } : {});

function parse(entry) {
  const condition = entry.if;
  const then = entry.then;
  if ("else" in entry) return { exactlyOne: [only(condition)[0], only(then)[0]] };
  const [field, check] = only(then);
  if (same(check, { not: { type: "null" } })) {
    const when = conditions(condition);
    const [[flag, held], ...others] = Object.entries(when);
    if (others.length === 0 && !flag.includes(".") && same(held, [true])) {
      return { field, requiredIf: flag };
    }
    return { field, requiredWhen: when };
  }
  if (same(check, { not: { type: "number", maximum: 0 } })) {
    return { anyPositive: [field, ...Object.keys(condition.properties)] };
  }
  if (same(check, { type: "null" })) {
    const [given, tested] = only(condition);
    if (same(tested, { not: { type: "null" } })) return { exclusive: [given, field] };
    return { field, forbiddenWhen: conditions(condition), ...because(entry) };
  }
  const [flag] = leafPath(then, (schema) => same(schema, { not: { const: true } }));
  const ignoredWhen = {};
  for (const holds of condition.anyOf ?? [condition]) {
    const [path, leaf] = leafPath(holds, isLeaf);
    ignoredWhen[path] = values(leaf);
  }
  return { flag, ignoredWhen, ...because(entry) };
}

/** Whether an `allOf` entry states a rule (not a section's choice of schema by `$ref`). */
export function isRuleStatement(entry) {
  return isObject(entry) && "if" in entry && !JSON.stringify(entry).includes('"$ref"');
}

/** The rule (an x-agilerl-rules entry, rules.mjs) an `allOf` entry states, or undefined. */
export function statedRule(entry) {
  if (!isRuleStatement(entry)) return undefined;
  try {
    return parse(entry);
  } catch {
    return undefined;
  }
}
