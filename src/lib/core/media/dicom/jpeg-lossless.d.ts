// jpeg-lossless-decoder-js ships no type declarations: the part Loupe uses.
declare module 'jpeg-lossless-decoder-js' {
  /** JPEG lossless (process 14) decoder. */
  export class Decoder {
    xDim: number;
    yDim: number;
    numComp: number;
    decode(
      buffer?: ArrayBuffer,
      offset?: number,
      length?: number,
      numBytes?: number,
    ): Uint8Array | Uint16Array;
  }
}
