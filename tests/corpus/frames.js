// Frames drawn from Node, counting its own frames: the truth `flushlab wrap` is checked against
// (tests/corpus.rs). process.stdout.write per cell (a write(2) each on a terminal), 30 fps.
//
// FRAMES_FILE receives "FRAMES SECONDS" at the end (SIGTERM, SIGHUP, or FRAMES frames drawn).
const fs = require("fs");

const cols = process.stdout.columns || 80;
const rows = process.stdout.rows || 24;
const limit = Number(process.env.FRAMES || -1);
let frames = 0;
let first = null;
let lastEnd = process.hrtime.bigint();

function finish() {
  if (process.env.FRAMES_FILE) {
    const seconds = first === null ? 0 : Number(lastEnd - first) / 1e9;
    fs.writeFileSync(process.env.FRAMES_FILE, `${frames} ${seconds}\n`);
  }
  process.exit(0);
}
process.on("SIGTERM", finish);
process.on("SIGHUP", finish);

function frame() {
  if (limit >= 0 && frames >= limit) return finish();
  if (first === null) first = process.hrtime.bigint();
  const n = frames;
  process.stdout.write("\x1b[H");
  for (let r = 0; r < rows; r++) {
    if (r) process.stdout.write(`\x1b[${r + 1};1H`);
    for (let c = 0; c < cols; c++) process.stdout.write(`\x1b[48;5;${((c + r + n) % 216) + 16}m `);
  }
  process.stdout.write("\x1b[0m");
  frames += 1;
  lastEnd = process.hrtime.bigint();
  const due = Number(first) / 1e6 + (frames * 1000) / 30;
  setTimeout(frame, Math.max(0, due - Number(process.hrtime.bigint()) / 1e6));
}
frame();
