#!/usr/bin/env node
// Drive the built playground page in a real headless Chromium (playwright-core, the
// system's browser: no browser download) and print what the page reports:
//
//   node codegen/node/playground/drive.mjs CHROMIUM URL FILE...
//
// For each file: load the page, clear the editor, type the file's text key by key, press
// Validate, and read back the verdict, the located errors and the algorithm panel. Prints
// {"<file>": {"typed": bool, "valid": bool, "errors": [{"path", "line", "column",
// "message"}], "algorithm": str, "fields": [str], "names": [str]}}.
// tests/docs/test_playground.py compares it with `agilerl validate --format json`.

import { readFileSync } from "node:fs";

import { chromium } from "playwright-core";

// Flags for a machine with a closed network and no display (README, docs tests).
const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const [executablePath, url, ...files] = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node codegen/node/playground/drive.mjs CHROMIUM URL FILE...");
  process.exit(2);
}

// launch() starts each browser on a new, empty profile (--user-data-dir of its own).
const browser = await chromium.launch({ executablePath, args: FLAGS, headless: true });
const report = {};
try {
  const page = await browser.newPage();
  const problems = [];
  page.on("pageerror", (error) => problems.push(error.message));
  for (const file of files) {
    await page.goto(url);
    const editor = page.locator("#agilerl-pg-text");
    await editor.waitFor();
    await editor.fill("");
    const text = readFileSync(file, "utf8");
    await editor.pressSequentially(text);
    await page.click("#agilerl-pg-validate");
    report[file] = await page.evaluate((typed) => {
      const verdict = document.getElementById("agilerl-pg-verdict");
      const panel = document.getElementById("agilerl-pg-fields");
      return {
        typed: document.getElementById("agilerl-pg-text").value === typed,
        valid: verdict.dataset.valid === "true",
        errors: [...document.querySelectorAll("#agilerl-pg-errors li")].map((item) => ({
          path: item.dataset.path,
          line: Number(item.dataset.line),
          column: Number(item.dataset.column),
          message: item.dataset.message,
        })),
        algorithm: panel.dataset.algorithm,
        fields: [...panel.querySelectorAll("tr[data-field]")].map((row) => row.dataset.field),
        names: [...panel.querySelectorAll(".agilerl-pg-names code")].map(
          (code) => code.textContent,
        ),
      };
    }, text);
  }
  if (problems.length > 0) throw new Error(`the page raised: ${problems.join("; ")}`);
} finally {
  await browser.close();
}
process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
