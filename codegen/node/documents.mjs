// The YAML dialect of AgileRL documents: the Node twin of agilerl/files/documents.py.
//
// YAML 1.2 core schema, plus `_` digit separators (one `_` between two digits of an
// integer, or of a float's digits before its exponent: `1_000_000`, `0.000_1`), explicit
// core tags on scalars (`!!str`, `!!int`, `!!float`, `!!bool`, `!!null`) and `<<` merge
// keys. `yes`/`no`/`on`/`off`, dates, `0b101`, `-0x10`, `_1`, `1_` and `1__0` are strings.
// Any other tag is refused, as are numbers JSON cannot carry (`.inf`, `.nan`, `1e400`),
// aliases adding more than MAX_ALIAS_NODES nodes, nesting deeper than MAX_DEPTH and
// files over MAX_DOCUMENT_BYTES or not UTF-8 (README, "Loading limits").
//
// The `yaml` package parses (failsafe schema: every scalar stays its text, every tag
// stays as written); the values are built here, under the same rules and with the same
// messages as the Python loader builds them from libyaml's events.
// tests/files/test_documents.py holds the two to the same trees and verdicts.

import YAML from "yaml";

export const MAX_DOCUMENT_BYTES = 1 << 20;
export const MAX_ALIAS_NODES = 10_000;
export const MAX_DEPTH = 100;

/** A document the dialect refuses; the message names `file:line:column` when known. */
export class DocumentError extends Error {}

/** A refused value, at `offset` of the text once the walk knows where. */
class Problem extends Error {
  constructor(message, offset) {
    super(message);
    this.offset = offset;
  }
}

const DIGITS = "[0-9]+(?:_[0-9]+)*";
const NAMED_FLOATS = new Map([
  ...["", "+"].flatMap((sign) =>
    ["inf", "Inf", "INF"].map((name) => [`${sign}.${name}`, Number.POSITIVE_INFINITY]),
  ),
  ...["inf", "Inf", "INF"].map((name) => [`-.${name}`, Number.NEGATIVE_INFINITY]),
  ...["nan", "NaN", "NAN"].map((name) => [`.${name}`, Number.NaN]),
]);
const NULLS = new Map(["", "~", "null", "Null", "NULL"].map((text) => [text, null]));
const BOOLS = new Map(
  ["true", "True", "TRUE", "false", "False", "FALSE"].map((text) => [text, "tT".includes(text[0])]),
);
const NUMBER_START = new Set("-+.0123456789");
const STR = "tag:yaml.org,2002:str";

const unsupported = (tag) => `unsupported YAML tag '${tag}' (JSON values only)`;
const short = (text) => (text.length <= 40 ? text : `${text.slice(0, 40)}...`);

const notFinite = (text) =>
  new Problem(`'${short(text)}' is not a finite number (JSON has no infinity or NaN)`);

/** One group per kind of number (the match's defined group names the kind). */
const NUMBER = new RegExp(
  `^(?:(?<int>[-+]?${DIGITS})|0o(?<octal>[0-7]+(?:_[0-7]+)*)` +
    "|0x(?<hex>[0-9a-fA-F]+(?:_[0-9a-fA-F]+)*)" +
    `|(?<float>[-+]?(?:\\.${DIGITS}|${DIGITS}(?:\\.(?:${DIGITS})?)?)(?:[eE][-+]?[0-9]+)?))$`,
);
const BASES = { int: 10, octal: 8, hex: 16 };

/**
 * The number `text` is in the dialect, or undefined if it is not one. JSON has no
 * infinity or NaN: `.inf`, `.nan` and numbers beyond a float throw.
 */
function numberValue(text) {
  const match = NUMBER.exec(text);
  if (match === null) {
    if (NAMED_FLOATS.has(text)) throw notFinite(text);
    return undefined;
  }
  const kind = Object.keys(BASES).find((name) => match.groups[name] !== undefined) ?? "float";
  const digits = match.groups[kind].replaceAll("_", "");
  const decimal = kind === "float" || kind === "int";
  const value = decimal ? Number(digits) : Number.parseInt(digits, BASES[kind]);
  if (!Number.isFinite(value)) throw notFinite(text);
  return kind === "float" ? value : value + 0; // + 0: -0 is plain 0, as a Python int is
}

/** The reader of an explicit number tag: a number of the dialect that `accepts` takes. */
function explicitNumber(name, accepts) {
  return (text) => {
    const value = numberValue(text);
    if (value === undefined || !accepts(text)) {
      throw new Problem(`'${short(text)}' is not a valid ${name}`);
    }
    return value;
  };
}

function fromTable(table, name) {
  return (text) => {
    if (!table.has(text)) throw new Problem(`'${short(text)}' is not a valid ${name}`);
    return table.get(text);
  };
}

const identity = (text) => text;

