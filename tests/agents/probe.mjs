// A probe agent (run by extension with node, deliberately not executable).
import fs from "node:fs";
import path from "node:path";

const phase = process.argv[2];
const dir = process.env.PROBE_DIR;
const stamp = BigInt(Date.now()) * 1000000n + (process.hrtime.bigint() % 1000000n);
const base = path.join(dir, `${stamp}-${process.pid}-${phase}`);
fs.writeFileSync(base + ".argc", `${process.argv.length - 2}\n`);
fs.writeFileSync(base + ".cwd", `${process.cwd()}\n`);
fs.writeFileSync(base + ".env", Object.entries(process.env).map(([k, v]) => `${k}=${v}\0`).join(""));
const data = fs.readFileSync(0);
fs.writeFileSync(base + ".stdin", data);
const turn = process.env.ROOK_TURN ?? "";
if (phase === "open") console.log(JSON.stringify({ conversation: "conv-open" }));
else if (phase === "execute")
  console.log(JSON.stringify({ output: `ok turn ${turn}`, conversation: `conv-${turn}`, calls: [],
    usage: { input: 1, output: 2 }, trace_id: `t-${turn}` }));
else if (phase === "collect") console.log(JSON.stringify({ trace_url: "file:///trace" }));
