// Validates an AsyncAPI document with the official parser (@asyncapi/parser): the AsyncAPI 3.0
// JSON Schema, the bindings' schemas, every message payload's schema, references, and the
// parser's ruleset. Prints every diagnostic; exits 1 if any has error severity (or the document
// cannot be read at all), 0 otherwise. Usage: node validate.mjs <document.json>
// (docs/messaging.md "The messaging contract: AsyncAPI").
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';

import { DiagnosticSeverity, Parser } from '@asyncapi/parser';

const path = process.argv[2];
if (!path) {
  console.error('usage: node validate.mjs <asyncapi.json>');
  process.exit(2);
}

const source = resolve(path);
const text = await readFile(source, 'utf8');
const { document, diagnostics } = await new Parser().parse(text, { source });

const names = {
  [DiagnosticSeverity.Error]: 'error',
  [DiagnosticSeverity.Warning]: 'warning',
  [DiagnosticSeverity.Information]: 'info',
  [DiagnosticSeverity.Hint]: 'hint',
};
for (const d of diagnostics) {
  const where = d.path.length ? d.path.join('/') : '(document)';
  console.log(`${names[d.severity] ?? d.severity} ${d.code} at ${where}: ${d.message}`);
}

const errors = diagnostics.filter((d) => d.severity === DiagnosticSeverity.Error).length;
if (errors > 0 || document === undefined) {
  console.error(`${path}: INVALID (${errors} error(s), ${diagnostics.length} diagnostic(s))`);
  process.exit(1);
}
console.log(
  `${path}: valid AsyncAPI ${document.version()}: ${document.channels().length} channels, ` +
    `${document.operations().length} operations, ${document.allMessages().length} messages ` +
    `(${diagnostics.length} non-error diagnostic(s))`,
);
