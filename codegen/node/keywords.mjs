// The non-standard keywords of schemas/, taught to an ajv instance.
//
// Strict mode rejects every keyword it does not know, so each one must be registered:
// `x-agilerl-rules` and `x-agilerl-renamed` validate (see rules.mjs, legacy.mjs), the
// others are annotations. Each is given
// the type of value it takes, so a misspelt or misused one still fails the schema lint.

import { RENAMED_KEYWORD, addRenamedKeyword, readOldKeys } from "./legacy.mjs";
import { RULES_KEYWORD, checkRules, schemaLookup } from "./rules.mjs";

/** Annotation-only keywords, with the JSON type of their value. */
const ANNOTATIONS = {
  // Algorithm facts read by the Python models (agent type, training loop, ...).
  "x-agilerl-algorithm": "object",
  // Python class a section is typed as by the code generator (datamodel-code-generator).
  customTypePath: "string",
  // Editor keywords (VS Code's JSON language service).
  markdownDescription: "string",
  deprecationMessage: "string",
  enumDescriptions: "array",
  markdownEnumDescriptions: "array",
  defaultSnippets: "array",
  doNotSuggest: "boolean",
};

// JSON Pointer (RFC 6901) escaping of one reference token.
function pointerToken(name) {
  return String(name).replaceAll("~", "~0").replaceAll("/", "~1");
}

/**
 * ajv validate function of `x-agilerl-rules`. ajv calls it with the object instance
 * (the keyword is declared for type "object" only) and reads the errors from
 * `validateRules.errors`.
 */
function validateRules(rules, data, parentSchema, dataCxt) {
  const errors = [];
  // old spellings of keys read under their new names, violations reported where written
  const [read, readAs] = readOldKeys(parentSchema[RENAMED_KEYWORD], data);
  for (const violation of checkRules(rules, schemaLookup(read, parentSchema))) {
    const field = readAs[violation.field] ?? violation.field;
    errors.push({
      // Set here because ajv would otherwise report every violation at the object;
      // ajv keeps an instancePath a custom keyword provides and fills in schemaPath.
      instancePath:
        `${dataCxt?.instancePath ?? ""}/` +
        [field, ...(violation.at ?? [])].map(pointerToken).join("/"),
      keyword: RULES_KEYWORD,
      message: violation.message,
      params: { field: violation.field },
    });
  }
  validateRules.errors = errors;
  return errors.length === 0;
}

/**
 * Register every AgileRL schema keyword on `ajv`; returns `ajv`. `rulesSchema` is
 * codegen/rules.schema.json, the keyword's own shape (shared with the Python schema
 * lint): ajv checks each value against it when a schema is compiled. The caller reads
 * it (a file in Node, an import in the browser bundle), so this module needs neither.
 */
export function addAgileRLKeywords(ajv, rulesSchema) {
  // validated as a plain subschema of the keyword
  const { $schema, $id, ...metaSchema } = rulesSchema;
  ajv.addKeyword({
    keyword: RULES_KEYWORD,
    type: "object",
    schemaType: "array",
    metaSchema,
    errors: true,
    validate: validateRules,
  });
  addRenamedKeyword(ajv);
  for (const [keyword, schemaType] of Object.entries(ANNOTATIONS)) {
    ajv.addKeyword({ keyword, schemaType });
  }
  return ajv;
}
