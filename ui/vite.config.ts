/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// `npm run dev` serves the UI with hot reload and sends /api to a running master
// (PEDL_MASTER, default http://127.0.0.1:8080); `npm run build` writes the app the master
// serves at / into pedl/master/ui_dist/.
const master = process.env.PEDL_MASTER ?? "http://127.0.0.1:8080";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../pedl/master/ui_dist",
    emptyOutDir: true,
    target: "es2022",
  },
  // The charts' worker (src/components/chart.worker.ts) is a module worker, bundled on its own.
  worker: { format: "es" },
  server: {
    proxy: { "/api": { target: master, changeOrigin: true } },
  },
  test: {
    // An upper bound for a test's own work, not a goal: a busy machine (CI's two cores
    // shared with other jobs) runs the property tests several times slower than an idle one.
    testTimeout: 60_000,
  },
});
