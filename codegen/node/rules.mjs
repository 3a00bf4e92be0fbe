// The `x-agilerl-rules` schema keyword: cross-field rules JSON Schema cannot express.
//
// A line-for-line port of agilerl/models/rules.py, whose module docstring is the
// definition: keep the two in step (tests/schemas/test_cross_language.py holds them to the same
// verdicts and error paths). The kinds JSON Schema can state (requiredIf to exclusive)
// are written in standard keywords in schemas/ (allOf if/then entries, read back into
// these rules by standard_rules.mjs so check.mjs words them as the rules); the keyword
// itself holds only the comparisons (codegen/rules.schema.json). In short, the keyword's
// value is a list of rules, each one of
//
//   {"field": F, "atMost": B}        every measure of F is <= the value of B
//   {"field": F, "below": B}         every measure of F is <  the value of B
//   {"field": F, "within": [L, H]}   L <= every measure of F <= H
//   {"sameLength": [F1, F2, ...]}    the listed arrays all have the length of F1
//   {"field": F, "requiredIf": G}    F is not null when G is true
//   {"anyPositive": [F1, F2, ...]}   at least one of the listed numbers is above 0 (at F1)
//   {"exactlyOne": [F1, F2, ...]}    exactly one of the listed properties is not null (at
//                                    F1 when none is, else at the second one given)
//   {"field": F, "key": K, "sameAs": G}  where object F holds K, it equals G's K (at F)
//   {"field": F, "increasing": true}  the numbers of array F strictly increase (at F)
//   {"flag": P, "ignoredWhen": {Q: [V, ...], ...}}  flag P is not true where some Q holds
//                                    one of its values (at P; optional "because": why)
//   {"field": F, "requiredWhen": {Q: [V, ...], ...}}  F is not null where every Q holds
//                                    one of its values (null matches an absent Q)
//   {"field": F, "forbiddenWhen": {Q: [V, ...], ...}}  F is null where every Q holds one
//                                    of its values (optional "because": why)
//   {"exclusive": [F1, F2, ...]}     at most one of them is not null (at the second given)
//
// with an optional "measure" on the first three: "value" (default), "length" or "items".
// P and Q are paths: a property, or a property and the keys below it joined by dots
// ("network.simba"); below the property a path reads the document as written.
// An absent property takes its schema default; a rule whose operands are null, missing
// or of the wrong type is skipped (the ordinary keywords report those).

export const RULES_KEYWORD = "x-agilerl-rules";

// Python's rules exclude bool and NaN; JSON.parse never yields NaN, and JavaScript
// booleans are not numbers, so typeof is the whole test here.
function isNumber(value) {
  return typeof value === "number" && !Number.isNaN(value);
}

/** The numbers a rule compares for `value`, or null when the rule does not apply. */
function measures(value, measure) {
  if (measure === "value") return isNumber(value) ? [value] : null;
  if (!Array.isArray(value)) return null;
  if (measure === "length") return [value.length];
  return value.filter(isNumber);
}

const SUBJECT = {
  value: (field) => field,
  length: (field) => `length of ${field}`,
  items: (field) => `every item of ${field}`,
};

const AT_MOST = { expected: "<=", holds: (x, bound) => x <= bound };
const AT_LEAST = { expected: ">=", holds: (x, bound) => x >= bound };
const BELOW = { expected: "<", holds: (x, bound) => x < bound };

/** [boundName, comparison] pairs a field rule checks, in the Python order. */
function comparisons(rule) {
  if ("within" in rule) {
    const [low, high] = rule.within;
    return [
      [low, AT_LEAST],
      [high, AT_MOST],
    ];
  }
  if ("atMost" in rule) return [[rule.atMost, AT_MOST]];
  return [[rule.below, BELOW]];
}

/**
 * Yield the violations of `rules` as {field, value, message}; `lookup(name)` gives a
 * property's value and must already apply the schema default for absent properties.
 */
export function* checkRules(rules, lookup) {
  for (const rule of rules) {
    if ("sameLength" in rule) {
      yield* checkSameLength(rule.sameLength, lookup);
      continue;
    }
    if ("requiredIf" in rule) {
      yield* checkRequiredIf(rule.field, rule.requiredIf, lookup);
      continue;
    }
    if ("anyPositive" in rule) {
      yield* checkAnyPositive(rule.anyPositive, lookup);
      continue;
    }
    if ("exactlyOne" in rule) {
      yield* checkExactlyOne(rule.exactlyOne, lookup);
      continue;
    }
    if ("increasing" in rule) {
      yield* checkIncreasing(rule.field, lookup);
      continue;
    }
    if ("sameAs" in rule) {
      yield* checkSameAs(rule.field, rule.key, rule.sameAs, lookup);
      continue;
    }
    if ("requiredWhen" in rule) {
      yield* checkConditional(rule.field, rule.requiredWhen, true, undefined, lookup);
      continue;
    }
    if ("forbiddenWhen" in rule) {
      yield* checkConditional(rule.field, rule.forbiddenWhen, false, rule.because, lookup);
      continue;
    }
    if ("exclusive" in rule) {
      yield* checkExclusive(rule.exclusive, lookup);
      continue;
    }
    if ("ignoredWhen" in rule) {
      yield* checkIgnoredFlag(rule.flag, rule.ignoredWhen, rule.because, lookup);
      continue;
    }
    const { field } = rule;
    const measure = rule.measure ?? "value";
    const value = lookup(field);
    const found = measures(value, measure);
    if (!found || found.length === 0) continue;
    const subject = SUBJECT[measure](field);
    for (const [boundName, { expected, holds }] of comparisons(rule)) {
      const bound = lookup(boundName);
      if (!isNumber(bound)) continue;
      const bad = found.filter((x) => !holds(x, bound));
      if (bad.length > 0) {
        yield {
          field,
          value,
          message: `${subject} must be ${expected} ${boundName} (${bound}), got ${bad[0]}`,
        };
      }
    }
  }
}

