#!/usr/bin/env node
// Bundle the manifest playground for the docs site:
//
//   node codegen/node/playground/build.mjs OUT
//
// writes OUT/playground.js (entry.mjs with ajv, yaml, check.mjs and the data below, for
// any browser, no server needed) and OUT/playground.css. The data module
// `agilerl:playground-data` embeds, as they are at build time, every schemas/*.schema.json,
// codegen/rules.schema.json and the example manifests configs/*.yaml. docs/hooks/playground.py
// runs this at each docs build: the bundle is never committed.

import { copyFileSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { build } from "esbuild";

import { loadSchemas } from "../validate.mjs";

const HERE = fileURLToPath(new URL(".", import.meta.url));
const ROOT = join(HERE, "..", "..", "..");
const DATA = "agilerl:playground-data";

function playgroundData() {
  const configs = join(ROOT, "configs");
  const examples = Object.fromEntries(
    readdirSync(configs)
      .filter((name) => name.endsWith(".yaml"))
      .sort()
      .map((name) => [name, readFileSync(join(configs, name), "utf8")]),
  );
  return {
    schemas: loadSchemas(join(ROOT, "schemas")),
    rulesSchema: JSON.parse(readFileSync(join(ROOT, "codegen", "rules.schema.json"), "utf8")),
    examples,
  };
}

/** esbuild plugin answering `import data from "agilerl:playground-data"`. */
const dataPlugin = {
  name: "agilerl-playground-data",
  setup(builder) {
    builder.onResolve({ filter: /^agilerl:playground-data$/ }, () => ({
      path: DATA,
      namespace: "agilerl",
    }));
    builder.onLoad({ filter: /.*/, namespace: "agilerl" }, () => ({
      contents: JSON.stringify(playgroundData()),
      loader: "json",
    }));
  },
};

const [out] = process.argv.slice(2);
if (out === undefined) {
  console.error("usage: node codegen/node/playground/build.mjs OUT");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(HERE, "entry.mjs")],
  bundle: true,
  format: "iife",
  platform: "browser",
  target: "es2020",
  minify: true,
  legalComments: "eof",
  outfile: join(out, "playground.js"),
  plugins: [dataPlugin],
  logLevel: "warning",
});
copyFileSync(join(HERE, "playground.css"), join(out, "playground.css"));
