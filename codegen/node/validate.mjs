#!/usr/bin/env node
// Validate AgileRL spec documents against schemas/ with ajv: the schemas as any
// JavaScript tool sees them.
//
//   node codegen/node/validate.mjs --schemas <dir> --compile-only
//       Strict-mode lint: compile every *.schema.json; exit 1 naming the first problem.
//   node codegen/node/validate.mjs --schemas <dir> --corpus <file.json>
//       <file.json> is [{"id": str, "spec": "<schema title>", "document": ...}, ...].
//       Prints {"<id>": {"valid": bool, "errors": [{"path", "message", "keyword",
//       "params"}]}} (path: JSON Pointer of the instance) and exits 0 whatever the
//       verdicts, as it reports rather than judges.
//   node codegen/node/validate.mjs --schemas <dir> --spec <title> <file>...
//       Each file (the YAML dialect of documents.mjs, so JSON too) is one document of
//       <title> (`--spec TrainingManifest` for manifests). Prints the same report keyed
//       by file name; exits 1 when any file is invalid. A file the dialect refuses
//       (bad YAML, over a limit, not UTF-8) is invalid with one error of keyword
//       "document" whose message is the Python loader's, and the other files go on.
//   node codegen/node/validate.mjs --dump <file>...
//       Prints {"<file>": <document as JSON>}: what the dialect reads from each file
//       (tests compare it with the Python loader's tree). Needs no schemas.
//
// Exit status 2 means bad usage or unreadable input.

import { readFileSync, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import Ajv2020 from "ajv/dist/2020.js";
import { DocumentError, loadDocument } from "./documents.mjs";
import { addAgileRLKeywords } from "./keywords.mjs";

export const AJV_OPTIONS = {
  strict: true,
  // strictRequired (implied by strict) wants every `required` name declared in
  // `properties` of the same schema object. Our discriminated unions (EncoderConfig in
  // network.schema.json) require the `arch` tag at the union level, where ajv's own
  // discriminator documentation puts it, and declare it only inside each branch.
  strictRequired: false,
  allErrors: true,
  discriminator: true,
};

class UsageError extends Error {}

/** Every *.schema.json of `dir`, parsed, in file-name order. */
export function loadSchemas(dir) {
  return readdirSync(dir)
    .filter((name) => name.endsWith(".schema.json"))
    .sort()
    .map((name) => ({
      name,
      schema: withFile(name, () => JSON.parse(readFileSync(join(dir, name), "utf8"))),
    }));
}

/**
 * An ajv instance holding every schema, each compiled (so strict mode has checked them
 * all), and `byTitle`: schema title -> compiled validate function. Throws on the first
 * schema problem, naming the file.
 */
export function compileSchemas(schemas) {
  const ajv = addAgileRLKeywords(new Ajv2020(AJV_OPTIONS));
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
  return { ajv, byTitle };
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

function withFile(name, action) {
  try {
    return action();
  } catch (error) {
    throw new Error(`${name}: ${error.message}`, { cause: error });
  }
}

/** {valid, errors} of one document, in the report's format. */
export function validateDocument(byTitle, spec, document) {
  const validate = byTitle.get(spec);
  if (validate === undefined) {
    const known = [...byTitle.keys()].sort().join(", ");
    throw new UsageError(`no schema titled ${JSON.stringify(spec)}; known: ${known}`);
  }
  const valid = validate(document);
  const errors = (validate.errors ?? []).map(({ instancePath, message, keyword, params }) => ({
    path: instancePath,
    message,
    keyword,
    params,
  }));
  return { valid, errors };
}

function readJson(file) {
  try {
    return JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw new UsageError(`cannot read ${file}: ${error.message}`);
  }
}

/** The document in `file` (documents.mjs: its dialect and limits). */
function readYaml(file) {
  try {
    return loadDocument(file);
  } catch (error) {
    if (!(error instanceof DocumentError)) throw error;
    throw new UsageError(`cannot read ${error.message}`);
  }
}

/** A file's report entry when it cannot be read as a document (the batch goes on). */
function unreadable(error) {
  const problem = { path: "", message: error.message, keyword: "document", params: {} };
  return { valid: false, errors: [problem] };
}

/** The corpus file as [{id, spec, document}]. */
function corpusEntries(file) {
  const corpus = readJson(file);
  if (!Array.isArray(corpus)) throw new UsageError(`${file}: the corpus must be a JSON array`);
  return corpus.map((entry, index) => {
    if (typeof entry?.id !== "string" || typeof entry.spec !== "string" || !("document" in entry)) {
      throw new UsageError(
        `${file}: entry ${index} needs a string "id", a string "spec" and a "document"`,
      );
    }
    return entry;
  });
}

function parseCommandLine(argv) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        schemas: { type: "string" },
        "compile-only": { type: "boolean", default: false },
        corpus: { type: "string" },
        spec: { type: "string" },
        dump: { type: "boolean", default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error.message);
  }
}

/** Run the CLI; returns the exit status. */
export function main(argv) {
  const { values, positionals } = parseCommandLine(argv);
  if (values.dump) {
    if (positionals.length === 0) throw new UsageError("--dump needs document files");
    const dumped = Object.fromEntries(positionals.map((file) => [file, readYaml(file)]));
    process.stdout.write(`${JSON.stringify(dumped, null, 2)}\n`);
    return 0;
  }
  if (values.schemas === undefined) throw new UsageError("--schemas <dir> is required");
  if (values.corpus !== undefined && positionals.length > 0) {
    throw new UsageError("give either --corpus or document files, not both");
  }
  if (positionals.length > 0 && values.spec === undefined) {
    throw new UsageError("document files need --spec <schema title>");
  }

  let compiled;
  try {
    compiled = compileSchemas(loadSchemas(values.schemas));
  } catch (error) {
    if (error.code === "ENOENT") throw new UsageError(error.message);
    console.error(`schema error: ${error.message}`);
    return 1;
  }
  if (values["compile-only"]) return 0;

  const entries =
    values.corpus !== undefined
      ? corpusEntries(values.corpus)
      : positionals.map((file) => {
          try {
            return { id: file, spec: values.spec, document: loadDocument(file) };
          } catch (error) {
            if (!(error instanceof DocumentError)) throw error;
            return { id: file, spec: values.spec, refused: unreadable(error) };
          }
        });
  if (entries.length === 0) {
    throw new UsageError("nothing to validate: give --corpus, files or --compile-only");
  }

  const report = {};
  for (const { id, spec, document, refused } of entries) {
    if (Object.hasOwn(report, id)) throw new UsageError(`duplicate id ${JSON.stringify(id)}`);
    report[id] = refused ?? validateDocument(compiled.byTitle, spec, document);
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  const allValid = Object.values(report).every((result) => result.valid);
  return values.corpus !== undefined || allValid ? 0 : 1;
}

// Run only as a script, so the functions above can also be imported.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`validate.mjs: ${error.message}`);
    process.exitCode = 2;
  }
}
