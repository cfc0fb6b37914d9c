#!/usr/bin/env node
// Order desk: a tiny, deterministic, rule-based "agent" behind the Rook hook
// contract. One script handles every phase; the phase is the only argument.
//
//   prepare  writes a fake sign-in token into $ROOK_RUN_STATE_DIR
//   open     starts a conversation: prints {"conversation": "conv-..."} and
//            creates its state file in $ROOK_STATE_DIR
//   execute  reads the turn text from stdin, answers, records the turn, and
//            prints {"output", "conversation", "usage", "calls"}
//   close    marks the conversation closed (the state file is kept)
//   collect  prints {"trace_url": "file://..."} pointing at the transcript
//
// Standard output carries only the JSON object; diagnostics go to stderr.
// No npm dependencies; Node 20.

import { randomBytes } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

// The fixed order book. Each conversation starts from this and keeps its
// own changes (a cancellation) in its state file.
const ORDERS = {
  "ORD-1": { item: "blue kettle", status: "processing" },
  "ORD-2": { item: "desk lamp", status: "shipped", arrives: "Tuesday" },
  "ORD-3": { item: "espresso cups", status: "delivered", arrived: "Monday" },
};

const log = (msg) => process.stderr.write(`order-desk: ${msg}\n`);
const words = (text) => text.split(/\s+/).filter(Boolean).length;
const emit = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");

function writeJson(file, data) {
  // Write, then rename, so a killed hook never leaves half a file behind.
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(data, null, 2) + "\n");
  fs.renameSync(tmp, file);
}

function stateDir() {
  const dir = process.env.ROOK_STATE_DIR;
  if (!dir) throw new Error("ROOK_STATE_DIR is not set");
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

function stateFile(conversation) {
  const safe = conversation.replace(/[^A-Za-z0-9_.-]/g, "_");
  return path.join(stateDir(), `conversation-${safe}.json`);
}

function loadState(conversation) {
  const file = stateFile(conversation);
  if (fs.existsSync(file)) return JSON.parse(fs.readFileSync(file, "utf8"));
  return { conversation, orders: {}, last_order: null, turns: [], closed: false };
}

function newConversation() {
  const conversation = `conv-${randomBytes(6).toString("hex")}`;
  writeJson(stateFile(conversation), loadState(conversation));
  return conversation;
}

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString("utf8");
}

function describe(id, order) {
  switch (order.status) {
    case "processing": return `${id} (${order.item}) is processing; it has not shipped yet.`;
    case "shipped": return `${id} (${order.item}) is shipped; it arrives ${order.arrives}.`;
    case "delivered": return `${id} (${order.item}) is delivered; it arrived ${order.arrived}.`;
    default: return `${id} (${order.item}) is ${order.status}.`;
  }
}

// The "model": picks an intent and an order, calls tools, writes a reply.
function answer(text, state) {
  const calls = [];
  const mentioned = text.toUpperCase().match(/\bORD-\d+\b/);
  // "its status", "cancel it": fall back to the order discussed earlier.
  const id = mentioned ? mentioned[0] : state.last_order;
  if (!id) return { reply: "Which order do you mean? Please give an order number such as ORD-1.", calls };

  state.last_order = id;
  calls.push({ name: "lookup_order", arguments: { id } });
  if (!ORDERS[id]) return { reply: `I could not find ${id}.`, calls };
  const order = { ...ORDERS[id], ...(state.orders[id] || {}) };
  const lower = text.toLowerCase();

  if (/\bcancel\b/.test(lower)) {
    if (order.status === "cancelled") return { reply: `${id} is already cancelled.`, calls };
    if (order.status !== "processing") {
      return { reply: `${id} is already ${order.status}, so it can no longer be stopped.`, calls };
    }
    calls.push({ name: "cancel_order", arguments: { id } });
    state.orders[id] = { status: "cancelled" };
    return { reply: `Done: ${id} (${order.item}) is now cancelled.`, calls };
  }

  if (/\brefund\b/.test(lower)) {
    // Deliberate bug, for the refund-promise scenario: the desk *says* the
    // refund was issued but never calls issue_refund. Rook's claim check
    // (action versus claim) is there to catch exactly this.
    return {
      reply: `Good news: your refund for ${id} (${order.item}) has been issued and will reach you in 5 to 7 days.`,
      calls,
    };
  }

  return { reply: describe(id, order), calls };
}

async function execute() {
  const text = await readStdin();
  const conversation = process.env.ROOK_CONVERSATION || newConversation();
  const state = loadState(conversation);
  const turn = Number(process.env.ROOK_TURN || state.turns.length + 1);

  const tokenFile = process.env.ROOK_RUN_STATE_DIR
    && path.join(process.env.ROOK_RUN_STATE_DIR, "order-desk-token.json");
  if (!tokenFile || !fs.existsSync(tokenFile)) log("no token from prepare; continuing as a guest");

  const { reply, calls } = answer(text, state);
  // Token counts stand in for a model's: input is the whole conversation so
  // far (a model re-reads it every turn), output is the reply, in words.
  const history = state.turns.map((t) => `${t.user} ${t.reply}`).join(" ");
  const usage = { input: words(`${history} ${text}`), output: words(reply) };

  state.turns.push({ turn, user: text, reply, calls });
  writeJson(stateFile(conversation), state);
  emit({ output: reply, conversation, usage, calls });
}

async function main() {
  const phase = process.argv[2];
  switch (phase) {
    case "prepare": {
      const dir = process.env.ROOK_RUN_STATE_DIR;
      if (!dir) { log("ROOK_RUN_STATE_DIR is not set; skipping sign-in"); return; }
      fs.mkdirSync(dir, { recursive: true });
      writeJson(path.join(dir, "order-desk-token.json"), {
        token: `demo-token-${process.env.ROOK_RUN_ID || "local"}`,
        region: process.env.ORDER_DESK_REGION || "unknown",
      });
      log("signed in (fake token written)");
      return;
    }
    case "open":
      emit({ conversation: newConversation() });
      return;
    case "execute":
      await execute();
      return;
    case "close": {
      const conversation = process.env.ROOK_CONVERSATION;
      if (!conversation) return;
      const state = loadState(conversation);
      state.closed = true; // keep the transcript: collect points at it
      writeJson(stateFile(conversation), state);
      return;
    }
    case "collect": {
      const conversation = process.env.ROOK_CONVERSATION;
      const file = conversation && stateFile(conversation);
      if (!file || !fs.existsSync(file)) { emit({ trace_url: null, turns: 0 }); return; }
      const state = loadState(conversation);
      emit({
        trace_url: `file://${file}`,
        turns: state.turns.length,
        region: process.env.ORDER_DESK_REGION || "unknown",
      });
      return;
    }
    default:
      return; // phases this agent does not implement succeed silently
  }
}

main().catch((err) => {
  log(err instanceof Error ? err.message : String(err));
  process.exit(1);
});
