// A hook script (run by extension with node) that speaks the hook contract but
// puts its answer under "reply", not "output", with token usage named its own way.
import fs from "node:fs";

const phase = process.argv[2];
if (phase === "execute") {
  const goal = fs.readFileSync(0, "utf8").trim();
  console.log(JSON.stringify({ reply: `mjs reply to: ${goal}`, usage: { input_tokens: 3, output_tokens: 5 } }));
}
