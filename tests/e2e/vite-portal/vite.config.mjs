// Builds the portal with Vite (tests/e2e/vite-portal.test.mjs). WITH_EXAMPLE=1 makes
// "virtual:example" the package's opt-in example ("deploy-gate/viewer/example"); otherwise it is
// an empty module, so the build shows what a portal that does not ask for the example ships.
import { defineConfig } from "vite";

const withExample = process.env.WITH_EXAMPLE === "1";

export default defineConfig({
  logLevel: "warn",
  base: "./",
  build: { outDir: withExample ? "dist-example" : "dist", emptyOutDir: true, assetsInlineLimit: 0, minify: false },
  worker: { format: "es" },
  plugins: [
    {
      name: "example-switch",
      resolveId(id) {
        if (id === "virtual:example") return withExample ? this.resolve("deploy-gate/viewer/example") : "\0no-example";
        return null;
      },
      load(id) {
        return id === "\0no-example" ? "export {};" : null;
      },
    },
  ],
});
