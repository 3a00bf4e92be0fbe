// The manifest playground of the docs site (docs/playground.md): the browser entry that
// build.mjs bundles with the schemas, the rules keyword's shape and the example manifests
// of configs/ (the `agilerl:playground-data` module). It validates with check.mjs, the
// module validate.mjs uses, so the page reports what `agilerl validate` reports.
//
// The page holds <div id="agilerl-playground"></div>; everything inside it is built here.
// Each verdict and error carries data-* attributes (tests/docs/test_playground.py reads
// them back).

import data from "agilerl:playground-data";

import { checkText, compileSchemas } from "../check.mjs";
import { readDocument } from "../documents.mjs";
import { algorithmFields, algorithmNames } from "./fields.mjs";

const SPEC = "TrainingManifest";
/** Milliseconds of quiet typing before the manifest is validated again. */
const QUIET_MS = 150;

let compiled; // built on first use: compiling every schema takes a moment

function element(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  node.append(...children);
  return node;
}

/** The editor: a textarea beside a gutter of line numbers kept in step with it. */
function editor() {
  const gutter = element("div", { class: "agilerl-pg-gutter", "aria-hidden": "true" });
  const text = element("textarea", {
    class: "agilerl-pg-text",
    id: "agilerl-pg-text",
    spellcheck: "false",
    autocomplete: "off",
    "aria-label": "manifest (YAML)",
    wrap: "off",
  });
  const number = () => {
    const lines = text.value.split("\n").length;
    gutter.textContent = Array.from({ length: lines }, (_, i) => i + 1).join("\n");
    gutter.scrollTop = text.scrollTop;
  };
  text.addEventListener("input", number);
  text.addEventListener("scroll", () => {
    gutter.scrollTop = text.scrollTop;
  });
  const box = element("div", { class: "agilerl-pg-editor" }, gutter, text);
  return { box, text, number };
}

/** Put the caret at 1-based `line`:`column` of the textarea. */
function moveTo(text, line, column) {
  const lines = text.value.split("\n");
  let offset = 0;
  for (let index = 0; index < line - 1 && index < lines.length; index += 1) {
    offset += lines[index].length + 1;
  }
  // columns count characters (code points), as the validator counts them
  offset += [...(lines[line - 1] ?? "")].slice(0, column - 1).join("").length;
  text.focus();
  text.setSelectionRange(offset, offset);
}

function renderVerdict(target, result) {
  const count = result.errors.length;
  target.dataset.valid = String(result.valid);
  target.className = `agilerl-pg-verdict ${result.valid ? "valid" : "invalid"}`;
  target.textContent = result.valid
    ? "valid"
    : `invalid: ${count} problem${count === 1 ? "" : "s"}`;
}

function renderErrors(list, result, text) {
  list.replaceChildren(
    ...result.errors.map(({ path, line, column, message }) => {
      const item = element(
        "li",
        {
          class: "agilerl-pg-error",
          "data-path": path,
          "data-line": String(line),
          "data-column": String(column),
          "data-message": message,
          title: "show in the editor",
        },
        `${line}:${column}: ${path}: ${message}`,
      );
      item.addEventListener("click", () => moveTo(text, line, column));
      return item;
    }),
  );
}

/** The side panel: the named algorithm's fields, or the names a manifest may give. */
function renderFields(panel, text) {
  let name;
  try {
    name = readDocument(text).value?.algorithm?.name;
  } catch {
    return; // text the dialect refuses: keep the panel as it was
  }
  const fields = typeof name === "string" ? algorithmFields(compiled, name) : undefined;
  if (fields === undefined) {
    const said = typeof name === "string" ? `Unknown algorithm ${JSON.stringify(name)}. ` : "";
    panel.dataset.algorithm = "";
    panel.replaceChildren(
      element("p", {}, `${said}algorithm.name is one of:`),
      element(
        "ul",
        { class: "agilerl-pg-names" },
        ...algorithmNames(compiled).map((known) => element("li", {}, element("code", {}, known))),
      ),
    );
    return;
  }
  panel.dataset.algorithm = name;
  const rows = fields.map((field) =>
    element(
      "tr",
      { "data-field": field.name },
      element("td", {}, element("code", {}, field.name)),
      element("td", {}, field.type),
      element("td", {}, field.default === undefined ? "" : JSON.stringify(field.default)),
      element("td", {}, field.description),
    ),
  );
  const head = element(
    "tr",
    {},
    ...["field", "type", "default", "description"].map((title) => element("th", {}, title)),
  );
  panel.replaceChildren(
    element("p", {}, `Fields of ${name} (algorithm section):`),
    element(
      "table",
      { class: "agilerl-pg-fields" },
      element("thead", {}, head),
      element("tbody", {}, ...rows),
    ),
  );
}

function mount(root) {
  if (root.dataset.mounted) return;
  root.dataset.mounted = "true";
  compiled ??= compileSchemas(data.schemas, data.rulesSchema);

  const { box, text, number } = editor();
  const examples = element(
    "select",
    { id: "agilerl-pg-example", "aria-label": "load an example manifest" },
    element("option", { value: "" }, "load an example…"),
    ...Object.keys(data.examples).map((name) => element("option", { value: name }, name)),
  );
  const button = element(
    "button",
    { id: "agilerl-pg-validate", type: "button", class: "md-button" },
    "Validate",
  );
  const verdict = element("div", { id: "agilerl-pg-verdict", "aria-live": "polite" });
  const errors = element("ol", { id: "agilerl-pg-errors", class: "agilerl-pg-errors" });
  const panel = element("aside", { id: "agilerl-pg-fields", class: "agilerl-pg-panel" });

  const validate = () => {
    const result = checkText(compiled, SPEC, text.value);
    renderVerdict(verdict, result);
    renderErrors(errors, result, text);
    renderFields(panel, text.value);
  };
  let timer;
  text.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(validate, QUIET_MS);
  });
  button.addEventListener("click", validate);
  examples.addEventListener("change", () => {
    if (!examples.value) return;
    text.value = data.examples[examples.value];
    number();
    validate();
  });

  const controls = element("div", { class: "agilerl-pg-controls" }, examples, button);
  const main = element("div", { class: "agilerl-pg-main" }, controls, box, verdict, errors);
  root.replaceChildren(element("div", { class: "agilerl-pg" }, main, panel));
  text.value = data.examples["ppo.yaml"] ?? "";
  number();
  validate();
}

function mountAll() {
  const root = document.getElementById("agilerl-playground");
  if (root) mount(root);
}

// Material for MkDocs' instant navigation swaps pages without loading scripts again; its
// `document$` tells each new page.
if (typeof window.document$?.subscribe === "function") window.document$.subscribe(mountAll);
else if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", mountAll);
else mountAll();
