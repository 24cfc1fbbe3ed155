// Reading what a wasm codec said when it failed. The cornerstonejs codecs are C++ compiled by
// emscripten without exception support in JS: a thrown std::exception reaches JS as a bare number (a
// pointer into the wasm heap), and OpenJPEG's messages go to the module's print/printErr. This module
// turns both back into text: the exception's what() and the codec's own [ERROR]/[WARNING] lines.

/** The parts of an emscripten module that let a thrown C++ exception be read. */
export interface WasmHeap {
  HEAPU8: Uint8Array;
  HEAPU32: Uint32Array;
  /** An embind helper some builds export (CharLS): what() of an exception pointer. */
  getExceptionMessage?: (ptr: number) => unknown;
}

/** A NUL-terminated string in the heap, or undefined when it is not short readable text. */
function cString(heap: Uint8Array, ptr: number, max = 2000): string | undefined {
  if (!Number.isInteger(ptr) || ptr <= 0 || ptr >= heap.length) return undefined;
  let end = ptr;
  while (end < heap.length && end - ptr < max && heap[end] !== 0) end++;
  if (end === ptr || heap[end] !== 0) return undefined;
  const text = new TextDecoder('utf-8', { fatal: false }).decode(heap.subarray(ptr, end));
  // Printable text only: anything else means the pointer was not what we took it for.
  return /^[\t\x20-\x7e\u00a0-\uffff]+$/.test(text) && !text.includes('\ufffd') ? text : undefined;
}

/**
 * what() of a C++ exception thrown out of an emscripten module, or undefined when `thrown` is not one
 * (or cannot be read). Uses the module's getExceptionMessage when it has one; otherwise reads the libc++
 * layout of std::runtime_error / std::logic_error and their subclasses (wasm32: a vtable pointer, then
 * a pointer to the message characters) after checking the thrown type's mangled name (St…_error, or a
 * class whose name ends in "error"/"exception"), and a thrown `const char*`.
 */
export function cxxExceptionMessage(m: WasmHeap, thrown: unknown): string | undefined {
  if (typeof thrown !== 'number' || !Number.isInteger(thrown) || thrown <= 24) return undefined;
  if (m.getExceptionMessage) {
    try {
      const r = m.getExceptionMessage(thrown);
      const text = Array.isArray(r) ? r.filter((x) => typeof x === 'string').at(-1) : r;
      if (typeof text === 'string' && text) return text;
    } catch {
      // fall through to the heap layout
    }
  }
  const u32 = m.HEAPU32;
  const at = (p: number): number | undefined =>
    p >= 0 && p + 4 <= m.HEAPU8.length ? u32[p >> 2] : undefined;
  // emscripten keeps a 24-byte header before the exception object; its second word is the std::type_info*.
  const typeInfo = at(thrown - 20);
  const typeName = typeInfo === undefined ? undefined : cString(m.HEAPU8, at(typeInfo + 4) ?? 0, 200);
  if (!typeName) return undefined;
  // `throw "text"` (libjpeg-turbo's wrapper): a const char* (mangled PKc) holding the message.
  const text =
    typeName === 'PKc' || typeName === 'Pc'
      ? cString(m.HEAPU8, at(thrown) ?? 0)
      : /(error|exception)E?$/i.test(typeName)
        ? cString(m.HEAPU8, at(thrown + 4) ?? 0)
        : undefined;
  return text?.replace(/^~+/, '').trim() || undefined;
}

/** Collects a codec's printed lines (emscripten print/printErr) so they reach an error, not stdout. */
export class CodecOutput {
  lines: string[] = [];
  /** Pass as the module factory's `print` and `printErr`. */
  readonly print = (text: unknown): void => {
    this.lines.push(String(text));
    if (this.lines.length > 50) this.lines.shift();
  };
  /** Forgets what was printed before the next decode. */
  clear(): void {
    this.lines = [];
  }
  /** The codec's error and warning lines ("[ERROR] …", "[WARNING] …"), without their tags. */
  problems(): string[] {
    return this.lines
      .filter((l) => /^\s*\[(ERROR|WARNING)\]/i.test(l))
      .map((l) => l.replace(/^\s*\[(ERROR|WARNING)\]\s*/i, '').trim())
      .filter((l) => l.length > 0);
  }
}

