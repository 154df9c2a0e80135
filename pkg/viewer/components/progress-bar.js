// <dg-progress>: bytes read, MB/s, time left, and a cancel button (emits `dg-cancel`).
import { h, bytes } from "../dom.js";

export class ProgressBar extends HTMLElement {
  connectedCallback() {
    if (this.bar) return;
    this.bar = h("progress", { max: 1, value: 0, "aria-label": "Reading files" });
    this.label = h("span", { class: "dg-muted", "data-testid": "progress-text", "aria-live": "polite" });
    this.cancelButton = h("button", { type: "button", class: "dg-button dg-secondary", "data-testid": "cancel", onclick: () => this.dispatchEvent(new CustomEvent("dg-cancel", { bubbles: true })) }, "Cancel");
    this.append(this.bar, this.label, this.cancelButton);
    this.hidden = true;
  }

  start(what) {
    this.started = performance.now();
    this.what = what;
    this.hidden = false;
    this.bar.removeAttribute("value");
    this.label.textContent = `${what}…`;
  }

  update({ phase, loaded, total }) {
    if (phase === "ranges") {
      this.bar.max = Math.max(1, total);
      this.bar.value = loaded;
      this.label.textContent = `Building the test set: ${bytes(loaded)} of ${bytes(total)} read again`;
      return;
    }
    const seconds = (performance.now() - this.started) / 1000;
    const rate = seconds > 0 ? loaded / seconds : 0;
    const left = rate > 0 ? (total - loaded) / rate : 0;
    this.bar.max = Math.max(1, total);
    this.bar.value = loaded;
    this.dataset.loaded = String(loaded);
    this.label.textContent = `${this.what}: ${bytes(loaded)} of ${bytes(total)} · ${(rate / 1e6).toFixed(0)} MB/s · ${left < 1 ? "<1" : Math.ceil(left)} s left`;
  }

  done() {
    this.hidden = true;
  }
}
