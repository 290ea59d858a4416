import { defineConfig } from "vite";
import { stubApi } from "./dev/stub-api";

const master = process.env.PEDL_MASTER ?? "http://127.0.0.1:8080";

export default defineConfig({
  base: "./",
  build: {
    outDir: "../pedl/master/ui_dist",
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 200,
  },
  server: {
    proxy: { "/api": { target: master, changeOrigin: true } },
  },
  // Dev only: answers the endpoints of ui/API.md that the master does not serve yet.
  plugins: [stubApi(master)],
});