/** Explicit tags a scalar may carry, and how each reads the scalar's text. */
const SCALAR_TAGS = new Map([
  ["!", identity], // the non-specific tag: a string, as YAML says
  [STR, identity],
  ["tag:yaml.org,2002:int", explicitNumber("int", (text) => !NUMBER.exec(text).groups.float)],
  ["tag:yaml.org,2002:float", explicitNumber("float", () => true)],
  ["tag:yaml.org,2002:bool", fromTable(BOOLS, "bool")],
  ["tag:yaml.org,2002:null", fromTable(NULLS, "null")],
]);
/** Explicit tags a collection may carry (they say what it already is). */
const COLLECTION_TAGS = {
  seq: new Set([undefined, "!", "tag:yaml.org,2002:seq"]),
  map: new Set([undefined, "!", "tag:yaml.org,2002:map"]),
};

/** A plain (unquoted, untagged) scalar's value in the dialect. */
export function plainValue(text) {
  if (NUMBER_START.has(text[0])) return numberValue(text) ?? text;
  return NULLS.has(text) ? null : BOOLS.has(text) ? BOOLS.get(text) : text;
}

function scalarValue(node) {
  const text = node.source;
  if (node.tag === undefined) return node.type === "PLAIN" ? plainValue(text) : text;
  if (!SCALAR_TAGS.has(node.tag)) {
    throw new Problem(unsupported(node.tag));
  }
  return SCALAR_TAGS.get(node.tag)(text);
}

/**
 * Where a node starts, its properties (`&anchor`, `!tag`) included: libyaml, hence
 * Python, places a node there, the `yaml` package after them. The properties are the
 * tokens right before the value, on its line or the lines above.
 */
export function nodeStart(text, node) {
  let start = node.range[0];
  const properties = (node.anchor !== undefined) + (node.tag !== undefined);
  for (let found = 0; found < properties; found += 1) {
    let end = start;
    while (end > 0 && " \t\r\n".includes(text[end - 1])) end -= 1;
    let begin = end;
    while (begin > 0 && !" \t\r\n[]{},".includes(text[begin - 1])) begin -= 1;
    if (begin === end || (text[begin] !== "!" && text[begin] !== "&")) break;
    start = begin;
  }
  return start;
}

const MERGE = Symbol("<<");

function setKey(object, key, value) {
  // `__proto__` is a key like any other in a document, not the object's prototype.
  const property = { value, enumerable: true, writable: true, configurable: true };
  Object.defineProperty(object, key, property);
}

/** The value of the document's root node, built under the dialect's rules. */
function build(text, root) {
  const anchors = new Map(); // name -> {value, size}, the latest complete definition
  const open = []; // anchors of the collections being built
  let aliased = 0;

  const at = (node, action) => {
    try {
      return action();
    } catch (error) {
      if (error instanceof Problem && error.offset === undefined) {
        error.offset = nodeStart(text, node);
      }
      throw error;
    }
  };

  /** [value, nodes]: nodes counts scalars, keys included, and collections. */
  function walk(node, depth) {
    if (node === null || node === undefined) return [null, 1]; // an empty key or value
    let result;
    if (YAML.isAlias(node)) {
      const offset = node.range[0];
      if (open.includes(node.source)) {
        throw new Problem(`alias *${node.source} is inside the node it names`, offset);
      }
      const target = anchors.get(node.source);
      if (target === undefined) {
        throw new Problem(`alias *${node.source} has no anchor before it`, offset);
      }
      aliased += target.size;
      if (aliased > MAX_ALIAS_NODES) {
        const message =
          `aliases expand to more than ${MAX_ALIAS_NODES} nodes` + " (the limit of a document)";
        throw new Problem(message, offset);
      }
      return [target.value, target.size];
    }
    if (YAML.isScalar(node)) {
      result = [at(node, () => scalarValue(node)), 1];
    } else {
      const kind = YAML.isMap(node) ? "map" : "seq";
      at(node, () => {
        if (!COLLECTION_TAGS[kind].has(node.tag)) {
          throw new Problem(unsupported(node.tag));
        }
        if (depth >= MAX_DEPTH) throw new Problem(`nested more than ${MAX_DEPTH} levels deep`);
      });
      open.push(node.anchor);
      result = kind === "map" ? walkMap(node, depth + 1) : walkSeq(node, depth + 1);
      open.pop();
    }
    if (node.anchor !== undefined) anchors.set(node.anchor, { value: result[0], size: result[1] });
    return result;
  }

  function walkSeq(node, depth) {
    const items = [];
    let size = 1;
    for (const item of node.items) {
      const [value, nodes] = walk(item, depth);
      items.push(value);
      size += nodes;
    }
    return [items, size];
  }

  /** A mapping key: JSON keys are strings, so a key is the text it is written with. */
  function keyName(key, depth) {
    if (key === null || key === undefined) return ""; // `: x`, an empty key
    if (YAML.isAlias(key)) {
      const message = `alias *${key.source} as a mapping key (JSON keys are strings)`;
      throw new Problem(message, key.range[0]);
    }
    if (!YAML.isScalar(key)) {
      walk(key, depth); // its own problems first, as Python meets them
      const message = "a mapping key must be a scalar (JSON keys are strings)";
      throw new Problem(message, nodeStart(text, key));
    }
    if (key.tag !== undefined && !SCALAR_TAGS.has(key.tag)) {
      throw new Problem(unsupported(key.tag), nodeStart(text, key));
    }
    if (key.anchor !== undefined) anchors.set(key.anchor, { value: key.source, size: 1 });
    const plain = key.type === "PLAIN" && key.tag === undefined;
    return plain && key.source === "<<" ? MERGE : key.source;
  }

  function walkMap(node, depth) {
    const explicit = {};
    const sources = [];
    let size = 1;
    for (const { key, value } of node.items) {
      const name = keyName(key, depth);
      if (name !== MERGE && Object.hasOwn(explicit, name)) {
        const offset = key ? nodeStart(text, key) : node.range[0];
        throw new Problem(`duplicate key '${name}'`, offset);
      }
      size += 1;
      const [item, nodes] = walk(value, depth);
      size += nodes;
      if (name !== MERGE) {
        setKey(explicit, name, item);
        continue;
      }
      const merged = Array.isArray(item) ? item : [item];
      const isMapping = (source) =>
        source !== null && typeof source === "object" && !Array.isArray(source);
      if (!merged.every(isMapping)) {
        const offset = value ? nodeStart(text, value) : key.range[1];
        throw new Problem("a merge key (<<) takes a mapping or a list of mappings", offset);
      }
      sources.push(...merged);
    }
    if (sources.length === 0) return [explicit, size];
    const result = {};
    for (const source of sources) {
      for (const [name, item] of Object.entries(source)) {
        if (!Object.hasOwn(result, name)) setKey(result, name, item);
      }
    }
    for (const [name, item] of Object.entries(explicit)) setKey(result, name, item);
    return [result, size];
  }

  return walk(root, 0)[0];
}

