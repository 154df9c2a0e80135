// The portal's code: the viewer, and the bundled example only when the build asks for it
// (vite.config.mjs resolves "virtual:example" to the example's module or to nothing).
import "deploy-gate/viewer";
import "deploy-gate/viewer.css";
import "virtual:example";
