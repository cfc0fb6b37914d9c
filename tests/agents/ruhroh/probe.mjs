// A Ruhroh command wrapper in Node (run by its extension): it records its
// environment in $PROBE_DIR (when set), as wrapper.sh does, and answers by
// WRAPPER_PLAN (comma-separated statuses by iteration, the last one repeats)
// in the result file (RUHROH_RESULT_PATH), then a final JSON line.
import fs from "node:fs";

const env = process.env;
if (env.PROBE_DIR) {
  const base = `${env.PROBE_DIR}/${process.hrtime.bigint()}-${process.pid}`;
  if (fs.existsSync(env.RUHROH_RESULT_PATH)) fs.writeFileSync(`${base}.result-existed`, "existed");
  fs.writeFileSync(`${base}.cwd`, process.cwd() + "\n");
  fs.writeFileSync(`${base}.env`, Object.entries(env).map(([k, v]) => `${k}=${v}\0`).join(""));
}
const plan = (env.WRAPPER_PLAN || "goal_satisfied").split(",");
const status = plan[Math.min(Number(env.RUHROH_ITERATION), plan.length) - 1];
const count = `${env.RUHROH_WORKSPACE}/count`; // the conversation's memory, in its workspace
const seen = (fs.existsSync(count) ? Number(fs.readFileSync(count, "utf8")) : 0) + 1;
fs.writeFileSync(count, String(seen));
fs.writeFileSync(
  env.RUHROH_RESULT_PATH,
  JSON.stringify({ version: "ruhroh_run_agent_result_v1", status, runId: `node-${seen}` }),
);
console.log(JSON.stringify({ status, output: `node reply (${seen} messages)` }));
