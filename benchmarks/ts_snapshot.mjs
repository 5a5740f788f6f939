// Times TypeScript Stagehand's page.snapshot() (no model call) for benchmarks/snapshot_bench.py.
//
//   node ts_snapshot.mjs --stagehand-dir DIR --url URL --executable PATH --chromium-args JSON
//                        [--runs N] [--cookies FILE]
//
// (snapshot_bench.py passes /usr/bin/chromium and the flags in tests/_browser.py; Stagehand's
// LOCAL mode needs at least --no-sandbox and headless here.)
// DIR is the scratch folder where @browserbasehq/stagehand@3.7.3 is installed (.bench/ts-stagehand).
// Prints one line `RESULT {"first_ms":…, "ms":[…], "chars":…, "url":…}` on stdout; everything else
// Stagehand may print is noise to the caller.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { performance } from "node:perf_hooks";

function parseArgs(argv) {
  const args = { runs: 5 };
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "").replace(/-(.)/g, (_, c) => c.toUpperCase());
    args[key] = argv[i + 1];
  }
  args.runs = Number(args.runs);
  for (const key of ["url", "stagehandDir", "executable", "chromiumArgs"]) {
    if (!args[key]) throw new Error(`missing --${key.replace(/[A-Z]/g, (c) => "-" + c.toLowerCase())}`);
  }
  return args;
}

const args = parseArgs(process.argv.slice(2));
// The package lives outside the repo, so import it by path rather than by name.
const entry = join(args.stagehandDir, "node_modules/@browserbasehq/stagehand/dist/esm/index.js");
const { Stagehand } = await import(pathToFileURL(entry).href);

const stagehand = new Stagehand({
  env: "LOCAL",
  verbose: 0,
  disablePino: true,
  logger: () => {},
  // The caller passes its own Chromium and flags, so every engine runs the same browser.
  localBrowserLaunchOptions: {
    executablePath: args.executable,
    headless: true,
    args: JSON.parse(args.chromiumArgs),
  },
});

let code = 0;
try {
  await stagehand.init();
  if (args.cookies) {
    await stagehand.context.addCookies(JSON.parse(readFileSync(args.cookies, "utf8")));
  }
  const page = stagehand.context.pages()[0];
  await page.goto(args.url, { waitUntil: "load", timeoutMs: 120000 });
  const times = [];
  let chars = 0;
  for (let i = 0; i <= args.runs; i++) {
    const t0 = performance.now();
    const snap = await page.snapshot();
    times.push(performance.now() - t0);
    chars = snap.formattedTree.length;
  }
  const [first, ...warm] = times;
  const url = page.url();  // lets the caller see a redirect (e.g. to a login page)
  process.stdout.write(`RESULT ${JSON.stringify({ first_ms: first, ms: warm, chars, url })}\n`);
} catch (err) {
  process.stderr.write(`ts_snapshot: ${err && err.stack ? err.stack : err}\n`);
  code = 1;
} finally {
  await stagehand.close().catch(() => {});
}
process.exit(code);
