// JavaScript's eventsource-parser on the sse_sansio benchmark workloads.
//
// Run by benchmarks/node_compare.py (and `benchmarks/run.py --node`), which writes the
// workloads' bytes and a cells.json into a directory:
//   node bench.mjs DIR ROUNDS MIN_SAMPLE
// cells.json is a list of {workload, chunk, file, events, units}: the stream file, the
// chunk size (0 = the whole stream), and what a right parse yields (events, and the
// UTF-16 length of their data plus that of their type when not "message").
//
// Each cell is parsed as a browser or node client does it: bytes cut into chunks, each
// decoded by one streaming TextDecoder, the text fed to createParser({onEvent}).feed().
// Comments are not asked for (no onComment), as eventsource-parser's users do.  First
// every cell is checked (a wrong count is reported, not timed) and run twice to warm the
// JIT; then ROUNDS rounds over all the cells, the order rotating every round, each
// sample repeated until it lasts MIN_SAMPLE seconds of CPU time (process.cpuUsage(),
// user + system, as Python's process_time()).  Output: one JSON line per cell with
// the seconds per run of every round, or the reason it was not timed.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';

const [dir, roundsArg, minArg] = process.argv.slice(2);
const rounds = Number(roundsArg);
const minSample = Number(minArg);
const spec = JSON.parse(readFileSync(join(dir, 'cells.json'), 'utf8'));

function cut(bytes, size) {
  if (size <= 0 || size >= bytes.length) return [bytes];
  const out = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.slice(i, i + size));
  return out;
}

function parse(chunks) {
  let events = 0;
  let units = 0;
  const decoder = new TextDecoder();
  const parser = createParser({
    onEvent(event) {
      events += 1;
      units += event.data.length + (event.event === undefined ? 0 : event.event.length);
    },
  });
  for (const chunk of chunks) parser.feed(decoder.decode(chunk, { stream: true }));
  parser.feed(decoder.decode());
  return [events, units];
}

function cpu() {
  const used = process.cpuUsage();
  return (used.user + used.system) / 1e6;
}

const files = new Map();
const cells = [];
for (const cell of spec) {
  if (!files.has(cell.file)) files.set(cell.file, new Uint8Array(readFileSync(join(dir, cell.file))));
  const chunks = cut(files.get(cell.file), cell.chunk);
  const start = cpu();
  const [events, units] = parse(chunks);
  const first = cpu() - start;
  if (events !== cell.events || units !== cell.units) {
    const why = `wrong output: ${events} events / ${units} units, expected ${cell.events} / ${cell.units}`;
    console.log(JSON.stringify({ workload: cell.workload, chunk: cell.chunk, error: why }));
    continue;
  }
  parse(chunks);
  const inner = Math.max(1, Math.min(1000, Math.round(minSample / Math.max(first, 1e-9))));
  cells.push({ cell, chunks, inner, times: [] });
}
for (let rep = 0; rep < rounds; rep++) {
  const shift = cells.length ? rep % cells.length : 0;
  for (const entry of [...cells.slice(shift), ...cells.slice(0, shift)]) {
    const start = cpu();
    for (let i = 0; i < entry.inner; i++) parse(entry.chunks);
    entry.times.push((cpu() - start) / entry.inner);
  }
}
for (const { cell, times } of cells) {
  console.log(JSON.stringify({ workload: cell.workload, chunk: cell.chunk, times }));
}
