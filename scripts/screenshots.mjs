// Takes the README's screenshots of the page with headless Chromium: the example loaded
// (light and dark), a case drill-down and its two answers. Usage: node scripts/screenshots.mjs (after
// scripts/build-wasm.sh); writes docs/*.png.
import { chromium } from "../tests/e2e/node_modules/playwright-core/index.mjs";
import { serve } from "./serve.mjs";
import { CHROMIUM_ARGS, ROOT } from "../tests/e2e/harness.mjs";
import path from "node:path";

const server = await serve(0);
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: CHROMIUM_ARGS });
for (const scheme of ["light", "dark"]) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 }, colorScheme: scheme });
  await page.goto(`${base}/www/index.html`);
  await page.click('[data-testid="load-example"]');
  await page.locator('[data-testid="decision"]').waitFor();
  await page.screenshot({ path: path.join(ROOT, `docs/page-${scheme}.png`) });
  if (scheme === "light") {
    await page.click('button[data-filter="regressed"]');
    const row = page.locator('[data-testid="case-row"]').first();
    await row.click();
    await page.waitForFunction(() => {
      const box = document.querySelector('[data-testid="case-answers"]');
      return box && !box.hasAttribute("aria-busy");
    });
    await row.evaluate((el) => el.scrollIntoView({ block: "start" }));
    await page.evaluate(() => window.scrollBy(0, -100));
    await page.screenshot({ path: path.join(ROOT, "docs/page-drilldown.png") });
    // The two answers side by side, what changed marked.
    await page.locator('[data-testid="case-answers"]').screenshot({ path: path.join(ROOT, "docs/page-answers.png") });
  }
  await page.close();
}
await browser.close();
server.close();
console.log("wrote docs/page-light.png, docs/page-dark.png, docs/page-drilldown.png, docs/page-answers.png");
