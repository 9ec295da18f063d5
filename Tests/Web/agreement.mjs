// Replays the histories BrowserClientAgreementTests wrote (the Swift client's
// steps and the view after each) through web/rewind.js, and the random
// transform pairs through its `transform`; any difference is printed and the
// exit status is 1.
//   node Tests/Web/agreement.mjs FILE
import { readFileSync } from "node:fs";
import { Doc, LocalDocument, transform } from "../../web/rewind.js";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
let failures = 0, steps = 0;
const fail = (what) => { if (++failures <= 10) console.log("DIFFERS: " + what); };

for (const h of input.histories) {
  const locals = [0, 1, 2].map(() => new LocalDocument());
  for (const s of h.steps) {
    const d = locals[s.t];
    if (s.a === "edit") d.edit(s.ops, s.segment);
    else if (s.a === "send") d.nextSubmit(s.tx);
    else if (s.a === "deliver") d.apply({ version: s.event.version, ops: s.event.ops, tx: s.event.tx, own: s.event.own });
    const view = d.view.get("t") ? d.view.text("t") : "<none>";
    steps++;
    if (view !== s.view || d.version !== s.version) {
      fail(`seed ${h.seed}, step ${steps}, terminal ${s.t} after ${s.a}: rewind.js shows ${JSON.stringify(view)} v${d.version}, Swift ${JSON.stringify(s.view)} v${s.version}`);
      break;
    }
  }
  for (const [i, d] of locals.entries()) if (d.view.text("t") !== h.final) fail(`seed ${h.seed}: terminal ${i} ends with ${JSON.stringify(d.view.text("t"))}, the server with ${JSON.stringify(h.final)}`);
}

let pairs = 0;
for (const c of input.transforms) {
  const [a2, b2] = transform(c.a, c.b);
  pairs++;
  const norm = (ops) => JSON.stringify(ops.map((o) => o.op === "insert" ? { op: o.op, node: o.node, pos: o.pos, text: o.text } : { op: o.op, node: o.node, pos: o.pos, len: o.len }));
  if (norm(a2) !== norm(c.a2) || norm(b2) !== norm(c.b2)) fail(`transform ${JSON.stringify(c.a)} × ${JSON.stringify(c.b)}: ${norm(a2)} / ${norm(b2)}, Swift ${norm(c.a2)} / ${norm(c.b2)}`);
}

if (failures) { console.log(`${failures} differences (${steps} steps, ${pairs} transform pairs)`); process.exit(1); }
console.log(`agree: ${input.histories.length} histories (${steps} steps, every view equal) and ${pairs} transform pairs`);
void Doc;
