// The YAML dialect of AgileRL documents, as Python reads it (agilerl/documents.py).
//
// YAML 1.2 core schema, plus what ruamel.yaml (`YAML(typ="rt")`, the Python loader)
// adds to the numbers of that schema:
//
//   - `_` digit separators: `1_000_000` -> 1000000, `1_0.5` -> 10.5, `1_e3` -> 1000;
//   - binary `0b101`, and a sign on hex/octal (`-0x10`, `+0o7`);
//   - a leading zero stays decimal (`010` -> 10, as in the core schema);
//   - an exponent without a sign is not allowed after a bare fraction (`-.5e3` is a
//     string, `-.5e+3` a float), ruamel's regular expression being so.
//
// Everything else is the core schema: `yes`/`no`/`on`/`off` are strings, an empty
// value and `~` are null, quoted scalars are strings, `<<` merge keys are merged. Only
// plain scalars are resolved by these tests: a quoted '1_000' stays a string.
//
// The number tags below are ports of ruamel.yaml's YAML 1.2 implicit resolvers and of
// its int/float constructors; tests/test_yaml_dialect.py holds the two loaders to the
// same JSON tree on every manifest and on a table of tricky scalars.

import YAML from "yaml";

const INT_TAG = "tag:yaml.org,2002:int";
const FLOAT_TAG = "tag:yaml.org,2002:float";

// ruamel.yaml's 1.2 resolvers (resolver.py); ruamel also looks a resolver up by the
// scalar's first character, hence the leading lookahead.
const INT_PATTERN = /^(?=[-+0-9])(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)$/;
const FLOAT_PATTERN = new RegExp(
  "^(?=[-+0-9.])(?:" +
    [
      "[-+]?(?:[0-9][0-9_]*)\\.[0-9_]*(?:[eE][-+]?[0-9]+)?",
      "[-+]?(?:[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)",
      "[-+]?\\.[0-9_]+(?:[eE][-+][0-9]+)?",
      "[-+]?\\.(?:inf|Inf|INF)",
      "\\.(?:nan|NaN|NAN)",
    ].join("|") +
    ")$",
);

/** ruamel's construct_yaml_int: underscores dropped, then sign and radix prefix. */
function resolveInt(source, onError) {
  let digits = source.replaceAll("_", "");
  let sign = 1;
  if (digits[0] === "-" || digits[0] === "+") {
    if (digits[0] === "-") sign = -1;
    digits = digits.slice(1);
  }
  let value;
  if (digits.startsWith("0b")) value = parseInt(digits.slice(2), 2);
  else if (digits.startsWith("0x")) value = parseInt(digits.slice(2), 16);
  else if (digits.startsWith("0o")) value = parseInt(digits.slice(2), 8);
  else value = parseInt(digits, 10);
  if (Number.isNaN(value)) {
    onError(`not an integer: ${source}`);
    return source;
  }
  return sign * value + 0; // + 0: -0 is plain 0, as a Python int is
}

/** ruamel's construct_yaml_float: underscores dropped, `.inf`/`.nan` by name. */
function resolveFloat(source, onError) {
  const text = source.replaceAll("_", "").toLowerCase();
  const sign = text[0] === "-" ? -1 : 1;
  const unsigned = text[0] === "-" || text[0] === "+" ? text.slice(1) : text;
  if (unsigned === ".inf") return sign * Number.POSITIVE_INFINITY;
  if (unsigned === ".nan") return Number.NaN;
  const value = Number(unsigned);
  if (unsigned === "" || Number.isNaN(value)) {
    onError(`not a float: ${source}`);
    return source;
  }
  return sign * value;
}

const stringifyNumber = (node) => String(node.value);

export const INT = {
  identify: (value) => Number.isInteger(value),
  default: true,
  tag: INT_TAG,
  test: INT_PATTERN,
  resolve: resolveInt,
  stringify: stringifyNumber,
};

export const FLOAT = {
  identify: (value) => typeof value === "number",
  default: true,
  tag: FLOAT_TAG,
  test: FLOAT_PATTERN,
  resolve: resolveFloat,
  stringify: stringifyNumber,
};

// An explicit `!!int` / `!!float` applies whatever the text looks like (`!!float 1` is
// 1.0, `!!int "1_000"` is 1000): these untested twins are what the tag name selects.
const EXPLICIT = [INT, FLOAT].map(({ test: _test, ...tag }) => ({ ...tag, default: false }));

/** The core schema's tags with its int and float tags replaced by ruamel's. */
function dialectTags(tags) {
  const others = tags.filter((tag) => tag.tag !== INT_TAG && tag.tag !== FLOAT_TAG);
  return [...others, INT, FLOAT, ...EXPLICIT];
}

export const PARSE_OPTIONS = Object.freeze({
  version: "1.2",
  schema: "core",
  customTags: dialectTags,
  merge: true,
  uniqueKeys: true,
});

/**
 * The plain value of the one YAML document in `text` (JSON is YAML too). Throws a
 * YAMLError naming line and column on malformed input or duplicate keys.
 */
export function parseDocument(text) {
  const doc = YAML.parseDocument(text, PARSE_OPTIONS);
  if (doc.errors.length > 0) throw doc.errors[0];
  return doc.toJS({ maxAliasCount: -1 });
}
