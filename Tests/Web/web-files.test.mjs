// web/ as the server serves it: GET / (index.html) and GET /<name>.js|css for
// files directly in the folder, names [a-z0-9-] not starting with "-"; each
// module small enough to read (250 lines at most), and every import one of them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";

const dir = new URL("../../web/", import.meta.url);
const files = readdirSync(dir);

test("every file is one the server serves, and every module is at most 250 lines", () => {
  for (const f of files) {
    assert.match(f, /^(index\.html|[a-z0-9][a-z0-9-]*\.(js|css))$/, f);
    if (f.endsWith(".js")) {
      const lines = readFileSync(new URL(f, dir), "utf8").split("\n").length - 1;
      assert.ok(lines <= 250, `${f}: ${lines} lines`);
    }
  }
});

test("imports are of modules beside them; index.html loads the editor's entry and preloads rewind.js", () => {
  for (const f of files.filter((f) => f.endsWith(".js"))) {
    for (const [, path] of readFileSync(new URL(f, dir), "utf8").matchAll(/^(?:import|export) .* from "([^"]+)";$/gm)) {
      assert.match(path, /^\.\/[a-z0-9-]+\.js$/, `${f} imports ${path}`);
      assert.ok(existsSync(new URL(path, dir)), `${f} imports ${path}`);
    }
  }
  const html = readFileSync(new URL("index.html", dir), "utf8");
  assert.match(html, /<script type="module" src="\/editor\.js"><\/script>/);
  assert.match(html, /<link rel="modulepreload" href="\/rewind\.js">/);
  assert.doesNotMatch(html, /<script type="module">/, "no inline script");
});

test("the offline worker precaches the page and every module (and nothing else)", () => {
  const source = readFileSync(new URL("offline-worker.js", dir), "utf8");
  const list = JSON.parse(source.match(/const PRECACHE = (\[[\s\S]*?\]);/)[1].replace(/,\s*\]/, "]"));
  const modules = files.filter((f) => f.endsWith(".js") && f !== "offline-worker.js").map((f) => "/" + f);
  assert.deepEqual([...list].sort(), ["/", ...modules].sort());
});
