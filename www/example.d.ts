// Types of the opt-in example (import "deploy-gate/viewer/example"): importing the module gives
// every <deploy-gate-viewer> on the page its "Load example" button.

import type { DeployGateFileEntry } from "./deploy-gate-viewer.js";

/** The bundled example as the viewer's file entries. */
export declare function exampleFiles(): Promise<DeployGateFileEntry[]>;