export const PARSE_OPTIONS = Object.freeze({
  version: "1.2",
  schema: "failsafe", // scalars stay text; build() resolves them
  resolveKnownTags: false, // tags stay as written; build() judges them
  uniqueKeys: false, // build() compares keys by their values, as Python does
  merge: false, // build() merges, as Python does
});

/**
 * The plain value of the one YAML document in `text` (JSON is YAML too). Throws a
 * DocumentError whose message starts with `line:column:`.
 */
export function parseDocument(text) {
  return readDocument(text).value;
}

/** [line, column] (1-based) of `offset` in `text`, columns counted as libyaml counts. */
function position(text, lineCounter, offset) {
  const { line, col } = lineCounter.linePos(offset);
  // Columns count characters, as libyaml does, not UTF-16 units (an emoji is one).
  return [line, [...text.slice(offset - (col - 1), offset)].length + 1];
}

/**
 * `{value, locate}` of the one YAML document in `text`, as parseDocument reads it.
 * `locate(path)` ([key or index, ...]) gives the 1-based [line, column] of the node at
 * `path` (for a mapping's value, its key), or of its closest existing parent: where
 * agilerl/files/documents.py's locator places an error, so both name the same line.
 */
export function readDocument(text) {
  const lineCounter = new YAML.LineCounter();
  const doc = YAML.parseDocument(text, { ...PARSE_OPTIONS, lineCounter });
  const where = (offset) => position(text, lineCounter, offset).join(":");
  if (doc.errors.length > 0) {
    const [error] = doc.errors;
    const [message] = error.message.split("\n");
    throw new DocumentError(`${where(error.pos[0])}: not valid YAML: ${message}`);
  }
  let value;
  try {
    value = build(text, doc.contents);
  } catch (error) {
    if (!(error instanceof Problem)) throw error;
    throw new DocumentError(`${where(error.offset)}: ${error.message}`);
  }
  const locate = (path) => {
    let [node, found] = [doc.contents, [1, 1]];
    for (const part of path) {
      let child;
      if (YAML.isMap(node)) {
        // The last key with that text wins, as in Python (keys are compared as text).
        for (const { key, value: item } of node.items) {
          if (YAML.isScalar(key) && key.source === String(part)) {
            child = { node: item, at: nodeStart(text, key) };
          }
        }
      } else if (YAML.isSeq(node) && Number.isInteger(part) && part < node.items.length) {
        const item = node.items[part];
        child = item ? { node: item, at: nodeStart(text, item) } : undefined;
      }
      if (child === undefined) break;
      node = child.node;
      found = position(text, lineCounter, child.at);
    }
    return found;
  };
  return { value, locate };
}
