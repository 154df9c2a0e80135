// Takes the README's screenshots of the page with headless Chromium: the example loaded
// (light and dark), and a case drill-down. Usage: node scripts/screenshots.mjs (after
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
    await row.scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, -120));
    await page.screenshot({ path: path.join(ROOT, "docs/page-drilldown.png") });
  }
  await page.close();
}
await browser.close();
server.close();
console.log("wrote docs/page-light.png, docs/page-dark.png, docs/page-drilldown.png");
