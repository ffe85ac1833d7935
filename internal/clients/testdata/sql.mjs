// sql.mjs runs SQL statements on a DuckDB file, read-only, with one
// @duckdb/node-api client (extension autoloading off), and prints as JSON
// each statement's error, or null when it ran.
//
//   node sql.mjs CLIENTS MODULE FILE < statements.json
//
// statements.json is a JSON array of statements; CLIENTS and MODULE are as
// read.mjs takes them.
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [clients, mod, file] = process.argv.slice(2);
const { DuckDBInstance } = await import(pathToFileURL(createRequire(join(clients, 'package.json')).resolve(mod)).href);
const inst = await DuckDBInstance.create(file, {
  access_mode: 'READ_ONLY',
  autoinstall_known_extensions: 'false',
  autoload_known_extensions: 'false',
});
const con = await inst.connect();
const out = [];
for (const sql of JSON.parse(readFileSync(0, 'utf8'))) {
  try {
    await con.runAndReadAll(sql);
    out.push(null);
  } catch (e) {
    out.push(String(e && e.message ? e.message : e));
  }
}
process.stdout.write(JSON.stringify(out) + '\n');
