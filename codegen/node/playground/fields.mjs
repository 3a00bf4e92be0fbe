// What the playground offers beside the editor: the algorithms a manifest may name, and
// the fields of the one it names, read from manifest.schema.json and the algorithm's own
// schema (its `<Name>Fields` definition and the definitions it extends).

import { dereferenced } from "../check.mjs";

const MANIFEST = "manifest.schema.json";

/** The manifest's algorithm section: {names, sections: name -> section schema}. */
function algorithmSection(compiled) {
  const section = compiled.files.get(MANIFEST).properties.algorithm;
  const sections = new Map(section.oneOf.map((branch) => [branch.properties.name.const, branch]));
  return { names: section.properties.name.enum, sections };
}

/** The algorithm names a manifest may give. */
export function algorithmNames(compiled) {
  return algorithmSection(compiled).names;
}

/** A property's type as a reader writes it: `integer`, `number | null`, `'a' | 'b'`. */
function typeText(property, compiled) {
  const schema = dereferenced(property, compiled) ?? {};
  if (schema.enum) return schema.enum.map((value) => JSON.stringify(value)).join(" | ");
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.type) return [schema.type].flat().join(" | ");
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches) return branches.map((branch) => typeText(branch, compiled)).join(" | ");
  return schema.title ?? "any";
}

/** [[name, property]] declared by `schema`, through its `allOf` and `$ref`s, bases first. */
function declared(schema, compiled, seen = new Set()) {
  const target = dereferenced(schema, compiled);
  if (target === undefined || seen.has(target)) return [];
  seen.add(target);
  const inherited = (target.allOf ?? []).flatMap((base) => declared(base, compiled, seen));
  return [...inherited, ...Object.entries(target.properties ?? {})];
}

/**
 * The fields of algorithm `name` ([{name, type, default, description}], `name` left
 * out), or undefined when the manifest schema names no such algorithm.
 */
export function algorithmFields(compiled, name) {
  const section = algorithmSection(compiled).sections.get(name);
  if (section === undefined) return undefined;
  const fields = new Map();
  for (const [field, property] of declared(section, compiled)) {
    if (field === "name") continue;
    const target = dereferenced(property, compiled) ?? {};
    fields.set(field, {
      name: field,
      type: typeText(property, compiled),
      default: property.default ?? target.default,
      description: property.description ?? target.description ?? "",
    });
  }
  return [...fields.values()];
}