/** What an emscripten module needs for {@link guardedCall}: its heap, and `ccall` (exported by all three). */
export interface GuardableModule extends WasmHeap {
  ccall?: (ident: string, returnType: string, argTypes: string[], args: unknown[]) => unknown;
}

/** How much of the wasm stack below the caller's frame {@link guardedCall} clears and reads back. */
const STACK_SCAN_BYTES = 64 * 1024;

/** NUL-terminated runs of printable ASCII with at least two words ("Unsupported marker type 0x50"). */
function textRuns(heap: Uint8Array, from: number, to: number): string[] {
  const out: string[] = [];
  let start = from;
  for (let i = from; i < to; i++) {
    const c = heap[i];
    if (c >= 0x20 && c < 0x7f) continue;
    if (c === 0 && i - start >= 8) {
      const s = new TextDecoder().decode(heap.subarray(start, i));
      if (/[A-Za-z]{2,} [A-Za-z]{2,}/.test(s) && !out.includes(s)) out.push(s);
    }
    start = i + 1;
  }
  return out;
}

/**
 * Calls `fn` (one embind call into the module) so that a C++ exception it throws cannot break the module.
 * emscripten unwinds such an exception through JS without restoring the wasm stack pointer: every failed
 * decode leaks stack, and after a few hundred (CharLS) or thousand (libjpeg-turbo) failures the module
 * corrupts its own memory ("memory access out of bounds"). Running `fn` inside the module's `ccall`
 * (through a JS function registered as a C function) restores the stack pointer when `fn` returns or
 * throws. With `readStack`, the unused stack below the call is cleared first and, after a failure, the
 * messages the codec formatted there are returned (libjpeg writes its error text into a stack buffer and
 * the cornerstonejs wrapper then throws only a fixed string).
 */
export function guardedCall(
  m: GuardableModule,
  fn: () => void,
  readStack = false,
): { thrown?: unknown; failed: boolean; stackText: string[] } {
  let failed = false;
  let thrown: unknown;
  let stackText: string[] = [];
  const body = (sp: number): number => {
    const from = Math.max(0, sp - STACK_SCAN_BYTES);
    if (readStack) m.HEAPU8.fill(0, from, sp);
    try {
      fn();
    } catch (e) {
      failed = true;
      thrown = e;
      if (readStack) stackText = textRuns(m.HEAPU8, from, sp);
    }
    return 0;
  };
  if (typeof m.ccall !== 'function') {
    body(0);
    return { thrown, failed, stackText };
  }
  const host = m as unknown as Record<string, unknown>;
  host._loupeGuardedCall = body;
  try {
    // An 'array' argument makes ccall save the stack pointer and pass the stack top (a 0-byte allocation).
    m.ccall('loupeGuardedCall', 'number', ['array'], [[]]);
  } finally {
    delete host._loupeGuardedCall;
  }
  return { thrown, failed, stackText };
}

/**
 * The message of a failed decode: "<codec>: <what the codec said>". `thrown` is whatever the module
 * threw; `said` the messages it printed or formatted during the call.
 */
export function codecFailure(codec: string, m: WasmHeap, thrown: unknown, said: string[]): string {
  const what =
    thrown instanceof Error
      ? thrown.message
      : (cxxExceptionMessage(m, thrown) ?? (typeof thrown === 'string' ? thrown : undefined));
  const all = [...new Set([...said, ...(what && !said.length ? [what] : [])])];
  if (all.length === 0) all.push('failed without saying why');
  return `${codec}: ${all.join('; ')}`;
}
