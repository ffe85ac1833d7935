// read.mjs opens a DuckDB file read-only with one @duckdb/node-api client,
// with extension autoloading and autoinstalling off (no spatial extension),
// and prints as JSON what that client sees: its DuckDB version, the
// extensions loaded, every table's columns (type and comment), each
// table's row count, the _ploti registry and log counts, and the first
// rows of every geometry column, and what the history's view and macros
// answer (a column whose comment names its
// encoding): the bytes in hex and, when they are standard WKB, the
// geometry decoded here as WKT.
//
//   node read.mjs CLIENTS MODULE FILE
//
// CLIENTS is the folder the clients are installed in (npm ci with
// package.json and package-lock.json: its node_modules holds them), MODULE
// the package name of the client (an alias in package.json).
import { createRequire } from 'node:module';
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

async function rows(sql) {
  const r = await con.runAndReadAll(sql);
  const names = r.columnNames();
  return r.getRows().map((row) => Object.fromEntries(row.map((v, i) => [names[i], plain(v)])));
}

// plain turns a client's value into JSON: BigInt as a number or string,
// BLOB values as bytes.
function plain(v) {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : String(v);
  if (v && v.bytes instanceof Uint8Array) return { hex: Buffer.from(v.bytes).toString('hex') };
  if (v === null || typeof v !== 'object') return v;
  return String(v);
}

const out = {};
out.version = (await rows('SELECT version() AS v'))[0].v;
out.extensionsLoaded = (await rows('SELECT extension_name FROM duckdb_extensions() WHERE loaded ORDER BY 1')).map((r) => r.extension_name);
out.columns = await rows(`SELECT schema_name AS "schema", table_name AS "table", column_name AS "column", data_type AS "type", comment
  FROM duckdb_columns() c WHERE database_name = current_database() AND schema_name IN ('main', '_ploti', '_ploti_history')
    AND EXISTS (SELECT 1 FROM duckdb_tables() t WHERE t.database_name = c.database_name AND t.schema_name = c.schema_name AND t.table_name = c.table_name)
  ORDER BY schema_name, table_name, column_index`);
out.counts = {};
for (const t of await rows(`SELECT schema_name AS s, table_name AS t FROM duckdb_tables() WHERE database_name = current_database() ORDER BY 1, 2`)) {
  out.counts[`${t.s}.${t.t}`] = (await rows(`SELECT count(*) AS n FROM "${t.s}"."${t.t}"`))[0].n;
}
// The change log is a view over two tables (migration 9): its rows, and
// those the view reads as changed, counted as the tables are.
out.counts['_ploti.changes'] = (await rows(`SELECT count(*) AS n FROM _ploti.changes`))[0].n;
out.counts['_ploti.changes changed'] = (await rows(`SELECT count(*) AS n FROM _ploti.changes WHERE change = 'changed'`))[0].n;
// The history's view and macros (issue 16), kept in the file as SQL: each
// recorded version's rows as of it, the view's rows, and one record's story.
out.history = {};
for (const h of await rows(`SELECT DISTINCT d.table_name AS t, v.version AS v FROM _ploti.history_versions v JOIN _ploti.datasets d USING (dataset_id) ORDER BY 1, 2`)) {
  out.history[`${h.t}_as_of(${h.v})`] = (await rows(`SELECT count(*) AS n FROM history."${h.t}_as_of"(${h.v})`))[0].n;
  out.history[h.t] = (await rows(`SELECT count(*) AS n FROM history."${h.t}" WHERE _ploti_valid_to IS NOT NULL`))[0].n;
  out.history[`${h.t}_story`] = (await rows(`SELECT count(*) AS n FROM history."${h.t}_story"((SELECT min(_ploti_record_id) FROM _ploti_history."${h.t}"))`))[0].n;
}
out.datasets = await rows(`SELECT dataset_id, table_name, version, schema_version, status, row_count FROM _ploti.datasets ORDER BY 1`);
out.geometry = {};
for (const c of out.columns) {
  if (c.schema !== 'main' || !c.comment || !/encoding=/.test(c.comment)) continue;
  const vals = await rows(`SELECT _ploti_record_id AS id, "${c.column}" AS g FROM main."${c.table}" WHERE "${c.column}" IS NOT NULL ORDER BY 1 LIMIT 3`);
  out.geometry[`${c.table}.${c.column}`] = vals.map((v) => {
    const hex = v.g && v.g.hex;
    let wkt = null;
    try { wkt = hex ? wktOf(Buffer.from(hex, 'hex')) : null; } catch (e) { wkt = null; }
    return { id: v.id, hex: hex || null, wkt };
  });
}
console.log(JSON.stringify(out));

// wktOf decodes standard (ISO or EWKB-flagged) WKB into WKT, or throws
// when the bytes are not WKB.
function wktOf(buf) {
  let off = 0;
  const names = { 1: 'POINT', 2: 'LINESTRING', 3: 'POLYGON', 4: 'MULTIPOINT', 5: 'MULTILINESTRING', 6: 'MULTIPOLYGON', 7: 'GEOMETRYCOLLECTION' };
  function geom() {
    const le = buf.readUInt8(off) === 1;
    if (buf.readUInt8(off) > 1) throw new Error('not WKB: byte order ' + buf.readUInt8(off));
    off += 1;
    const u32 = () => { const v = le ? buf.readUInt32LE(off) : buf.readUInt32BE(off); off += 4; return v; };
    const f64 = () => { const v = le ? buf.readDoubleLE(off) : buf.readDoubleBE(off); off += 8; return v; };
    let type = u32();
    let dims = 2;
    if (type & 0x80000000) { dims++; type &= 0xffff; }
    if (type > 1000) { dims += Math.floor(type / 1000) === 3 ? 2 : 1; type %= 1000; }
    const name = names[type];
    if (!name) throw new Error('not WKB: type ' + type);
    const pos = () => Array.from({ length: dims }, f64).join(' ');
    const list = (n, f) => Array.from({ length: n }, f).join(', ');
    const tag = dims === 3 ? ' Z' : dims === 4 ? ' ZM' : '';
    let body;
    switch (type) {
      case 1: body = pos(); if (body.split(' ').every((x) => x === 'NaN')) return name + tag + ' EMPTY'; body = '(' + body + ')'; break;
      case 2: { const n = u32(); body = n ? '(' + list(n, pos) + ')' : 'EMPTY'; break; }
      case 3: { const n = u32(); body = n ? '(' + list(n, () => '(' + list(u32(), pos) + ')') + ')' : 'EMPTY'; break; }
      default: { const n = u32(); body = n ? '(' + list(n, () => strip(geom(), type)) + ')' : 'EMPTY'; }
    }
    return name + tag + ' ' + body;
  }
  // strip drops a member's type name inside a MULTI geometry, as WKT has it.
  function strip(wkt, type) { return type === 7 ? wkt : wkt.replace(/^[A-Z]+( Z| ZM)? /, ''); }
  const wkt = geom();
  if (off !== buf.length) throw new Error('not WKB: ' + (buf.length - off) + ' bytes left');
  return wkt;
}
