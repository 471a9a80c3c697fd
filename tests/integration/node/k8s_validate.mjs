// k8s_validate.mjs - validates Kubernetes objects against the API's OpenAPI schemas.
//
// Reads a JSON array of objects on stdin (the YAML documents, parsed by the caller) and
// validates each with the model of its apiVersion and kind from the kubernetes-models package
// (JSON schemas generated from the Kubernetes OpenAPI spec: types, required fields, enums).
// Prints a JSON array with one entry per object: {"kind", "name", "errors": [...]}; an object
// whose apiVersion/kind has no model gets an error too. Exit status 0 even when objects are
// invalid: the caller decides. Unknown fields are not checked here (the schemas allow them);
// test_deploy.py checks those against the models' type declarations.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

function modelPath(apiVersion) {
  // "v1" -> kubernetes-models/v1, "apps/v1" -> kubernetes-models/apps/v1
  return "kubernetes-models/" + apiVersion;
}

async function readStdin() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

const docs = JSON.parse(await readStdin());
const out = [];
for (const doc of docs) {
  const entry = { kind: doc.kind, name: doc.metadata && doc.metadata.name, errors: [] };
  out.push(entry);
  let mod;
  try {
    mod = require(modelPath(doc.apiVersion));
  } catch (e) {
    entry.errors.push(`no models for apiVersion ${doc.apiVersion}`);
    continue;
  }
  const Model = mod[doc.kind];
  if (typeof Model !== "function") {
    entry.errors.push(`no kind ${doc.kind} in ${doc.apiVersion}`);
    continue;
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    for (const line of String(e.message).split("\n")) if (line.trim()) entry.errors.push(line.trim());
  }
}
process.stdout.write(JSON.stringify(out) + "\n");
