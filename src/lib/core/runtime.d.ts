// The few runtime APIs core code relies on. They exist identically in Node >= 20, browser pages and
// workers; the core tsconfig has no DOM lib, so they are declared here and nothing else leaks in.

declare class TextDecoder {
  constructor(label?: string, options?: { fatal?: boolean; ignoreBOM?: boolean });
  decode(input?: ArrayBufferView | ArrayBuffer, options?: { stream?: boolean }): string;
}
declare class TextEncoder {
  encode(input?: string): Uint8Array;
  encodeInto(source: string, destination: Uint8Array): { read: number; written: number };
}
declare const crypto: {
  subtle: { digest(algorithm: 'SHA-256', data: ArrayBufferView | ArrayBuffer): Promise<ArrayBuffer> };
  getRandomValues<T extends ArrayBufferView>(array: T): T;
};
declare function setTimeout(handler: () => void, ms?: number): unknown;
declare function clearTimeout(id: unknown): void;
