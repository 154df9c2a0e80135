// Reads a Blob (a File or a slice of one) as a sequence of chunks without leaving garbage: a
// BYOB reader fills one reused 1 MiB buffer, so reading gigabytes does not pile up gigabytes of
// dead ArrayBuffers waiting for the garbage collector. Each chunk is only valid until the next
// one is asked for (callers copy it into the wasm core at once). Falls back to the default
// reader where BYOB is not available.
const SIZE = 1 << 20;

export async function* chunks(blob, cancelled = () => false) {
  let reader;
  try {
    reader = blob.stream().getReader({ mode: "byob" });
  } catch {
    reader = null;
  }
  if (!reader) {
    const plain = blob.stream().getReader();
    try {
      for (;;) {
        if (cancelled()) return;
        const { done, value } = await plain.read();
        if (done) return;
        yield value;
      }
    } finally {
      plain.cancel().catch(() => {});
    }
  }
  let buffer = new ArrayBuffer(SIZE);
  try {
    for (;;) {
      if (cancelled()) return;
      const { done, value } = await reader.read(new Uint8Array(buffer));
      if (done) return;
      yield value;
      buffer = value.buffer;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}
