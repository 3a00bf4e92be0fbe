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
//   node codegen/node/validate.mjs --schemas <dir> --spec <title> --issues <file>...
//       Prints {"<file>": {"valid": bool, "errors": [{"path", "line", "column",
//       "message"}]}}: each error as `agilerl validate --format json` reports it (dotted
//       path, where in the file, pydantic's words; check.mjs, shared with the docs'
//       playground). Exits 1 when any file is invalid.
//   node codegen/node/validate.mjs --dump <file>...
//       Prints {"<file>": <document as JSON>}: what the dialect reads from each file
//       (tests compare it with the Python loader's tree). Needs no schemas.
//
// Exit status 2 means bad usage or unreadable input.

import { readFileSync, readdirSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

import { UnknownSpecError, checkText, compileSchemas, validateDocument } from "./check.mjs";
import { DocumentError } from "./documents.mjs";
import { loadDocument, readText } from "./files.mjs";

class UsageError extends Error {}

/** codegen/rules.schema.json: the shape of the `x-agilerl-rules` keyword. */
function rulesSchema() {
  return JSON.parse(readFileSync(new URL("../rules.schema.json", import.meta.url), "utf8"));
}

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

function withFile(name, action) {
  try {
    return action();
  } catch (error) {
    throw new Error(`${name}: ${error.message}`, { cause: error });
  }
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
        issues: { type: "boolean", default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error.message);
  }
}

/**
 * Print each file's issues (check.mjs: what `agilerl validate --format json` reports,
 * located) and return 1 when any file is invalid.
 */
function printIssues(compiled, spec, files) {
  if (spec === undefined || files.length === 0) {
    throw new UsageError("--issues needs --spec <schema title> and document files");
  }
  const report = {};
  for (const file of files) {
    let text;
    try {
      text = readText(file);
    } catch (error) {
      if (!(error instanceof DocumentError)) throw error;
      report[file] = { valid: false, errors: [{ message: error.message }] };
      continue;
    }
    report[file] = checkText(compiled, spec, text);
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  return Object.values(report).every((result) => result.valid) ? 0 : 1;
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
    compiled = compileSchemas(loadSchemas(values.schemas), rulesSchema());
  } catch (error) {
    if (error.code === "ENOENT") throw new UsageError(error.message);
    console.error(`schema error: ${error.message}`);
    return 1;
  }
  if (values["compile-only"]) return 0;
  if (values.issues) return printIssues(compiled, values.spec, positionals);

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
    if (!(error instanceof UsageError || error instanceof UnknownSpecError)) throw error;
    console.error(`validate.mjs: ${error.message}`);
    process.exitCode = 2;
  }
}
