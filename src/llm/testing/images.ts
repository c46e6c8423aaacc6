/**
 * Real, decodable image files for tests, built in code so no binary fixture is needed: a PNG of
 * any size in one colour (zlib-compressed scanlines, CRC-checked chunks) and an 8×8 baseline JPEG
 * in one grey (one block, DC only). Both open in image viewers and decoders (checked with
 * ImageMagick's `identify` when this file was written).
 */
import { deflateSync } from "node:zlib";

/** A `width`×`height` truecolour PNG filled with `rgb`. */
export function makePng(width: number, height: number, rgb: readonly [number, number, number]) {
  const row = Buffer.alloc(1 + width * 3);
  for (let x = 0; x < width; x += 1) row.set(rgb, 1 + x * 3);
  const raw = Buffer.concat(Array.from({ length: height }, () => row));
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // 8 bits, truecolour, deflate, no filter set, no interlace
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      pngChunk("IHDR", header),
      pngChunk("IDAT", deflateSync(raw)),
      pngChunk("IEND", Buffer.alloc(0)),
    ]),
  );
}

/**
 * A PNG of about `bytes` bytes: a valid image whose pixels are noise, so deflate cannot shrink
 * it (for size-limit tests).
 */
export function makeLargePng(bytes: number): Uint8Array {
  const width = 256;
  const height = Math.max(1, Math.ceil(bytes / (width * 3 + 1)));
  const raw = Buffer.alloc(height * (1 + width * 3));
  let seed = 12345;
  for (let i = 0; i < raw.length; i += 1) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    raw[i] = i % (1 + width * 3) === 0 ? 0 : seed >>> 24;
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8);
  return new Uint8Array(
    Buffer.concat([
      Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
      pngChunk("IHDR", header),
      pngChunk("IDAT", deflateSync(raw, { level: 0 })),
      pngChunk("IEND", Buffer.alloc(0)),
    ]),
  );
}

/**
 * An 8×8 greyscale baseline JPEG. Each Huffman table holds one symbol with the 1-bit code `0`:
 * DC difference category 0 (grey 128) and AC end-of-block, so the scan is the bits `00`, padded
 * with ones.
 */
export function makeJpeg(): Uint8Array {
  const segment = (marker: number, body: readonly number[]) => [
    0xff,
    marker,
    (body.length + 2) >> 8,
    (body.length + 2) & 0xff,
    ...body,
  ];
  const oneSymbolTable = (tableClass: number) => [
    (tableClass << 4) | 0,
    1,
    ...Array.from({ length: 15 }, () => 0),
    0x00,
  ];
  return new Uint8Array([
    0xff,
    0xd8, // SOI
    ...segment(0xe0, [0x4a, 0x46, 0x49, 0x46, 0x00, 1, 1, 0, 0, 1, 0, 1, 0, 0]), // JFIF
    ...segment(0xdb, [0x00, ...Array.from({ length: 64 }, () => 1)]), // quantisation table 0
    ...segment(0xc0, [8, 0, 8, 0, 8, 1, 1, 0x11, 0]), // SOF0: 8 bits, 8×8, one component
    ...segment(0xc4, oneSymbolTable(0)), // DC table 0
    ...segment(0xc4, oneSymbolTable(1)), // AC table 0
    ...segment(0xda, [1, 1, 0x00, 0, 63, 0]), // SOS
    0x3f, // scan: DC "0", EOB "0", six padding ones
    0xff,
    0xd9, // EOI
  ]);
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length, 0);
  const typeAndData = Buffer.concat([Buffer.from(type, "latin1"), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData), 0);
  return Buffer.concat([length, typeAndData, crc]);
}

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k += 1) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = (CRC_TABLE[(crc ^ byte) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