function* checkIncreasing(field, lookup) {
  const value = lookup(field);
  if (!Array.isArray(value)) return;
  const numbers = value.filter(isNumber);
  for (let i = 0; i + 1 < numbers.length; i += 1) {
    if (!(numbers[i] < numbers[i + 1])) {
      yield {
        field,
        value,
        message:
          `${field} must strictly increase, got ${numbers[i]} then ${numbers[i + 1]} ` +
          `(items ${i} and ${i + 1})`,
      };
      return;
    }
  }
}

function* checkRequiredIf(field, flag, lookup) {
  const value = lookup(field);
  if (lookup(flag) === true && (value === null || value === undefined)) {
    yield { field, value: null, message: `${field} is required when ${flag} is true` };
  }
}

function* checkExactlyOne(fields, lookup) {
  const listed = fields.join(", ");
  const given = fields
    .map((name) => [name, lookup(name)])
    .filter(([, value]) => value !== null && value !== undefined);
  if (given.length === 1) return;
  if (given.length === 0) {
    yield { field: fields[0], value: null, message: `one of ${listed} is required, none is given` };
    return;
  }
  const [[first], [second, value]] = given;
  yield { field: second, value, message: `give only one of ${listed}: ${first} is given too` };
}

function* checkAnyPositive(fields, lookup) {
  const values = fields.map(lookup);
  if (values.every((value) => isNumber(value) && value <= 0)) {
    yield {
      field: fields[0],
      value: values[0],
      message: `at least one of ${fields.join(", ")} must be above 0, all are 0 or below`,
    };
  }
}

const isObject = (value) => typeof value === "object" && value !== null && !Array.isArray(value);

function* checkSameAs(field, key, other, lookup) {
  const mine = lookup(field);
  const theirs = lookup(other);
  if (!isObject(mine) || !isObject(theirs)) return;
  const value = mine[key];
  const expected = theirs[key];
  if (!isNumber(value) || !isNumber(expected) || value === expected) return;
  yield {
    field,
    value,
    message: `${field}.${key} must equal ${other}.${key} (${expected}), got ${value}`,
  };
}

/** The value at `path` ("network.simba"): the property (its default applying), then the
 * keys below it as written; undefined where an object on the way does not hold one. */
function readPath(path, lookup) {
  const [head, ...keys] = path.split(".");
  let value = lookup(head);
  for (const key of keys) {
    value = isObject(value) && Object.hasOwn(value, key) ? value[key] : undefined;
  }
  return value;
}

/** A schema constant as JSON writes it (numbers as Python's rules.py writes them). */
function jsonText(value) {
  return JSON.stringify(value);
}

function* checkIgnoredFlag(flag, conditions, because, lookup) {
  if (readPath(flag, lookup) !== true) return;
  const [field, ...at] = flag.split(".");
  const reason = because ? `: ${because}` : ": it would be ignored";
  for (const [path, values] of Object.entries(conditions)) {
    const value = readPath(path, lookup);
    // Scalars only (the keyword's meta-schema): JSON equality is ===, true is not 1.
    const expected = values.find((candidate) => candidate === value);
    if (expected !== undefined) {
      yield {
        field,
        at,
        value: true,
        message: `${flag} must not be true when ${path} is ${jsonText(expected)}${reason}`,
      };
      return;
    }
  }
}

const isNull = (value) => value === null || value === undefined;

function* checkConditional(field, conditions, required, because, lookup) {
  const value = lookup(field);
  if (isNull(value) !== required) return; // present where required, absent where forbidden
  const held = [];
  for (const [path, values] of Object.entries(conditions)) {
    const found = readPath(path, lookup) ?? null;
    // Scalars and null only (the keyword's meta-schema): JSON equality is ===.
    if (!values.some((candidate) => candidate === found)) return;
    held.push(`${path} is ${jsonText(found)}`);
  }
  const when = held.join(" and ");
  if (required) {
    yield { field, value: null, message: `${field} is required when ${when}` };
  } else {
    const reason = because ? `: ${because}` : "";
    yield { field, value, message: `${field} must be left out when ${when}${reason}` };
  }
}

function* checkExclusive(fields, lookup) {
  const given = fields.filter((name) => !isNull(lookup(name)));
  if (given.length < 2) return;
  const [first, second] = given;
  yield {
    field: second,
    value: lookup(second),
    message: `${second} cannot be given with ${first}: give one of ${fields.join(", ")}`,
  };
}

function* checkSameLength(fields, lookup) {
  const [first, ...others] = fields;
  const reference = lookup(first);
  if (!Array.isArray(reference)) return;
  for (const other of others) {
    const value = lookup(other);
    if (Array.isArray(value) && value.length !== reference.length) {
      yield {
        field: other,
        value,
        message:
          `${other} must have one entry per entry of ${first} (${reference.length}), ` +
          `got ${value.length}`,
      };
    }
  }
}

/** A `lookup` over a JSON instance that falls back to the schema's defaults. */
export function schemaLookup(instance, schema) {
  const properties = schema.properties ?? {};
  return (name) => {
    if (Object.hasOwn(instance, name)) return instance[name];
    return Object.hasOwn(properties, name) ? properties[name].default : undefined;
  };
}
