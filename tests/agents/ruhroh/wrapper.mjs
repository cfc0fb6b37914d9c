// A Ruhroh command wrapper in Node (run by extension, not executable): progress
// on standard output, then the final JSON line from JSON.stringify, which leaves
// U+2028, U+2029 and U+0085 in a string as they are (they end no JSON line).
const message = process.env.RUHROH_MESSAGE;
process.stdout.write("working 10%\r100%\n");
const output = `done: ${message}\u2028second\u2029third\u0085fourth`;
console.log(JSON.stringify({ status: "goal_satisfied", output }));
