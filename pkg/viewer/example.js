// The bundled example, opt-in: importing this module (deploy-gate/viewer/example) gives every
// <deploy-gate-viewer> on the page its "Load example" button. The viewer itself names no example
// file, so a portal that bundles only the viewer ships none of the example's data.
import { DeployGateViewer } from "./deploy-gate-viewer.js";
import { exampleFiles } from "./example-files.js";

DeployGateViewer.provideExample(exampleFiles);

export { exampleFiles };
